/* The one timing engine (timing.h): how every timed row of kbench is
 * sampled, when its sampling stops, what NVML read meanwhile, and where the
 * sweep's wall time went. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "harness/timing.h"
#include "kernels/cuda_util.h"

#define WARMUP_FIRST_S 0.2   /* the first timed row of a process warms the GPU up from idle; */
                             /* later rows find it busy and warm up by one launch */
#define NVML_EVERY_S 0.01    /* an NVML reading (some 40 us) between samples this often */
#define ENERGY_S 1.0         /* --energy: the H100's counter moves in 100 ms steps, so 10% at most */
#define SETTLE_S 1.0         /* a GPU at its power or thermal limit idles this long before a row's samples: */
                             /* on the H100 the row after a power-capped one then runs at 1980 MHz, not ~1400 */

double kb_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- phase accounting ---- */

static const char *const phase_names[PH_COUNT] = {
    "device alloc and upload", "waiting for inputs and reference", "input reset", "variant setup and teardown",
    "first launch", "check", "warm-up",
    "timed launches", "L2 flush", "NVML", "energy windows", "settling"};
static double phase_s[PH_COUNT], host_inputs_s, host_reference_s;

double kb_phase_end(int ph, double t0)
{
    double t = kb_now_s();
    phase_s[ph] += t - t0;
    return t;
}

void kb_phase_host(double inputs_s, double reference_s)
{
    host_inputs_s += inputs_s;
    host_reference_s += reference_s;
}

void kb_run_phases(FILE *f, double total_s, double csv_s)
{
    double sum = csv_s;
    fprintf(f, "time: CSV writes %.1f s,", csv_s);
    for (int i = 0; i < PH_COUNT; ++i) {
        fprintf(f, " %s %.1f s,", phase_names[i], phase_s[i]);
        sum += phase_s[i];
    }
    fprintf(f, " other %.1f s; total %.1f s\n", total_s - sum, total_s);
    fprintf(f, "time on the host, mostly while the GPU timed the case before: inputs %.1f s, reference %.1f s\n",
            host_inputs_s, host_reference_s);
}

/* ---- the stop rule ---- */

/* The rule with each zero replaced by its default. */
static kb_stop_rule resolved(const kb_stop_rule *r)
{
    return (kb_stop_rule){r->cap_s > 0 ? r->cap_s : KB_STOP_CAP_S, r->max_noise > 0 ? r->max_noise : KB_STOP_MAX_NOISE,
                          r->min_samples > 0 ? r->min_samples : KB_STOP_MIN_SAMPLES};
}

int kb_stop_rule_met(const kb_stop_rule *rule, const kb_stats *st, double elapsed_s)
{
    const kb_stop_rule r = resolved(rule);
    if (st->n < KB_MIN_SAMPLES)
        return 0;
    return st->n >= KB_MAX_SAMPLES || elapsed_s > r.cap_s ||
           (st->n >= r.min_samples && kb_median_noise(st) < r.max_noise);
}

void kb_stop_rule_text(const kb_stop_rule *rule, char *buf, size_t len)
{
    const kb_stop_rule r = resolved(rule);
    snprintf(buf, len, "median noise (sigma from the MAD) under %g%% from %d samples, or %g s, or %d samples",
             100 * r.max_noise, r.min_samples, r.cap_s, KB_MAX_SAMPLES);
}

int kb_is_stop_flag(const char *flag)
{
    return !strcmp(flag, "--max-time") || !strcmp(flag, "--max-noise") || !strcmp(flag, "--min-samples");
}

int kb_parse_stop_flag(const char *flag, const char *val, kb_stop_rule *rule, char *err, size_t errlen)
{
    uint64_t n;
    double pct;
    if (!strcmp(flag, "--max-noise")) {
        if (kb_real_flag(flag, val, 0.01, 0, 100, "a percentage", &pct, err, errlen) != 0)
            return -1;
        rule->max_noise = pct / 100;
        return 0;
    }
    if (!strcmp(flag, "--max-time"))
        return kb_real_flag(flag, val, 0, 1, 3600, "seconds", &rule->cap_s, err, errlen);
    /* --min-samples: at least the samples a median needs, at most those a row takes. */
    if (kb_int_flag(flag, val, KB_MIN_SAMPLES, KB_MAX_SAMPLES, &n, err, errlen) != 0)
        return -1;
    rule->min_samples = (int)n;
    return 0;
}

kb_stop_rule kb_options_stop_rule(const kb_options *o)
{
    return (kb_stop_rule){o->row_cap_s, o->max_noise, o->min_samples};
}

/* ---- NVML over a row's samples ---- */

/* Readings at both ends and every NVML_EVERY_S between samples, never
 * inside a sample's events; the energy counter at the start on nvml.c's
 * own thread, and at the end only for a window long enough to count.
 * Without NVML it costs nothing and reads nothing. */
