/* Summary statistics of timing samples. */
#include <math.h>
#include <stdlib.h>
#include "harness/harness.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of |x - median| over sorted x: walking outward from the
 * median, the deviations come in increasing order. */
static double sorted_mad(const double *x, int n, double median)
{
    int lo = (n - 1) / 2, hi = lo + 1; /* x[lo] <= median <= x[hi] */
    double last = 0, before = 0;
    for (int k = 0; k <= n / 2; ++k) {
        before = last;
        if (hi >= n || (lo >= 0 && median - x[lo] <= x[hi] - median))
            last = median - x[lo--];
        else
            last = x[hi++] - median;
    }
    return n % 2 ? last : 0.5 * (before + last);
}

void kb_stats_compute(double *samples, int n, kb_stats *st)
{
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i)
        sum += samples[i];
    st->n = n;
    st->mean = sum / n;
    for (int i = 0; i < n; ++i)
        sq += (samples[i] - st->mean) * (samples[i] - st->mean);
    st->min = samples[0];
    st->max = samples[n - 1];
    st->median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    st->rel_stdev = n > 1 && st->mean > 0 ? sqrt(sq / (n - 1)) / st->mean : 0;
    st->mad = sorted_mad(samples, n, st->median);
}

/* The median's standard error is about 1.2533 * sigma / sqrt(n) for a
 * roughly normal sample; relative to the median.  Sigma is 1.4826 times
 * the MAD there, which, like the median itself, a few slow outliers (a
 * launch the host was late with) do not move: the standard deviation
 * they inflate kept such rows sampling to the cap. */
double kb_median_noise(const kb_stats *st)
{
    if (st->n < 2)
        return INFINITY;
    return 1.2533 * 1.4826 * st->mad / st->median / sqrt((double)st->n);
}
