/* rmsnorm_backward reference: plain C11 in double, from the stored x,
 * gamma and dy (fp32, or bf16 widened exactly) and the forward's saved
 * rstd.  dx row by row; dgamma column
 * by column, the rows outermost over the listed columns, so that x and dy
 * stream once. */
#include <math.h>
#include "ops/rmsnorm_backward.h"

void rmsnorm_backward_stats(int64_t R, int64_t C, double eps, kb_dtype t, const void *x, float *rstd)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
        double sq = 0;
        for (int64_t j = 0; j < C; ++j) {
            const double v = kb_tensor_value(x, r * C + j, t);
            sq += v * v;
        }
        rstd[r] = (float)(1.0 / sqrt(sq / C + eps));
    }
}

static void dx_rows(int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy, const float *rstd,
                    const int64_t *rows, int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        double s = 0;
        for (int64_t j = 0; j < C; ++j)
            s += kb_tensor_value(dy, r * C + j, t) * kb_tensor_value(gamma, j, t) *
                 (kb_tensor_value(x, r * C + j, t) * rstd[r]);
        s /= C;
        for (int64_t j = 0; j < C; ++j)
            ref[k * C + j] = rstd[r] * (kb_tensor_value(dy, r * C + j, t) * kb_tensor_value(gamma, j, t) -
                                        kb_tensor_value(x, r * C + j, t) * rstd[r] * s);
    }
}

void rmsnorm_backward_reference(int64_t R, int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy,
                                const float *rstd, int which, const int64_t *rows, int nrows, double *ref)
{
    if (which == KB_RMB_DX) {
        dx_rows(C, t, x, gamma, dy, rstd, rows, nrows, ref);
        return;
    }
    for (int k = 0; k < nrows; ++k)
        ref[k] = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int k = 0; k < nrows; ++k) {
            const int64_t i = r * C + rows[k];
            ref[k] += kb_tensor_value(dy, i, t) * (kb_tensor_value(x, i, t) * rstd[r]);
        }
}