typedef struct {
    kb_nvml_window w;
    unsigned long long mj0;
    int have_mj0;
    double t0, last;
} power_meter;

static void meter_start(power_meter *m)
{
    memset(m, 0, sizeof *m);
    /* Read while the first samples run: some 4 ms late in a window that
     * counts only from 1 s on, inside the counter's 100 ms steps. */
    m->have_mj0 = kb_nvml_energy_begin() == 0;
    kb_nvml_sample(&m->w);
    m->t0 = m->last = kb_now_s();
}

static void meter_tick(power_meter *m)
{
    double t = kb_now_s();
    if (t - m->last >= NVML_EVERY_S) {
        kb_nvml_sample(&m->w);
        m->last = t;
    }
}

static void meter_stop(power_meter *m, int units, kb_timing *out)
{
    unsigned long long mj1 = 0;
    kb_nvml_sample(&m->w);
    double window = kb_now_s() - m->t0;
    /* The end's reading only for a window that can give an energy figure. */
    if (m->have_mj0 && window >= KB_ENERGY_MIN_S && kb_nvml_energy_begun(&m->mj0) == 0 &&
        kb_nvml_energy(&mj1) == 0)
        out->mj_per_launch = kb_mj_per_launch(m->mj0, mj1, window, units);
    out->nvml = m->w;
}

/* ---- a row across GPUs ---- */

/* Timed on every GPU's own stream: its launches only enqueue each GPU's
 * part there (kb_ranks_set_direct), with no fork from and join into the
 * first GPU's stream, which cost some 20 us a launch of cross-GPU event
 * waits.  A sample is `batch` launches back to back behind a gate that
 * starts all GPUs at once (as nccl-tests times a loop of iterations); its
 * time is the slowest GPU's over `batch`. */
#define RANK_BATCH_MS 0.2 /* a sample's launches take at least this long, if 64 fit */
#define RANK_BATCH_MAX 64

typedef struct {
    kb_ranks g;
    kb_gate *gate;
    cudaEvent_t start[KB_MAX_RANKS], stop[KB_MAX_RANKS];
    int batch;
} rank_timer;

static void rank_timer_close(rank_timer *t)
{
    for (int r = 0; r < t->g.n; ++r) {
        cudaSetDevice(t->g.device[r]);
        if (t->start[r])
            cudaEventDestroy(t->start[r]);
        if (t->stop[r])
            cudaEventDestroy(t->stop[r]);
    }
    kb_ranks_close(&t->g);
    kb_gate_destroy(t->gate);
}

static const char *rank_timer_open(rank_timer *t)
{
    *t = (rank_timer){.batch = 1};
    const char *e = kb_ranks_open(&t->g);
    if (!e)
        e = kb_gate_create(&t->gate);
    for (int r = 0; r < t->g.n && !e; ++r)
        if (!(e = kb_cuda_status(cudaSetDevice(t->g.device[r]))) &&
            !(e = kb_cuda_status(cudaEventCreate(&t->start[r]))))
            e = kb_cuda_status(cudaEventCreate(&t->stop[r]));
    if (t->g.n)
        cudaSetDevice(t->g.device[0]);
    return e;
}

/* The hook runs before the gates close: work it waits for must not queue
 * behind them. */
static const char *rank_sample(rank_timer *t, const kb_timed *w, double *ms)
{
    const char *e = w->before_sample ? w->before_sample(w->arg) : NULL;
    for (int r = 0; r < t->g.n && !e; ++r)
        if (!(e = kb_cuda_status(cudaSetDevice(t->g.device[r]))) && !(e = kb_gate_close(t->gate, t->g.stream[r])))
            e = kb_cuda_status(cudaEventRecord(t->start[r], t->g.stream[r]));
    cudaSetDevice(t->g.device[0]);
    kb_ranks_set_direct(1);
    for (int k = 0; k < t->batch && !e; ++k)
        e = w->launch(w->arg, 0);
    kb_ranks_set_direct(0);
    for (int r = 0; r < t->g.n && !e; ++r)
        if (!(e = kb_cuda_status(cudaSetDevice(t->g.device[r]))))
            e = kb_cuda_status(cudaEventRecord(t->stop[r], t->g.stream[r]));
    kb_gate_open(t->gate); /* even after a failure: nothing queued may wait forever */
    float slowest = 0;
    for (int r = 0; r < t->g.n; ++r) {
        float each = 0;
        cudaSetDevice(t->g.device[r]);
        cudaError_t s = cudaEventSynchronize(t->stop[r]);
        if (!e && s == cudaSuccess)
            s = cudaEventElapsedTime(&each, t->start[r], t->stop[r]);
        if (!e && s != cudaSuccess)
            e = cudaGetErrorString(s);
        slowest = each > slowest ? each : slowest;
    }
    cudaSetDevice(t->g.device[0]);
    if (!e && kb_gate_timed_out(t->gate))
        e = "the GPUs' start gate waited 2 s: a launch blocked the host";
    *ms = slowest / t->batch;
    return e;
}

