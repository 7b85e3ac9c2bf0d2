/* rmsnorm reference: plain C11 in double. */
#include <math.h>
#include "kernels/rmsnorm.h"

void rmsnorm_reference_rows(int C, double eps, const float *x, const float *gamma,
                            const int64_t *rows, int nrows, double *y)
{
    for (int r = 0; r < nrows; ++r) {
        const float *in = x + rows[r] * (int64_t)C;
        double *out = y + (int64_t)r * C, ms = 0;
        for (int j = 0; j < C; ++j)
            ms += (double)in[j] * in[j];
        double rrms = 1.0 / sqrt(ms / C + eps);
        for (int j = 0; j < C; ++j)
            out[j] = in[j] * rrms * gamma[j];
    }
}
