/* add_layernorm contract, the residual step of a post-LN transformer:
 *     sum = x + r          (written out: the next residual)
 *     y   = LayerNorm(sum) with gamma, beta, eps = 1e-5
 * over the last dim of R x C fp32 matrices.  Shapes are written RxC.
 * `sum` is fp32, and y normalizes that fp32 sum, as a transformer stores it.
 *
 * Bytes: x and r read, sum and y written (16*R*C + 8*C).  FLOPs: 9 per element.
 * Inputs: uniform in [-1, 1]; rows 0-2 of x carry layernorm's numerics rows. */
#ifndef KBENCH_ADD_LAYERNORM_H
#define KBENCH_ADD_LAYERNORM_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    float eps;
    const float *x, *r, *gamma, *beta;
    float *y, *sum;
} kb_add_layernorm_args;

extern const kb_op kb_op_add_layernorm;

#ifdef __cplusplus
}
#endif
#endif
