/* Timing statistics and the stop rule. */
#include <math.h>
#include "harness/harness.h"
#include "tests/check.h"

int main(void)
{
    double s[] = {5, 1, 4, 2, 3};
    kb_stats st;
    kb_stats_compute(s, 5, &st);
    CHECK(st.median == 3 && st.min == 1 && st.max == 5 && st.n == 5);
    CHECK_NEAR(st.rel_stdev, sqrt(2.5) / 3, 1e-12);

    double even[] = {4, 1, 3, 2};
    kb_stats_compute(even, 4, &st);
    CHECK(st.median == 2.5);

    /* Identical samples: no noise; one sample: unknown noise, so keep sampling. */
    double flat[] = {2, 2, 2};
    kb_stats_compute(flat, 3, &st);
    CHECK(st.rel_stdev == 0 && kb_median_noise(&st) == 0);
    double one[] = {2};
    kb_stats_compute(one, 1, &st);
    CHECK(isinf(kb_median_noise(&st)));

    /* Noise of the median falls as 1/sqrt(n). */
    double a[16], b[64];
    for (int i = 0; i < 64; ++i) {
        if (i < 16)
            a[i] = 1.0 + 0.1 * (i % 2);
        b[i] = 1.0 + 0.1 * (i % 2);
    }
    kb_stats sa, sb;
    kb_stats_compute(a, 16, &sa);
    kb_stats_compute(b, 64, &sb);
    CHECK(kb_median_noise(&sb) < 0.55 * kb_median_noise(&sa));

    /* The MAD: odd and even counts, and a lopsided sample. */
    double m5[] = {1, 2, 3, 4, 100};
    kb_stats_compute(m5, 5, &st);
    CHECK(st.mad == 1);
    double m4[] = {1, 2, 4, 8};
    kb_stats_compute(m4, 4, &st); /* median 3; deviations 1, 1, 2, 5 */
    CHECK(st.mad == 1.5);

    /* A few launches the host was late with (10x the others) inflate the
     * spread, not the median's noise: the row may stop. */
    double late[44];
    for (int i = 0; i < 44; ++i)
        late[i] = i < 4 ? 10.0 : 1.0 + 0.001 * (i % 3);
    kb_stats_compute(late, 44, &st);
    CHECK(st.rel_stdev > 0.5 && kb_median_noise(&st) < 0.01);
    return CHECK_DONE();
}
