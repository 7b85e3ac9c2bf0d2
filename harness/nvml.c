/* Clocks, power, temperature, throttle reasons and energy from NVML, the
 * driver's management library.  It is loaded with dlopen, not linked: kbench
 * must build and run where it is missing (CI, a container without the
 * driver's libraries), and then says so in the CSV's `nvml` line instead of
 * failing.  Only the reading functions touch NVML; what a row reports is
 * derived by the pure functions at the top, which the CPU tests check. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/harness.h"

/* Readings are means over a window, so a row must be long enough to hold
 * several: on the H100 both the power reading and the energy counter
 * advance in 100 ms steps.  The counter's delta over a window of T is off
 * by up to one step, 0.1 s / T of it: from 1 s on (KB_ENERGY_MIN_S), by
 * 10% at most. */
#define CLOCK_DROP 0.05   /* a mean clock this far under the maximum is throttled */

static const struct {
    unsigned long long bit;
    const char *name;
} reason_names[] = {
    {KB_THR_APP_CLOCKS, "app_clocks"},   {KB_THR_SW_POWER_CAP, "sw_power_cap"},
    {KB_THR_HW_SLOWDOWN, "hw_slowdown"}, {KB_THR_SYNC_BOOST, "sync_boost"},
    {KB_THR_SW_THERMAL, "sw_thermal"},   {KB_THR_HW_THERMAL, "hw_thermal"},
    {KB_THR_HW_POWER_BRAKE, "hw_power_brake"}, {KB_THR_DISPLAY_CLOCKS, "display_clocks"},
};

const char *kb_throttle_names(unsigned long long reasons, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof reason_names / sizeof *reason_names; ++i)
        if ((reasons & reason_names[i].bit) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "|" : "", reason_names[i].name);
    return buf;
}

int kb_clock_throttled(double clock_mhz, double max_clock_mhz, unsigned long long reasons)
{
    if (reasons & KB_THR_POWER_THERMAL)
        return 1;
    return clock_mhz > 0 && max_clock_mhz > 0 && clock_mhz < (1 - CLOCK_DROP) * max_clock_mhz;
}

double kb_mj_per_launch(unsigned long long mj0, unsigned long long mj1, double window_s, int launches)
{
    if (launches <= 0 || mj1 <= mj0 || window_s < KB_ENERGY_MIN_S)
        return 0;
    return (double)(mj1 - mj0) / launches;
}

double kb_per_joule(double per_launch, double mj_per_launch)
{
    return mj_per_launch > 0 ? per_launch * 1e-6 / mj_per_launch : 0; /* 1e-9 per giga, 1e3 mJ per J */
}

void kb_nvml_add(kb_nvml_window *w, const kb_nvml_reading *r, double max_clock_mhz)
{
    /* A reason outlives the work that raised it: on the H100, small rows
     * after a power-capped one read sw_power_cap at the full clock.  Only
     * a reason read while the clock was under the maximum flags a row. */
    if (r->clock_mhz <= 0 || r->clock_mhz < max_clock_mhz)
        w->held |= r->reasons & KB_THR_POWER_THERMAL;
    if (r->clock_mhz > 0) {
        w->clock_sum += r->clock_mhz;
        w->clock_n++;
    }
    if (r->power_w > 0) {
        w->power_sum += r->power_w;
        w->power_n++;
    }
    if (r->temp_c > w->temp_max)
        w->temp_max = r->temp_c;
    /* Idle is set whenever a reading falls between two launches: no news. */
    w->reasons |= r->reasons & ~KB_THR_IDLE;
}

void kb_nvml_summarize(const kb_nvml_window *w, double mj_per_launch, double max_clock_mhz, kb_result *r)
{
    r->clock_mhz = w->clock_n ? w->clock_sum / w->clock_n : 0;
    r->power_w = w->power_n ? w->power_sum / w->power_n : 0;
    r->temp_c = w->temp_max;
    r->throttle = w->reasons;
    r->mj_per_launch = mj_per_launch;
    r->throttled = kb_clock_throttled(r->clock_mhz, max_clock_mhz, w->held);
}

/* ---- NVML itself: the few types and entry points kbench uses, as nvml.h
 * declares them (the header is not part of every CUDA toolkit) ---- */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlReturn_t; /* NVML_SUCCESS is 0 */
