/* swiglu_backward contract: the gradients of swiglu (ops/swiglu.h), the
 * gate of a Llama MLP, h = silu(g) * u with g | u side by side in gu:
 *     dgate = dh * u * silu'(g),   dup = dh * silu(g)
 *     silu(g) = g s,   silu'(g) = s (1 + g (1 - s)),   s = 1 / (1 + e^-g)
 * written side by side in dgu (R x 2C), as the forward reads gu.  Shapes
 * are written RxC (C is d_ff); any R, C >= 1.  Two dtypes, as the
 * variant's: f32, or every tensor in bf16 with fp32 arithmetic (a training
 * step's activations), each gradient rounded once.
 *
 * Tensors: gu (R x 2C) and dh (R x C) in; dgu (R x 2C) out, elementwise.
 * Bytes: gu and dgu (2 R C elements each) and dh (R C) once: 5 R C
 * elements.  FLOPs: counted as 8 per output pair.
 * Inputs: uniform in [-1, 1]; when R >= 2, row 0's gate is scaled by 16
 * (the forward's: silu' from about -0.1 to 1.1). */
#ifndef KBENCH_SWIGLU_BACKWARD_H
#define KBENCH_SWIGLU_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* f32 variants read the pointers as float, bf16 ones as bf16 bit patterns. */
typedef struct {
    int R, C;
    const void *gu, *dh;
    void *dgu;
} kb_swiglu_backward_args;

extern const kb_op kb_op_swiglu_backward;

enum { KB_SWB_GU, KB_SWB_DH, KB_SWB_DGU, KB_SWB_TENSORS };

/* Reference rows of dgu (2C each) in double, from gu and dh of dtype t. */
void swiglu_backward_reference(int64_t C, kb_dtype t, const void *gu, const void *dh, const int64_t *rows,
                               int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
