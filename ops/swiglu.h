/* swiglu contract: the gate of a Llama MLP,
 *     h[r, j] = silu(gu[r, j]) * gu[r, C + j],   silu(g) = g / (1 + e^-g)
 * over R rows (tokens) whose gate and up halves lie side by side, gu is
 * R x 2C (the output of the one product the models make of W_gate and
 * W_up stacked), h is R x C, row-major.  Shapes are written RxC (C is
 * d_ff); any R, C >= 1.  Two dtypes, as the variant's: f32, or gu and h
 * stored in bf16 with fp32 arithmetic, h rounded once.
 *
 * Bytes: gu read and h written once (3*R*C elements).  FLOPs: 4 per
 * output (exp, add, divide, multiply).
 * Tolerance: elementwise (a reduction of length 1); the fast exponential
 * (__expf, 2 ulp) is well inside fp32's bound.
 * Inputs: uniform in [-1, 1]; when R >= 2, row 0's gate is scaled by 16
 * (gates from -16 to 16: silu near 0 and near the identity). */
#ifndef KBENCH_SWIGLU_H
#define KBENCH_SWIGLU_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same pointers under the variant's dtype: f32 variants read gu, h;
 * bf16 variants gu16, h16, bf16 bit patterns (__nv_bfloat16 on the device). */
typedef struct {
    int R, C;
    union { const float *gu; const uint16_t *gu16; };  /* R x 2C: gate | up */
    union { float *h; uint16_t *h16; };                /* R x C */
} kb_swiglu_args;

extern const kb_op kb_op_swiglu;

#ifdef __cplusplus
}
#endif
#endif
