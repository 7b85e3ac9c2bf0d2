/* rmsnorm contract: y = x / sqrt(mean(x^2) + eps) * gamma over the last dim
 * of an R x C matrix, row-major, eps = 1e-5.  Shapes are written RxC.
 * Three dtypes, as the variant's: f32, or bf16 or f16, where x (a model's
 * fp32 residual stream) and gamma stay fp32 and only y is stored in the
 * 16-bit type, the input of the product that follows (the Llama model's
 * norms).
 *
 * Bytes: x read and y written once, plus gamma (8*R*C + 4*C in f32,
 * 6*R*C + 4*C in bf16 and f16).  FLOPs: 4 per element.  Inputs: uniform in
 * [-1, 1]; when R >= 4, rows 0-1 of x are numerics rows: one scaled by
 * 1e-3 (eps matters) and one offset by 1e4. */
#ifndef KBENCH_RMSNORM_H
#define KBENCH_RMSNORM_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_RMSNORM_EPS 1e-5f

typedef struct {
    int R, C;
    float eps;
    const float *x, *gamma;
    union { float *y; uint16_t *y16; };  /* f32, or the 16-bit forms' bit patterns */
} kb_rmsnorm_args;

extern const kb_op kb_op_rmsnorm;

/* Reference rows in double, from x and gamma of dtype t. */
void rmsnorm_reference_rows(int C, double eps, kb_dtype t, const void *x, const void *gamma,
                            const int64_t *rows, int nrows, double *y);
/* x (tensor 0) uniform with the numerics rows above; others uniform. */
void rmsnorm_fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks);

#ifdef __cplusplus
}
#endif
#endif
