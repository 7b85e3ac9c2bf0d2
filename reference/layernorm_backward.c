/* layernorm_backward reference: plain C11 in double, from the stored x,
 * gamma and dy (fp32, or bf16 widened exactly) and the forward's saved
 * mean and rstd.  dx row by
 * row; dgamma and dbeta column by column, the rows outermost over a block
 * of the listed columns, so that x and dy stream once per block. */
#include <math.h>
#include <stdlib.h>
#include "ops/layernorm_backward.h"

void layernorm_backward_stats(int64_t R, int64_t C, double eps, kb_dtype t, const void *x, float *mean, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < C; ++j)
            m += kb_tensor_value(x, r * C + j, t);
        m /= C;
        for (int64_t j = 0; j < C; ++j) {
            const double e = kb_tensor_value(x, r * C + j, t) - m;
            v += e * e;
        }
        mean[r] = (float)m;
        rstd[r] = (float)(1.0 / sqrt(v / C + eps));
    }
}

static void dx_rows(int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy, const float *mean,
                    const float *rstd, const int64_t *rows, int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        double s1 = 0, s2 = 0;
        for (int64_t j = 0; j < C; ++j) {
            const double xhat = (kb_tensor_value(x, r * C + j, t) - (double)mean[r]) * rstd[r];
            const double g = kb_tensor_value(dy, r * C + j, t) * kb_tensor_value(gamma, j, t);
            s1 += g;
            s2 += g * xhat;
        }
        s1 /= C, s2 /= C;
        for (int64_t j = 0; j < C; ++j) {
            const double xhat = (kb_tensor_value(x, r * C + j, t) - (double)mean[r]) * rstd[r];
            ref[k * C + j] =
                rstd[r] * (kb_tensor_value(dy, r * C + j, t) * kb_tensor_value(gamma, j, t) - s1 - xhat * s2);
        }
    }
}

static void column_sums(int64_t R, int64_t C, kb_dtype t, const void *x, const void *dy, const float *mean,
                        const float *rstd, int dgamma, const int64_t *cols, int ncols, double *ref)
{
    for (int k = 0; k < ncols; ++k)
        ref[k] = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int k = 0; k < ncols; ++k) {
            const int64_t i = r * C + cols[k];
            const double g = kb_tensor_value(dy, i, t);
            ref[k] += dgamma ? g * ((kb_tensor_value(x, i, t) - (double)mean[r]) * rstd[r]) : g;
        }
}

void layernorm_backward_reference(int64_t R, int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy,
                                  const float *mean, const float *rstd, int which, const int64_t *rows, int nrows,
                                  double *ref)
{
    if (which == KB_LNB_DX)
        dx_rows(C, t, x, gamma, dy, mean, rstd, rows, nrows, ref);
    else
        column_sums(R, C, t, x, dy, mean, rstd, which == KB_LNB_DGAMMA, rows, nrows, ref);
}
