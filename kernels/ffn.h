/* ffn contract: the transformer's position-wise feed-forward network,
 *     y = relu(x W1 + b1) W2 + b2
 * x is M x D, W1 is D x F, b1 is F, W2 is F x D, b2 is D, y is M x D, all
 * fp32 row-major (a PyTorch nn.Linear weight is the transpose: W1 =
 * linear1.weight^T).  Shapes are written MxDxF (tokens, d_model, d_ff).
 *
 * FLOPs: 4*M*D*F (two products).  Bytes: x, W1, b1, W2, b2 read and y
 * written once; the M x F hidden activation is a workspace, not counted.
 * Tolerance: two chained reductions, D then F long: the length is D + F.
 * Inputs: uniform in [-1, 1], with W1 scaled by 1/sqrt(D) and W2 by
 * 1/sqrt(F), as a trained layer's are, so activations stay O(1). */
#ifndef KBENCH_FFN_H
#define KBENCH_FFN_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int M, D, F;
    const float *x, *w1, *b1, *w2, *b2;
    float *y;
} kb_ffn_args;

extern const kb_op kb_op_ffn;

void ffn_reference_rows(const kb_ffn_args *a, const int64_t *rows, int nrows, double *y);

#ifdef __cplusplus
}
#endif
#endif
