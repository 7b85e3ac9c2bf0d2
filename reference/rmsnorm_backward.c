/* rmsnorm_backward reference: plain C11 in double, from the stored (fp32)
 * x, gamma, dy and the forward's saved rstd.  dx row by row; dgamma column
 * by column, the rows outermost over the listed columns, so that x and dy
 * stream once. */
#include <math.h>
#include "ops/rmsnorm_backward.h"

void rmsnorm_backward_stats(int64_t R, int64_t C, double eps, const float *x, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
        double sq = 0;
        for (int64_t j = 0; j < C; ++j)
            sq += (double)x[r * C + j] * x[r * C + j];
        rstd[r] = (float)(1.0 / sqrt(sq / C + eps));
    }
}

static void dx_rows(int64_t C, const float *x, const float *gamma, const float *dy, const float *rstd,
                    const int64_t *rows, int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        const float *xr = x + r * C, *dyr = dy + r * C;
        double s = 0;
        for (int64_t j = 0; j < C; ++j)
            s += (double)dyr[j] * gamma[j] * ((double)xr[j] * rstd[r]);
        s /= C;
        for (int64_t j = 0; j < C; ++j)
            ref[k * C + j] = rstd[r] * ((double)dyr[j] * gamma[j] - (double)xr[j] * rstd[r] * s);
    }
}

void rmsnorm_backward_reference(int64_t R, int64_t C, const float *x, const float *gamma, const float *dy,
                                const float *rstd, int which, const int64_t *rows, int nrows, double *ref)
{
    if (which == KB_RMB_DX) {
        dx_rows(C, x, gamma, dy, rstd, rows, nrows, ref);
        return;
    }
    for (int k = 0; k < nrows; ++k)
        ref[k] = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int k = 0; k < nrows; ++k) {
            const int64_t i = r * C + rows[k];
            ref[k] += (double)dy[i] * ((double)x[i] * rstd[r]);
        }
}
