/* cross_entropy reference: plain C11 in double, from the stored z (bf16
 * values widened exactly) and the targets. */
#include <math.h>
#include <stdlib.h>
#include "ops/cross_entropy.h"

int cross_entropy_ignored(int64_t r, int64_t R) { return (R >= 4 && r == 1) || r % 97 == 50; }

int64_t cross_entropy_counted(int64_t R)
{
    int64_t n = 0;
    for (int64_t r = 0; r < R; ++r)
        n += !cross_entropy_ignored(r, R);
    return n;
}

/* One row: its loss, and dz into out when out is not NULL. */
static double row(int64_t V, int target, double inv_n, const double *z, double *out)
{
    if (target == KB_CE_IGNORE) {
        for (int64_t j = 0; out && j < V; ++j)
            out[j] = 0;
        return 0;
    }
    const double eps = KB_CE_SMOOTHING;
    double max = -INFINITY, sum = 0, mean = 0;
    for (int64_t j = 0; j < V; ++j)
        max = fmax(max, z[j]);
    for (int64_t j = 0; j < V; ++j) {
        sum += exp(z[j] - max);
        mean += z[j];
    }
    mean /= V;
    const double lse = max + log(sum);
    for (int64_t j = 0; out && j < V; ++j)
        out[j] = (exp(z[j] - max) / sum - (1 - eps) * (j == target) - eps / V) * inv_n;
    return (1 - eps) * (lse - z[target]) + eps * (lse - mean);
}

void cross_entropy_reference(int64_t R, int64_t V, kb_dtype t, const void *z, const int *targets, int which,
                             const int64_t *rows, int nrows, double *ref)
{
    const double inv_n = 1.0 / (double)cross_entropy_counted(R);
    double *zr = malloc((size_t)V * sizeof *zr);
    if (!zr)
        abort(); /* a row of V doubles: the reference's own working memory */
    for (int k = 0; k < nrows; ++k) {
        kb_widen(z, rows[k] * V, V, t, zr);
        const double loss = row(V, targets[rows[k]], inv_n, zr, which == KB_CE_DZ ? ref + k * V : NULL);
        if (which == KB_CE_LOSS)
            ref[k] = loss;
    }
    free(zr);
}