/* One sample to set the batch of a row across GPUs, not kept. */
static const char *rank_timer_calibrate(rank_timer *t, const kb_timed *w)
{
    double ms;
    const char *e = rank_sample(t, w, &ms);
    if (!e && ms > 0 && ms < RANK_BATCH_MS)
        t->batch = ms * RANK_BATCH_MAX < RANK_BATCH_MS ? RANK_BATCH_MAX : (int)ceil(RANK_BATCH_MS / ms);
    return e;
}

/* ---- a row on one GPU ---- */

/* L2 flushed (unless hot), then one launch between events on the stream.
 *
 * A memset, not a read, empties L2: it leaves L2 full of dirty lines that
 * the sample pays to write back, as a kernel in a program pays for its
 * predecessor's outputs, while its own last writes stay in L2 unpaid.
 * Read-flushed (clean) L2 pays only the second half: on the H100 a 64 MB
 * copy then ran at 3241 GB/s, above the 3030 the DRAM sustains (memset:
 * 2506); from 256 MB moved every row gained some 5 us. */
typedef struct {
    cudaEvent_t flushed, start, stop;
    void *flush;
    size_t flush_bytes; /* 0: hot, no flush */
    double flush_ms;    /* summed over the samples, for the L2 flush phase */
} flush_timer;

static const char *flushed_sample(flush_timer *t, const kb_timed *w, int n, double *ms)
{
    const char *e = w->before_sample ? w->before_sample(w->arg) : NULL;
    if (e)
        return e;
    cudaEventRecord(t->flushed, w->stream);
    if (t->flush_bytes && cudaMemsetAsync(t->flush, n & 0xff, t->flush_bytes, w->stream) != cudaSuccess)
        return kb_cuda_status(cudaGetLastError());
    cudaEventRecord(t->start, w->stream);
    e = w->launch(w->arg, w->stream);
    cudaEventRecord(t->stop, w->stream);
    cudaError_t s = cudaEventSynchronize(t->stop);
    if (e || s != cudaSuccess)
        return e ? e : cudaGetErrorString(s);
    float pair, flush;
    cudaEventElapsedTime(&pair, t->start, t->stop);
    cudaEventElapsedTime(&flush, t->flushed, t->start);
    t->flush_ms += flush;
    *ms = pair;
    return w->sample_ms ? w->sample_ms(w->arg, ms) : NULL;
}

/* ---- warm-up and settling ---- */

/* Whether this process has warmed its GPUs up yet (the first timed row does). */
static int gpu_warm;

void kb_run_gpus_busy(void) { gpu_warm = 1; }

/* Launch once and wait; a CUDA error here fails the row. */
static const char *launch_sync(const kb_timed *w)
{
    const char *e = w->before_sample ? w->before_sample(w->arg) : NULL;
    if (!e)
        e = w->launch(w->arg, w->stream);
    return e ? e : kb_cuda_status(cudaDeviceSynchronize());
}

static const char *warm_up(const kb_timed *w)
{
    const char *e;
    double t0 = kb_now_s();
    do
        if ((e = launch_sync(w)))
            return e;
    while (!gpu_warm && kb_now_s() - t0 < WARMUP_FIRST_S);
    gpu_warm = 1;
    kb_phase_end(PH_WARMUP, t0);
    return NULL;
}

/* When the GPU reads a power or thermal limit (the row before, or the
 * first row's warm-up, ran it into its power cap), idle SETTLE_S so that
 * this row's samples start from the clock the limit gives back, not from
 * the debt of the work before it: else every row is timed at a clock that
 * depends on its place in the sweep, and the baselines, which come first,
 * gain. */
static void settle(void)
{
    if (!kb_nvml_limited())
        return;
    double t0 = kb_now_s();
    const struct timespec nap = {(time_t)SETTLE_S, (long)((SETTLE_S - (time_t)SETTLE_S) * 1e9)};
    nanosleep(&nap, NULL);
    kb_phase_end(PH_SETTLE, t0);
}

/* ---- the samples ---- */

/* A row's sampling: the one-GPU events, or the timer across GPUs. */
typedef struct {
    const kb_timed *w;
    flush_timer ft;
    rank_timer rt;
    int units;
} sampler;

