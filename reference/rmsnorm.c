/* rmsnorm reference: plain C11 in double, from x and gamma as stored (any dtype). */
#include <math.h>
#include <stdlib.h>
#include "ops/rmsnorm.h"

void rmsnorm_reference_rows(int C, double eps, kb_dtype t, const void *x, const void *gamma,
                            const int64_t *rows, int nrows, double *y)
{
    double *g = malloc((size_t)C * sizeof *g + 1);
    kb_widen(gamma, 0, C, t, g);
    for (int r = 0; r < nrows; ++r) {
        double *out = y + (int64_t)r * C, ms = 0;
        kb_widen(x, rows[r] * (int64_t)C, C, t, out);
        for (int j = 0; j < C; ++j)
            ms += out[j] * out[j];
        double rrms = 1.0 / sqrt(ms / C + eps);
        for (int j = 0; j < C; ++j)
            out[j] = out[j] * rrms * g[j];
    }
    free(g);
}
