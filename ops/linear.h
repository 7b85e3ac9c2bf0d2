/* linear contract: y += x W^T, the last product of a residual branch (a
 * Llama layer's o_proj and down_proj, the residual added in place): x is
 * M x K and W is N x K (nn.Linear's [out, in]), both bf16; y is M x N
 * fp32, the residual stream; fp32 accumulation.  Shapes are written
 * MxNxK.  bf16 only.
 *
 * FLOPs: 2*M*N*K.  Bytes: x and W read once, y read and written.
 * Tolerance: KB_MATH_BF16's bound over a reduction K long (y itself is
 * fp32, so the check is loose by its output rounding; a dropped K-tile
 * still fails it).
 * Inputs: uniform in [-1, 1], W scaled by 1/sqrt(K) as a trained layer's
 * are, rounded to bf16. */
#ifndef KBENCH_LINEAR_H
#define KBENCH_LINEAR_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int M, N, K;
    const uint16_t *x; /* M x K, bf16 bit patterns */
    const uint16_t *w; /* N x K */
    float *y;          /* M x N, += */
} kb_linear_args;

extern const kb_op kb_op_linear;

#ifdef __cplusplus
}
#endif
#endif
