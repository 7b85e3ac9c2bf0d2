/* ffn contract: the transformer's position-wise feed-forward network,
 *     y = relu(x W1 + b1) W2 + b2
 * x is M x D, W1 is D x F, b1 is F, W2 is F x D, b2 is D, y is M x D, all
 * row-major (a PyTorch nn.Linear weight is the transpose: W1 =
 * linear1.weight^T).  Shapes are written MxDxF (tokens, d_model, d_ff).
 * Two dtypes, as the variant's: f32, or every tensor stored in bf16 with
 * fp32 accumulation, where the M x F hidden h is also rounded to bf16
 * between the two products, as a framework's bf16 layer stores it.
 *
 * FLOPs: 4*M*D*F (two products).  Bytes: x, W1, b1, W2, b2 read and y
 * written once, at 4 or 2 bytes an element; the M x F hidden activation is
 * a workspace, not counted.
 * Tolerance: two chained reductions, D then F long: the length is D + F.
 * The reference computes h exactly, in double from the stored inputs; bf16
 * variants are held to KB_MATH_BF16's bound, whose absolute floor,
 * 8 * 2^-8 = 0.031, covers h's rounding 50 times over: each h_f is off by
 * at most 2^-8 |h_f| (rms 2^-8 |h_f| / sqrt(3)), and through W2's F terms
 * of rms 1/sqrt(3F) those errors add to an rms under 2^-8 rms(h) / 3 =
 * 6e-4 in y (rms(h) = 0.45 for these inputs), whatever F.
 * tests/test_reference.c checks that, and an emulated bf16 layer, two-way
 * tensor-parallel included, against the bound.
 * Inputs: uniform in [-1, 1], with W1 scaled by 1/sqrt(D) and W2 by
 * 1/sqrt(F), as a trained layer's are, so activations stay O(1); rounded to
 * bf16 for bf16. */
#ifndef KBENCH_FFN_H
#define KBENCH_FFN_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same pointers under the variant's dtype: f32 variants read x ... y;
 * bf16 variants x16 ... y16, bf16 bit patterns (__nv_bfloat16 on the
 * device).  Unions keep the f32 variants' typed access as it was. */
typedef struct {
    int M, D, F;
    union { const float *x; const uint16_t *x16; };
    union { const float *w1; const uint16_t *w1_16; };
    union { const float *b1; const uint16_t *b1_16; };
    union { const float *w2; const uint16_t *w2_16; };
    union { const float *b2; const uint16_t *b2_16; };
    union { float *y; uint16_t *y16; };
} kb_ffn_args;

extern const kb_op kb_op_ffn;

/* Reference rows of y in double from x, W1, b1, W2, b2 stored as dtype t
 * (f32 or bf16), h kept exact: y[r*D + d] for token rows[r]. */
void ffn_reference_rows(const kb_ffn_args *a, kb_dtype t, const int64_t *rows, int nrows, double *y);

#ifdef __cplusplus
}
#endif
#endif
