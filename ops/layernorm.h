/* layernorm contract: y = (x - mean) / sqrt(var + eps) * gamma + beta over
 * the last dim of an R x C matrix (f32, or f16 storage with fp32 math;
 * biased variance, eps = 1e-5, as torch.nn.LayerNorm).  Shapes are written RxC; any R, C >= 1.
 *
 * Bytes: x read and y written once, plus gamma and beta (8*R*C + 8*C).
 * FLOPs: counted as 8 per element; the measure is GB/s against the copy
 * ceiling.
 * Numerics, which every variant must honour: a row with mean 1e4 and
 * variance 1e-2 stays accurate (E[x^2] - E[x]^2 in fp32 loses every digit
 * there, and so does subtracting an fp32 mean of 1e4; shifting by the row's
 * first element first keeps the subtraction exact); C = 1 and constant rows
 * give beta, finite.
 * Inputs: uniform in [-1, 1]; when R >= 4, rows 0-2 of x are numerics rows:
 * mean 1e4 with variance 1e-2, a constant row, and a row scaled by 100. */
#ifndef KBENCH_LAYERNORM_H
#define KBENCH_LAYERNORM_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_LAYERNORM_EPS 1e-5f

typedef struct {
    int R, C;
    float eps;
    const float *x, *gamma, *beta;
    float *y;
} kb_layernorm_args;

extern const kb_op kb_op_layernorm;

/* Reference rows in double, from tensors of dtype t. */
void layernorm_reference_rows(int C, double eps, kb_dtype t, const void *x, const void *gamma,
                              const void *beta, const int64_t *rows, int nrows, double *y);
/* Plant the numerics rows described above into an R x C input. */
void layernorm_plant_rows(int64_t R, int64_t C, float *x);
/* The op's fill: uniform inputs, numerics rows planted in input 0 (x). */
void layernorm_fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks);

#ifdef __cplusplus
}
#endif
#endif