enum { NVML_CLOCK_SM = 1, NVML_TEMPERATURE_GPU = 0 };

static struct {
    void *lib;
    nvmlDevice_t dev;
    double max_clock_mhz;
    char status[160];
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *);
} nv = {.status = "unavailable: not opened"};

static int unavailable(const char *what, const char *why)
{
    snprintf(nv.status, sizeof nv.status, "unavailable: %s%s", what, why);
    if (nv.lib)
        dlclose(nv.lib);
    nv.lib = NULL;
    return -1;
}

static const char *nvml_error(nvmlReturn_t e)
{
    const char *(*text)(nvmlReturn_t) = (const char *(*)(nvmlReturn_t))dlsym(nv.lib, "nvmlErrorString");
    return text ? text(e) : "error";
}

int kb_nvml_open(const char *pci_bus_id, int fallback_max_clock_mhz)
{
    if (nv.lib)
        return 0;
    nv.max_clock_mhz = fallback_max_clock_mhz;
    if (!(nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)))
        return unavailable("", dlerror());
    nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(nv.lib, "nvmlInit_v2");
    nvmlReturn_t (*by_bus)(const char *, nvmlDevice_t *) =
        (nvmlReturn_t (*)(const char *, nvmlDevice_t *))dlsym(nv.lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *) =
        (nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *))dlsym(nv.lib, "nvmlDeviceGetMaxClockInfo");
    nv.clock = (nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *))dlsym(nv.lib, "nvmlDeviceGetClockInfo");
    nv.power = (nvmlReturn_t (*)(nvmlDevice_t, unsigned *))dlsym(nv.lib, "nvmlDeviceGetPowerUsage");
    nv.temp = (nvmlReturn_t (*)(nvmlDevice_t, int, unsigned *))dlsym(nv.lib, "nvmlDeviceGetTemperature");
    nv.energy = (nvmlReturn_t (*)(nvmlDevice_t, unsigned long long *))dlsym(nv.lib, "nvmlDeviceGetTotalEnergyConsumption");
    /* Renamed in driver 535; the older name stays for older drivers. */
    void *reasons = dlsym(nv.lib, "nvmlDeviceGetCurrentClocksEventReasons");
    nv.reasons = (nvmlReturn_t (*)(nvmlDevice_t, unsigned long long *))(
        reasons ? reasons : dlsym(nv.lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!init || !by_bus || !max_clock || !nv.clock || !nv.power || !nv.temp || !nv.reasons || !nv.energy)
        return unavailable("libnvidia-ml.so.1 lacks an entry point kbench needs", "");
    nvmlReturn_t e = init();
    if (e != 0)
        return unavailable("nvmlInit: ", nvml_error(e));
    /* By PCI bus id, so that NVML's device is the CUDA device even when
     * CUDA_VISIBLE_DEVICES renumbers them. */
    if ((e = by_bus(pci_bus_id, &nv.dev)) != 0)
        return unavailable("no NVML device at the CUDA device's bus id: ", nvml_error(e));
    unsigned mhz = 0;
    if (max_clock(nv.dev, NVML_CLOCK_SM, &mhz) == 0 && mhz > 0)
        nv.max_clock_mhz = mhz;
    snprintf(nv.status, sizeof nv.status, "available");
    return 0;
}

/* NVML's count of GPUs, or -1 where it may not be CUDA's: NVML missing,
 * CUDA_VISIBLE_DEVICES set (it hides and reorders devices), or a GPU in
 * MIG mode (CUDA sees its instances, not the GPU).  Some 10 ms, against
 * CUDA's 0.3-0.45 s of cuInit, and no CUDA touched: it runs in a process
 * that forks. */
