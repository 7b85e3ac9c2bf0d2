/* linear_cross_entropy contract: a language model's head and its loss in
 * one op, forward and backward, as a training step runs them:
 *     z   = h W^T                 logits, N x V (never required in memory)
 *     loss, dz                    cross_entropy's (ops/cross_entropy.h):
 *                                 label smoothing 0.1, ignore index -100,
 *                                 the mean over the rows not ignored
 *     dh  = dz W                  N x d
 *     dW  = dz^T h                V x d
 * for h (N x d, the last layer's normed activations) and W (V x d, the
 * head's weight as Llama stores it).  Shapes are written NxVxD (tokens,
 * vocabulary, model width); any N, V, D >= 1 up to 2^31 - 1 each.  bf16
 * storage of h, W, dh and dW with fp32 arithmetic; the loss is fp32.
 *
 * Tensors: h, W and targets (N, i32) in; loss (N rows of one value), dh
 * (N rows of D, each a sum over V) and dW (V rows of D, each a sum over N)
 * out.  lse (N, fp32), each row's log-sum-exp of z in double, is a derived
 * input that prepare makes for the check: the reference of a row of dW
 * needs every row's, and making them is the full N V D product, done once
 * (about 15 s at 8192x128256x2048 on 14 cores).  bind gives it to no
 * variant.  Bytes: h, W and targets read, loss, dh and dW written once,
 * the least a fused kernel moves.  FLOPs: the three products, 6 N V D.
 * A variant's workspace (the logits it keeps) is its own: kbench's
 * workspace_mib column reports what each one took.
 * Tolerance: bf16's, each output a reduction over its row as above; the
 * logits pass through bf16 storage in the variants, which the fill keeps
 * small: z has a spread of about 1/3.
 * Inputs: h uniform in [-1, 1], W uniform in [-1, 1] / sqrt(D), both then
 * rounded to bf16; targets spread over [0, V) with cross_entropy's ignored
 * rows (cross_entropy_ignored). */
#ifndef KBENCH_LINEAR_CROSS_ENTROPY_H
#define KBENCH_LINEAR_CROSS_ENTROPY_H

#include <stdint.h>
#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* h, W, dh and dW are bf16 bit patterns (__nv_bfloat16 on the device). */
typedef struct {
    int N, V, D;
    float inv_n; /* 1 / the rows not ignored */
    const void *h;
    const void *w;
    const int *targets;
    float *loss;
    void *dh;
    void *dw;
} kb_linear_cross_entropy_args;

extern const kb_op kb_op_linear_cross_entropy;

enum { KB_LCE_H, KB_LCE_W, KB_LCE_TARGETS, KB_LCE_LSE, KB_LCE_LOSS, KB_LCE_DH, KB_LCE_DW, KB_LCE_TENSORS };

/* Each row's log-sum-exp of z = h W^T in double, stored as fp32 in lse. */
void linear_cross_entropy_lse(int64_t N, int64_t V, int64_t D, const uint16_t *h, const uint16_t *w, float *lse);
/* Reference rows of output `which` (KB_LCE_LOSS, KB_LCE_DH or KB_LCE_DW)
 * in double, from h, W, the targets and lse. */
void linear_cross_entropy_reference(int64_t N, int64_t V, int64_t D, const uint16_t *h, const uint16_t *w,
                                    const int *targets, const float *lse, int which, const int64_t *rows,
                                    int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
