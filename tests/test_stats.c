/* Timing statistics and the stop rule (harness/timing.h): where a row's
 * sampling stops given its samples, and the rule's flags as every command
 * parses them. */
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "harness/timing.h"
#include "tests/check.h"

/* Whether the rule stops after the first n of x (each 1 +- 1% when quiet,
 * +- 30% when noisy), sampled in elapsed_s. */
static int stops_at(const kb_stop_rule *rule, int n, int noisy, double elapsed_s)
{
    static double x[KB_MAX_SAMPLES];
    for (int i = 0; i < n; ++i)
        x[i] = 1.0 + (noisy ? 0.3 : 0.01) * (i % 3 - 1);
    kb_stats st;
    kb_stats_compute(x, n, &st);
    return kb_stop_rule_met(rule, &st, elapsed_s);
}

static void stop_rule(void)
{
    const kb_stop_rule plain = {0}, strict = {.cap_s = 5, .max_noise = 0.005, .min_samples = 50};
    /* Quiet samples stop at min_samples (20 by default), not one before. */
    CHECK(!stops_at(&plain, KB_STOP_MIN_SAMPLES - 1, 0, 0.1));
    CHECK(stops_at(&plain, KB_STOP_MIN_SAMPLES, 0, 0.1));
    CHECK(!stops_at(&strict, 49, 0, 0.1) && stops_at(&strict, 50, 0, 0.1));
    /* Noisy ones sample on until the cap (1 s by default)... */
    CHECK(!stops_at(&plain, 100, 1, 0.9));
    CHECK(stops_at(&plain, 100, 1, 1.01));
    CHECK(!stops_at(&strict, 100, 1, 4.9) && stops_at(&strict, 100, 1, 5.1));
    /* ...or the most samples a row takes; and never stop under three. */
    CHECK(stops_at(&strict, KB_MAX_SAMPLES, 1, 0.1));
    CHECK(!stops_at(&plain, KB_MIN_SAMPLES - 1, 0, 100) && stops_at(&plain, KB_MIN_SAMPLES, 1, 100));
    /* Noisy samples stop at min_samples under a loose bound, not a strict one. */
    const kb_stop_rule loose = {.max_noise = 0.5, .min_samples = 5};
    CHECK(stops_at(&loose, 5, 1, 0.1) && !stops_at(&strict, 50, 1, 0.1));

    char text[160];
    kb_stop_rule_text(&plain, text, sizeof text);
    CHECK(!strcmp(text, "median noise (sigma from the MAD) under 1% from 20 samples, or 1 s, or 2000 samples"));
}

/* The three flags, their ranges and one-line refusals. */
static void stop_flags(void)
{
    kb_stop_rule r = {0};
    char err[256];
    CHECK(kb_is_stop_flag("--max-time") && kb_is_stop_flag("--max-noise") && kb_is_stop_flag("--min-samples"));
    CHECK(!kb_is_stop_flag("--hot") && !kb_is_stop_flag("--max"));
    CHECK(kb_parse_stop_flag("--max-noise", "2.5", &r, err, sizeof err) == 0 && r.max_noise == 0.025);
    CHECK(kb_parse_stop_flag("--min-samples", "50", &r, err, sizeof err) == 0 && r.min_samples == 50);
    CHECK(kb_parse_stop_flag("--max-time", "3", &r, err, sizeof err) == 0 && r.cap_s == 3);
    const char *bad[][3] = {
        {"--max-noise", "0", "--max-noise needs a percentage from 0.01 to 100, got '0'"},
        {"--max-noise", "nan", "--max-noise needs a percentage from 0.01 to 100, got 'nan'"},
        {"--min-samples", "2", "--min-samples needs an integer from 3 to 2000, got '2'"},
        {"--min-samples", "20.5", "--min-samples needs an integer from 3 to 2000, got '20.5'"},
        {"--max-time", "0", "--max-time needs seconds in (0, 3600], got '0'"},
        {"--max-time", "1\n", "--max-time needs seconds in (0, 3600], got '1\\x0a'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
        CHECK(kb_parse_stop_flag(bad[i][0], bad[i][1], &r, err, sizeof err) == -1 && !strcmp(err, bad[i][2]));
    CHECK(r.max_noise == 0.025 && r.min_samples == 50 && r.cap_s == 3); /* refusals leave the rule */
}

int main(void)
{
    stop_rule();
    stop_flags();
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
