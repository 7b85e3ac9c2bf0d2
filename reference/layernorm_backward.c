/* layernorm_backward reference: plain C11 in double, from the stored
 * (fp32) x, gamma, dy and the forward's saved mean and rstd.  dx row by
 * row; dgamma and dbeta column by column, the rows outermost over a block
 * of the listed columns, so that x and dy stream once per block. */
#include <math.h>
#include <stdlib.h>
#include "ops/layernorm_backward.h"

void layernorm_backward_stats(int64_t R, int64_t C, double eps, const float *x, float *mean, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
        const float *in = x + r * C;
        double m = 0, v = 0;
        for (int64_t j = 0; j < C; ++j)
            m += in[j];
        m /= C;
        for (int64_t j = 0; j < C; ++j)
            v += (in[j] - m) * (in[j] - m);
        mean[r] = (float)m;
        rstd[r] = (float)(1.0 / sqrt(v / C + eps));
    }
}

static void dx_rows(int64_t C, const float *x, const float *gamma, const float *dy, const float *mean,
                    const float *rstd, const int64_t *rows, int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        const float *xr = x + r * C, *dyr = dy + r * C;
        double s1 = 0, s2 = 0;
        for (int64_t j = 0; j < C; ++j) {
            const double xhat = (xr[j] - (double)mean[r]) * rstd[r], g = (double)dyr[j] * gamma[j];
            s1 += g;
            s2 += g * xhat;
        }
        s1 /= C, s2 /= C;
        for (int64_t j = 0; j < C; ++j) {
            const double xhat = (xr[j] - (double)mean[r]) * rstd[r];
            ref[k * C + j] = rstd[r] * ((double)dyr[j] * gamma[j] - s1 - xhat * s2);
        }
    }
}

static void column_sums(int64_t R, int64_t C, const float *x, const float *dy, const float *mean, const float *rstd,
                        int dgamma, const int64_t *cols, int ncols, double *ref)
{
    for (int k = 0; k < ncols; ++k)
        ref[k] = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int k = 0; k < ncols; ++k) {
            const int64_t i = r * C + cols[k];
            ref[k] += dgamma ? (double)dy[i] * ((x[i] - (double)mean[r]) * rstd[r]) : dy[i];
        }
}

void layernorm_backward_reference(int64_t R, int64_t C, const float *x, const float *gamma, const float *dy,
                                  const float *mean, const float *rstd, int which, const int64_t *rows, int nrows,
                                  double *ref)
{
    if (which == KB_LNB_DX)
        dx_rows(C, x, gamma, dy, mean, rstd, rows, nrows, ref);
    else
        column_sums(R, C, x, dy, mean, rstd, which == KB_LNB_DGAMMA, rows, nrows, ref);
}