static const char *sampler_open(sampler *s, const kb_timed *w, const kb_time_opts *o)
{
    memset(s, 0, sizeof *s);
    s->w = w;
    s->units = w->units > 0 ? w->units : 1;
    s->ft.flush = o->flush;
    s->ft.flush_bytes = o->hot || !o->flush ? 0 : o->flush_bytes;
    const char *e = kb_cuda_status(cudaEventCreate(&s->ft.flushed));
    if (!e)
        e = kb_cuda_status(cudaEventCreate(&s->ft.start));
    if (!e)
        e = kb_cuda_status(cudaEventCreate(&s->ft.stop));
    if (!e && w->ranks && !(e = rank_timer_open(&s->rt)))
        e = rank_timer_calibrate(&s->rt, w);
    return e;
}

static void sampler_close(sampler *s)
{
    if (s->w->ranks)
        rank_timer_close(&s->rt);
    if (s->ft.flushed)
        cudaEventDestroy(s->ft.flushed);
    if (s->ft.start)
        cudaEventDestroy(s->ft.start);
    if (s->ft.stop)
        cudaEventDestroy(s->ft.stop);
}

/* Sample n, in ms per unit. */
static const char *one_sample(sampler *s, int n, double *ms)
{
    const char *e = s->w->ranks ? rank_sample(&s->rt, s->w, ms) : flushed_sample(&s->ft, s->w, n, ms);
    *ms /= s->units;
    return e;
}

/* Samples until the rule is met, NVML read over them. */
static const char *sample(sampler *s, const kb_stop_rule *rule, kb_timing *out)
{
    double *samples = malloc(KB_MAX_SAMPLES * sizeof *samples), *scratch = malloc(KB_MAX_SAMPLES * sizeof *scratch);
    const char *e = samples && scratch ? NULL : "out of host memory for the samples";
    power_meter meter;
    double t0 = kb_now_s();
    meter_start(&meter);
    t0 = kb_phase_end(PH_NVML, t0);
    int n = 0;
    while (!e) {
        double ms;
        if ((e = one_sample(s, n, &ms)))
            break;
        samples[n++] = ms;
        meter_tick(&meter);
        if (n < KB_MIN_SAMPLES)
            continue;
        memcpy(scratch, samples, (size_t)n * sizeof *samples);
        kb_stats_compute(scratch, n, &out->ms);
        if (kb_stop_rule_met(rule, &out->ms, kb_now_s() - t0))
            break;
    }
    phase_s[PH_FLUSH] += s->ft.flush_ms * 1e-3;
    double timed = kb_phase_end(PH_TIMING, t0);
    phase_s[PH_TIMING] -= s->ft.flush_ms * 1e-3;
    if (n) {
        meter_stop(&meter, n * (s->w->ranks ? s->rt.batch : 1) * s->units, out);
        kb_phase_end(PH_NVML, timed);
    }
    free(samples);
    free(scratch);
    return e;
}

/* --energy: back-to-back launches for ENERGY_S, no flushes and no waits
 * between them, read on the total-energy counter: the row's own energy, in
 * place of the samples' (which have the flushes in them).  In batches of
 * some 50 ms, so the host never leaves the GPU idle. */
static const char *energy_window(const kb_timed *w, kb_timing *out)
{
    unsigned long long mj0, mj1;
    if (kb_nvml_energy(&mj0) != 0)
        return NULL;
    const int units = w->units > 0 ? w->units : 1;
    double t0 = kb_now_s(), each_s = out->ms.median * units * 1e-3;
    int batch = each_s > 0 && each_s < 0.05 ? (int)(0.05 / each_s) : 1, launches = 0;
    const char *e = NULL;
    while (!e && kb_now_s() - t0 < ENERGY_S) {
        e = w->before_sample ? w->before_sample(w->arg) : NULL;
        for (int k = 0; k < batch && !e; ++k)
            e = w->launch(w->arg, w->stream);
        if (!e)
            e = kb_cuda_status(cudaDeviceSynchronize());
        launches += batch;
    }
    if (!e && kb_nvml_energy(&mj1) == 0)
        out->mj_per_launch = kb_mj_per_launch(mj0, mj1, kb_now_s() - t0, launches * units);
    kb_phase_end(PH_ENERGY, t0);
    return e;
}

const char *kb_time(const kb_timed *w, const kb_time_opts *o, kb_timing *out)
{
    memset(out, 0, sizeof *out);
    const char *e = warm_up(w);
    if (e)
        return e;
    settle();
    sampler s;
    e = sampler_open(&s, w, o);
    if (!e)
        e = sample(&s, &o->rule, out);
    if (!e && w->energy)
        e = energy_window(w, out);
    sampler_close(&s);
    return e;
}

void kb_timing_fill(const kb_timing *t, kb_result *r)
{
    r->time_ms = t->ms;
    kb_nvml_summarize(&t->nvml, t->mj_per_launch, kb_nvml_max_clock_mhz(), r);
}
