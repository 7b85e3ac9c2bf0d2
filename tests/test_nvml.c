/* NVML's figures without NVML: the derivations are pure functions checked
 * with numbers, and on a machine without libnvidia-ml.so.1 opening it gives
 * "unavailable: why", readings that read nothing, and empty CSV cells. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "tests/check.h"

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

static void test_names(void)
{
    char buf[160];
    CHECK(!strcmp(kb_throttle_names(0, buf, sizeof buf), ""));
    CHECK(!strcmp(kb_throttle_names(KB_THR_IDLE, buf, sizeof buf), ""));
    CHECK(!strcmp(kb_throttle_names(KB_THR_SW_POWER_CAP, buf, sizeof buf), "sw_power_cap"));
    CHECK(!strcmp(kb_throttle_names(KB_THR_IDLE | KB_THR_SW_POWER_CAP | KB_THR_HW_SLOWDOWN | KB_THR_SW_THERMAL |
                                        KB_THR_HW_THERMAL | KB_THR_HW_POWER_BRAKE, buf, sizeof buf),
                  "sw_power_cap|hw_slowdown|sw_thermal|hw_thermal|hw_power_brake"));
    CHECK(!strcmp(kb_throttle_names(KB_THR_APP_CLOCKS | KB_THR_SYNC_BOOST | KB_THR_DISPLAY_CLOCKS, buf, sizeof buf),
                  "app_clocks|sync_boost|display_clocks"));
    /* A short buffer gets a cut name, never an overflow. */
    char small[8];
    CHECK(strlen(kb_throttle_names(KB_THR_SW_POWER_CAP | KB_THR_HW_THERMAL, small, sizeof small)) == 7);
}

static void test_clock_rule(void)
{
    /* The H100 row: 1980 MHz max, held at 1365-1470 under the power cap. */
    CHECK(kb_clock_throttled(1400, 1980, 0));
    CHECK(kb_clock_throttled(1980, 1980, KB_THR_SW_POWER_CAP));
    CHECK(kb_clock_throttled(1980, 1980, KB_THR_HW_THERMAL));
    CHECK(!kb_clock_throttled(1980, 1980, 0));
    CHECK(!kb_clock_throttled(1881, 1980, 0));        /* exactly 5% under: not more */
    CHECK(kb_clock_throttled(1880, 1980, 0));
    CHECK(kb_clock_throttled(1500, 1980, KB_THR_IDLE | KB_THR_APP_CLOCKS)); /* the clock alone flags it */
    CHECK(!kb_clock_throttled(1980, 1980, KB_THR_APP_CLOCKS | KB_THR_SYNC_BOOST));
    CHECK(!kb_clock_throttled(0, 1980, 0));           /* no clock read */
    CHECK(!kb_clock_throttled(1000, 0, 0));           /* no maximum known */
}

static void test_energy(void)
{
    /* 3.5 J over 2 s and 700 launches: 5 mJ each. */
    CHECK(near(kb_mj_per_launch(1000000, 1003500, 2.0, 700), 5.0));
    CHECK(kb_mj_per_launch(1000000, 1003500, 0.5, 700) == 0); /* under the counter's resolution */
    CHECK(kb_mj_per_launch(1000000, 1000000, 2.0, 700) == 0); /* the counter did not move */
    CHECK(kb_mj_per_launch(1003500, 1000000, 2.0, 700) == 0); /* it went back (driver reload) */
    CHECK(kb_mj_per_launch(1000000, 1003500, 2.0, 0) == 0);
    /* 2*4096^3 FLOP (137.4 GFLOP) for 200 mJ: 687.2 GFLOP/J; 1e9 B for 5 mJ: 200 GB/J. */
    CHECK(near(kb_per_joule(2.0 * 4096 * 4096 * 4096, 200), 2.0 * 4096 * 4096 * 4096 * 1e-9 / 0.2));
    CHECK(near(kb_per_joule(1e9, 5), 200));
    CHECK(kb_per_joule(1e9, 0) == 0);
}

static void test_window(void)
{
    kb_nvml_window w = {0};
    kb_nvml_reading a = {.clock_mhz = 1980, .power_w = 300, .temp_c = 50, .reasons = KB_THR_IDLE};
    kb_nvml_reading b = {.clock_mhz = 1400, .power_w = 700, .temp_c = 62, .reasons = KB_THR_SW_POWER_CAP};
    kb_nvml_reading c = {.clock_mhz = 1500, .power_w = 0, .temp_c = 55}; /* power not read */
    kb_nvml_add(&w, &a, 1980);
    kb_nvml_add(&w, &b, 1980);
    kb_nvml_add(&w, &c, 1980);
    kb_result r = {0};
    kb_nvml_summarize(&w, 5.0, 1980, &r);
    CHECK(near(r.clock_mhz, (1980 + 1400 + 1500) / 3.0));
    CHECK(near(r.power_w, 500));
    CHECK(r.temp_c == 62);
    CHECK(r.throttle == KB_THR_SW_POWER_CAP);  /* idle is left out */
    CHECK(r.mj_per_launch == 5.0 && r.throttled);
    CHECK(w.held == KB_THR_SW_POWER_CAP);
    /* A power reason left over from earlier work, read at the full clock:
     * named in the throttle column, but the row is not throttled. */
    kb_nvml_window late = {0};
    kb_nvml_reading full = {.clock_mhz = 1980, .power_w = 150, .temp_c = 45, .reasons = KB_THR_SW_POWER_CAP};
    kb_nvml_add(&late, &full, 1980);
    kb_nvml_add(&late, &full, 1980);
    kb_nvml_summarize(&late, 0, 1980, &r);
    CHECK(r.throttle == KB_THR_SW_POWER_CAP && !r.throttled);
    kb_nvml_window none = {0};
    kb_nvml_summarize(&none, 0, 1980, &r);
    CHECK(r.clock_mhz == 0 && r.power_w == 0 && r.temp_c == 0 && !r.throttle && !r.throttled);
}

/* This machine may have NVML: only its absence is checked, where it is absent. */
static void test_unavailable(void)
{
    CHECK(!strcmp(kb_nvml_status(), "unavailable: not opened"));
    if (kb_nvml_open("0000:00:00.0", 1980) == 0) {
        printf("test_nvml: libnvidia-ml.so.1 is here; its absence was not tested\n");
        return;
    }
    CHECK(!strncmp(kb_nvml_status(), "unavailable: ", 13) && strlen(kb_nvml_status()) > 13);
    CHECK(kb_nvml_max_clock_mhz() == 1980);  /* the CUDA attribute stands in */
    kb_nvml_window w = {0};
    kb_nvml_sample(&w);
    CHECK(w.clock_n == 0 && w.power_n == 0 && w.temp_max == 0 && w.reasons == 0);
    unsigned long long mj = 7;
    CHECK(kb_nvml_energy(&mj) == -1 && mj == 7);
}

/* NVML may count only where its count is CUDA's: with CUDA_VISIBLE_DEVICES
 * set (here to one GPU of however many) it must leave the count to CUDA. */
static void test_gpu_count(void)
{
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    CHECK(kb_nvml_gpu_count() == -1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    int n = kb_nvml_gpu_count();
    CHECK(n == -1 || n >= 1);
}

int main(void)
{
    test_names();
    test_clock_rule();
    test_energy();
    test_window();
    test_unavailable();
    test_gpu_count();
    return CHECK_DONE();
}