int kb_nvml_gpu_count(void)
{
    if (getenv("CUDA_VISIBLE_DEVICES"))
        return -1;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -1;
    nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(lib, "nvmlInit_v2");
    nvmlReturn_t (*shutdown)(void) = (nvmlReturn_t (*)(void))dlsym(lib, "nvmlShutdown");
    nvmlReturn_t (*count)(unsigned *) = (nvmlReturn_t (*)(unsigned *))dlsym(lib, "nvmlDeviceGetCount_v2");
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) =
        (nvmlReturn_t (*)(unsigned, nvmlDevice_t *))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*mig)(nvmlDevice_t, unsigned *, unsigned *) =
        (nvmlReturn_t (*)(nvmlDevice_t, unsigned *, unsigned *))dlsym(lib, "nvmlDeviceGetMigMode");
    unsigned n = 0;
    int answer = -1;
    if (init && shutdown && count && by_index && mig && init() == 0) {
        if (count(&n) == 0 && n > 0) {
            answer = (int)n;
            for (unsigned i = 0; i < n && answer > 0; ++i) {
                nvmlDevice_t d;
                unsigned current = 0, pending = 0;
                /* A GPU without MIG answers NVML_ERROR_NOT_SUPPORTED: it counts. */
                if (by_index(i, &d) != 0 || (mig(d, &current, &pending) == 0 && current))
                    answer = -1;
            }
        }
        shutdown();
    }
    dlclose(lib);
    return answer;
}

const char *kb_nvml_status(void)
{
    return nv.status;
}

double kb_nvml_max_clock_mhz(void)
{
    return nv.max_clock_mhz;
}

/* One reading; a value NVML does not give stays 0, and the window skips it. */
void kb_nvml_sample(kb_nvml_window *w)
{
    kb_nvml_reading r = {0};
    unsigned v;
    if (!nv.lib)
        return;
    if (nv.clock(nv.dev, NVML_CLOCK_SM, &v) == 0)
        r.clock_mhz = v;
    if (nv.power(nv.dev, &v) == 0)
        r.power_w = v * 1e-3;
    if (nv.temp(nv.dev, NVML_TEMPERATURE_GPU, &v) == 0)
        r.temp_c = v;
    if (nv.reasons(nv.dev, &r.reasons) != 0)
        r.reasons = 0;
    kb_nvml_add(w, &r, nv.max_clock_mhz);
}

/* Whether the GPU's clock is held down by a power or thermal limit now. */
int kb_nvml_limited(void)
{
    unsigned long long reasons = 0;
    return nv.lib && nv.reasons(nv.dev, &reasons) == 0 && (reasons & KB_THR_POWER_THERMAL) != 0;
}

/* A call of some 4 ms on the H100. */
int kb_nvml_energy(unsigned long long *mj)
{
    return nv.lib && nv.energy(nv.dev, mj) == 0 ? 0 : -1;
}

/* The counter at a row's start, read on a thread of its own so that the
 * timing thread does not stall 4 ms a row (7 ms a row with the end's read,
 * a fifth of a --quick sweep).  The thread belongs to the process that
 * started it: a forked worker starts its own. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pid_t owner;         /* the process whose thread serves requests */
    int asked, answered; /* requests made and read, in turn */
    int ok;
    unsigned long long mj;
} reader = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *read_energy_loop(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&reader.mu);
    for (;;) {
        while (reader.answered == reader.asked)
            pthread_cond_wait(&reader.cv, &reader.mu);
        pthread_mutex_unlock(&reader.mu);
        unsigned long long mj = 0;
        int ok = kb_nvml_energy(&mj) == 0;
        pthread_mutex_lock(&reader.mu);
        reader.mj = mj;
        reader.ok = ok;
        reader.answered = reader.asked;
        pthread_cond_broadcast(&reader.cv);
    }
    return NULL;
}

int kb_nvml_energy_begin(void)
{
    if (!nv.lib)
        return -1;
    pthread_mutex_lock(&reader.mu);
    if (reader.owner != getpid()) {
        pthread_t t;
        reader.asked = reader.answered = 0;
        if (pthread_create(&t, NULL, read_energy_loop, NULL) != 0) {
            pthread_mutex_unlock(&reader.mu);
            return -1;
        }
        pthread_detach(t);
        reader.owner = getpid();
    }
    while (reader.answered != reader.asked) /* the last request's answer is still coming */
        pthread_cond_wait(&reader.cv, &reader.mu);
    reader.asked++;
    pthread_cond_broadcast(&reader.cv);
    pthread_mutex_unlock(&reader.mu);
    return 0;
}

int kb_nvml_energy_begun(unsigned long long *mj)
{
    pthread_mutex_lock(&reader.mu);
    while (reader.answered != reader.asked)
        pthread_cond_wait(&reader.cv, &reader.mu);
    int ok = reader.ok;
    *mj = reader.mj;
    pthread_mutex_unlock(&reader.mu);
    return ok ? 0 : -1;
}
