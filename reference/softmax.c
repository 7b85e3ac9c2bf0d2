/* softmax reference: plain C11 in double, from x as stored (any dtype).
 * Subtracting the row max makes it shift-invariant; an all -inf row has no
 * max to subtract and gives zeros. */
#include <math.h>
#include <stdlib.h>
#include "ops/softmax.h"

void softmax_reference_rows(int C, kb_dtype t, const void *x, const int64_t *rows, int nrows, double *y)
{
    for (int r = 0; r < nrows; ++r) {
        double *out = y + (int64_t)r * C, max = -INFINITY, sum = 0;
        kb_widen(x, rows[r] * (int64_t)C, C, t, out);
        for (int j = 0; j < C; ++j)
            max = fmax(max, out[j]);
        for (int j = 0; j < C; ++j) {
            out[j] = max == -INFINITY ? 0.0 : exp(out[j] - max);
            sum += out[j];
        }
        for (int j = 0; j < C; ++j)
            out[j] = sum > 0 ? out[j] / sum : 0.0;
    }
}
