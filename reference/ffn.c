/* ffn reference: plain C11 in double, one token row at a time. */
#include <stdlib.h>
#include "kernels/ffn.h"

void ffn_reference_rows(const kb_ffn_args *a, const int64_t *rows, int nrows, double *y)
{
    const int D = a->D, F = a->F;
    double *h = malloc((size_t)F * sizeof *h);
    for (int r = 0; r < nrows; ++r) {
        const float *x = a->x + rows[r] * (int64_t)D;
        for (int f = 0; f < F; ++f)
            h[f] = a->b1[f];
        for (int d = 0; d < D; ++d)
            for (int f = 0; f < F; ++f)
                h[f] += (double)x[d] * a->w1[(int64_t)d * F + f];
        double *out = y + (int64_t)r * D;
        for (int d = 0; d < D; ++d)
            out[d] = a->b2[d];
        for (int f = 0; f < F; ++f) {
            if (h[f] <= 0)
                continue; /* relu */
            for (int d = 0; d < D; ++d)
                out[d] += h[f] * a->w2[(int64_t)f * D + d];
        }
    }
    free(h);
}
