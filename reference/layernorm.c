/* layernorm reference: plain C11, two passes in double (mean, then the
 * centred sum of squares), which is exact enough for any fp32 input row. */
#include <math.h>
#include "kernels/layernorm.h"

void layernorm_reference_rows(int C, double eps, const float *x, const float *gamma,
                              const float *beta, const int64_t *rows, int nrows, double *y)
{
    for (int r = 0; r < nrows; ++r) {
        const float *in = x + rows[r] * (int64_t)C;
        double *out = y + (int64_t)r * C, mean = 0, var = 0;
        for (int j = 0; j < C; ++j)
            mean += in[j];
        mean /= C;
        for (int j = 0; j < C; ++j)
            var += (in[j] - mean) * (in[j] - mean);
        double rstd = 1.0 / sqrt(var / C + eps);
        for (int j = 0; j < C; ++j)
            out[j] = (in[j] - mean) * rstd * gamma[j] + beta[j];
    }
}
