/* ffn reference: plain C11 in double, from the inputs as they are stored
 * (f32, or the bf16-rounded values a bf16 variant reads), h kept exact.
 * Rows go in blocks, the weight row outermost within one, as in the matmul
 * reference: each row of W1 and W2 is widened to double once per block and
 * then read by every token of it, so bf16 costs no more than f32. */
#include <stdlib.h>
#include "ops/ffn.h"

enum { ROW_BLOCK = 16 };

/* h[r] = relu(b1 + x[rows[r]] W1) for the n tokens of a block. */
static void hidden(const kb_ffn_args *a, kb_dtype t, const int64_t *rows, int n, double *w, double *h)
{
    const int D = a->D, F = a->F;
    for (int r = 0; r < n; ++r)
        kb_widen(a->b1, 0, F, t, h + (size_t)r * F);
    for (int d = 0; d < D; ++d) {
        kb_widen(a->w1, (int64_t)d * F, F, t, w);
        for (int r = 0; r < n; ++r) {
            const double xv = kb_tensor_value(a->x, rows[r] * D + d, t);
            double *hr = h + (size_t)r * F;
            for (int f = 0; f < F; ++f)
                hr[f] += xv * w[f];
        }
    }
    for (size_t k = 0; k < (size_t)n * F; ++k)
        h[k] = h[k] > 0 ? h[k] : 0;
}

/* y[r] = b2 + h[r] W2 for the n tokens of a block. */
static void output(const kb_ffn_args *a, kb_dtype t, int n, const double *h, double *w, double *y)
{
    const int D = a->D, F = a->F;
    for (int r = 0; r < n; ++r)
        kb_widen(a->b2, 0, D, t, y + (size_t)r * D);
    for (int f = 0; f < F; ++f) {
        kb_widen(a->w2, (int64_t)f * D, D, t, w);
        for (int r = 0; r < n; ++r) {
            const double hv = h[(size_t)r * F + f];
            double *yr = y + (size_t)r * D;
            for (int d = 0; d < D && hv != 0; ++d)
                yr[d] += hv * w[d];
        }
    }
}

void ffn_reference_rows(const kb_ffn_args *a, kb_dtype t, const int64_t *rows, int nrows, double *y)
{
    const int D = a->D, F = a->F;
    double *h = malloc((size_t)ROW_BLOCK * F * sizeof *h);
    double *w = malloc((size_t)(D > F ? D : F) * sizeof *w);
    for (int r0 = 0; r0 < nrows; r0 += ROW_BLOCK) {
        const int n = nrows - r0 < ROW_BLOCK ? nrows - r0 : ROW_BLOCK;
        hidden(a, t, rows + r0, n, w, h);
        output(a, t, n, h, w, y + (size_t)r0 * D);
    }
    free(w);
    free(h);
}
