/* layernorm reference: plain C11, two passes in double (mean, then the
 * centred sum of squares), which is exact enough for any input row; x,
 * gamma and beta as stored (any dtype). */
#include <math.h>
#include <stdlib.h>
#include "ops/layernorm.h"

void layernorm_reference_rows(int C, double eps, kb_dtype t, const void *x, const void *gamma,
                              const void *beta, const int64_t *rows, int nrows, double *y)
{
    double *gb = malloc(2 * (size_t)C * sizeof *gb + 1);
    kb_widen(gamma, 0, C, t, gb);
    kb_widen(beta, 0, C, t, gb + C);
    for (int r = 0; r < nrows; ++r) {
        double *out = y + (int64_t)r * C, mean = 0, var = 0;
        kb_widen(x, rows[r] * (int64_t)C, C, t, out);
        for (int j = 0; j < C; ++j)
            mean += out[j];
        mean /= C;
        for (int j = 0; j < C; ++j)
            var += (out[j] - mean) * (out[j] - mean);
        double rstd = 1.0 / sqrt(var / C + eps);
        for (int j = 0; j < C; ++j)
            out[j] = (out[j] - mean) * rstd * gb[j] + gb[C + j];
    }
    free(gb);
}
