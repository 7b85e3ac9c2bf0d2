/* softmax reference: plain C11 in double.  Subtracting the row max makes it
 * shift-invariant; an all -inf row has no max to subtract and gives zeros. */
#include <math.h>
#include "kernels/softmax.h"

void softmax_reference_rows(int C, const float *x, const int64_t *rows, int nrows, double *y)
{
    for (int r = 0; r < nrows; ++r) {
        const float *in = x + rows[r] * (int64_t)C;
        double *out = y + (int64_t)r * C, max = -INFINITY, sum = 0;
        for (int j = 0; j < C; ++j)
            max = fmax(max, in[j]);
        for (int j = 0; j < C; ++j) {
            out[j] = max == -INFINITY ? 0.0 : exp((double)in[j] - max);
            sum += out[j];
        }
        for (int j = 0; j < C; ++j)
            out[j] = sum > 0 ? out[j] / sum : 0.0;
    }
}
