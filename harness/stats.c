/* Summary statistics of timing samples. */
#include <math.h>
#include <stdlib.h>
#include "harness/harness.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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
}

/* The median's standard error is about 1.2533 * sigma / sqrt(n) for a
 * roughly normal sample; relative to the median. */
double kb_median_noise(const kb_stats *st)
{
    if (st->n < 2)
        return INFINITY;
    return 1.2533 * st->rel_stdev * st->mean / st->median / sqrt((double)st->n);
}
