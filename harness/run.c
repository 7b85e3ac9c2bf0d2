/* Running one row: check, time, check again.  The inputs, reference and
 * device tensors the row shares with its op, shape and dtype are its case
 * (case.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include "harness/case.h"
#include "kernels/cuda_util.h"

#define WARMUP_FIRST_S 0.2   /* the first timed row of a process warms the GPU up from idle; */
                             /* later rows find it busy and warm up by one launch */
#define MIN_SAMPLES 3
#define SETTLE_SAMPLES 20    /* the noise estimate may end a row only from here (--min-samples): at 3 */
                             /* samples it stopped 0.1 ms rows whose medians then moved a point between runs */
#define MAX_SAMPLES 2000
#define TARGET_NOISE 0.01    /* stop once the median's relative noise is under 1% (--max-noise) */
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

/* kb_case_check, its time counted as the check phase. */
static cudaError_t timed_check(const kb_case *c, kb_math math, kb_result *r)
{
    double t0 = kb_now_s();
    cudaError_t e = kb_case_check(c, math, r);
    kb_phase_end(PH_CHECK, t0);
    return e;
}

static void set_reason(kb_result *r, kb_status s, const char *fmt, const char *what)
{
    r->status = s;
    snprintf(r->reason, sizeof r->reason, fmt, what);
}

/* Launch once and wait; a CUDA error here fails the row. */
static const char *launch_sync(const kb_variant *v, const void *args, void *ctx)
{
    const char *e = v->launch(args, ctx, 0);
    if (e)
        return e;
    cudaError_t s = cudaDeviceSynchronize();
    return s == cudaSuccess ? NULL : cudaGetErrorString(s);
}

/* The failed check in words; an op with several outputs names the one. */
static void describe_failure(kb_result *r, const char *when, int outputs)
{
    char at[80];
    snprintf(at, sizeof at, "%s%s%s", when, outputs > 1 ? ": " : "", outputs > 1 ? r->check.tensor : "");
    if (r->check.nonfinite)
        snprintf(r->reason, sizeof r->reason, "%s: %lld NaN/Inf outputs (unwritten or overflowed)",
                 at, (long long)r->check.nonfinite);
    else if (r->check.bad_elems)
        snprintf(r->reason, sizeof r->reason,
                 "%s: %lld elements over tolerance (the largest error, %.3g, where the bound is %.3g)", at,
                 (long long)r->check.bad_elems, r->check.max_abs_err, r->check.worst_tol);
    else
        snprintf(r->reason, sizeof r->reason, "%s: relative L2 error %.3g over its bound",
                 at, r->check.rel_l2_err);
}

/* NVML over a row's timed phase: readings at both ends and every
 * NVML_EVERY_S between samples, never inside an event pair; the energy
 * counter at the start on nvml.c's own thread, and at the end only for a
 * window long enough to count.  Without NVML it costs nothing and reads
 * nothing. */
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

static void meter_stop(power_meter *m, int launches, kb_result *r)
{
    unsigned long long mj1 = 0;
    kb_nvml_sample(&m->w);
    double window = kb_now_s() - m->t0, mj = 0;
    /* The end's reading only for a window that can give an energy figure. */
    if (m->have_mj0 && window >= KB_ENERGY_MIN_S && kb_nvml_energy_begun(&m->mj0) == 0 &&
        kb_nvml_energy(&mj1) == 0)
        mj = kb_mj_per_launch(m->mj0, mj1, window, launches);
    kb_nvml_summarize(&m->w, mj, kb_nvml_max_clock_mhz(), r);
}

/* When a row's sampling stops: at cap_s, or from min_samples on once the
 * median's relative noise is under max_noise. */
typedef struct {
    double cap_s, max_noise;
    int min_samples;
} stop_rule;

/* The options' rule; their zeros (a caller that set none) mean the defaults. */
static stop_rule stop_rule_of(const kb_options *o)
{
    return (stop_rule){o->row_cap_s, o->max_noise > 0 ? o->max_noise : TARGET_NOISE,
                       o->min_samples > 0 ? o->min_samples : SETTLE_SAMPLES};
}

void kb_stop_rule_text(const kb_options *o, char *buf, size_t len)
{
    stop_rule s = stop_rule_of(o);
    snprintf(buf, len, "median noise (sigma from the MAD) under %g%% from %d samples, or %g s, or %d samples",
             100 * s.max_noise, s.min_samples, s.cap_s, MAX_SAMPLES);
}

/* A distributed row is timed on every GPU's own stream: its launches only
 * enqueue each GPU's part there (kb_ranks_set_direct), with no fork from
 * and join into the first GPU's stream, which cost some 20 us a launch of
 * cross-GPU event waits.  A sample is `batch` launches back to back behind
 * a gate that starts all GPUs at once (as nccl-tests times a loop of
 * iterations); its time is the slowest GPU's over `batch`. */
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

static const char *rank_sample(rank_timer *t, const kb_variant *v, const void *args, void *ctx, float *ms)
{
    const char *e = NULL;
    for (int r = 0; r < t->g.n && !e; ++r)
        if (!(e = kb_cuda_status(cudaSetDevice(t->g.device[r]))) && !(e = kb_gate_close(t->gate, t->g.stream[r])))
            e = kb_cuda_status(cudaEventRecord(t->start[r], t->g.stream[r]));
    cudaSetDevice(t->g.device[0]);
    kb_ranks_set_direct(1);
    for (int k = 0; k < t->batch && !e; ++k)
        e = v->launch(args, ctx, 0);
    kb_ranks_set_direct(0);
    for (int r = 0; r < t->g.n && !e; ++r)
        if (!(e = kb_cuda_status(cudaSetDevice(t->g.device[r]))))
            e = kb_cuda_status(cudaEventRecord(t->stop[r], t->g.stream[r]));
    kb_gate_open(t->gate); /* even after a failure: nothing queued may wait forever */
    *ms = 0;
    for (int r = 0; r < t->g.n; ++r) {
        float each = 0;
        cudaSetDevice(t->g.device[r]);
        cudaError_t s = cudaEventSynchronize(t->stop[r]);
        if (!e && s == cudaSuccess)
            s = cudaEventElapsedTime(&each, t->start[r], t->stop[r]);
        if (!e && s != cudaSuccess)
            e = cudaGetErrorString(s);
        *ms = each > *ms ? each : *ms;
    }
    cudaSetDevice(t->g.device[0]);
    if (!e && kb_gate_timed_out(t->gate))
        e = "the GPUs' start gate waited 2 s: a launch blocked the host";
    *ms /= t->batch;
    return e;
}

/* One sample to set the batch of a distributed row, not kept. */
static const char *rank_timer_calibrate(rank_timer *t, const kb_variant *v, const void *args, void *ctx)
{
    float ms;
    const char *e = rank_sample(t, v, args, ctx, &ms);
    if (!e && ms > 0 && ms < RANK_BATCH_MS)
        t->batch = ms * RANK_BATCH_MAX < RANK_BATCH_MS ? RANK_BATCH_MAX : (int)ceil(RANK_BATCH_MS / ms);
    return e;
}

/* One sample of a row on one GPU: L2 flushed (unless hot), then one
 * launch between events on the legacy stream.
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
    size_t flush_bytes;     /* 0: hot, no flush */
    const kb_case *inouts;  /* a case whose inouts are restored before each sample, or NULL */
} flush_timer;

static const char *flushed_sample(flush_timer *t, const kb_variant *v, const void *args, void *ctx, int n,
                                  float *ms, float *flush_ms)
{
    /* Before the flush, so the copy's traffic leaves L2 as every sample's does. */
    if (t->inouts && kb_case_restore_inouts(t->inouts) != cudaSuccess)
        return kb_cuda_status(cudaGetLastError());
    cudaEventRecord(t->flushed, 0);
    if (t->flush_bytes && cudaMemsetAsync(t->flush, n & 0xff, t->flush_bytes, 0) != cudaSuccess)
        return kb_cuda_status(cudaGetLastError());
    cudaEventRecord(t->start, 0);
    const char *e = v->launch(args, ctx, 0);
    cudaEventRecord(t->stop, 0);
    cudaError_t s = cudaEventSynchronize(t->stop);
    if (e || s != cudaSuccess)
        return e ? e : cudaGetErrorString(s);
    cudaEventElapsedTime(ms, t->start, t->stop);
    cudaEventElapsedTime(flush_ms, t->flushed, t->start);
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

/* Whether this process has warmed its GPUs up yet (the first timed row does). */
static int gpu_warm;

void kb_run_gpus_busy(void) { gpu_warm = 1; }

/* kb_time_variant, also metering power into r when r is not NULL; with
 * `ranks`, timed on every GPU's stream (rank_sample); with `inouts`, that
 * case's inouts restored before each sample (not yet across GPUs). */
static const char *time_variant(const kb_variant *v, const void *args, void *ctx, int hot, int ranks,
                                const kb_case *inouts, stop_rule rule, void *flush, size_t flush_bytes,
                                kb_stats *st, kb_result *r)
{
    const char *e;
    double t0 = kb_now_s();
    do
        if ((e = launch_sync(v, args, ctx)))
            return e;
    while (!gpu_warm && kb_now_s() - t0 < WARMUP_FIRST_S);
    gpu_warm = 1;
    kb_phase_end(PH_WARMUP, t0);
    settle();

    power_meter meter;
    flush_timer ft = {.flush = flush, .flush_bytes = hot ? 0 : flush_bytes, .inouts = inouts};
    rank_timer rt;
    cudaEventCreate(&ft.flushed);
    cudaEventCreate(&ft.start);
    cudaEventCreate(&ft.stop);
    double flush_ms = 0;
    double *samples = malloc(MAX_SAMPLES * sizeof *samples), *scratch = malloc(MAX_SAMPLES * sizeof *scratch);
    int n = 0;
    if (ranks && !(e = rank_timer_open(&rt)))
        e = rank_timer_calibrate(&rt, v, args, ctx);
    if (r && !e) {
        t0 = kb_now_s();
        meter_start(&meter);
        kb_phase_end(PH_NVML, t0);
    }
    t0 = kb_now_s();
    while (!e) {
        float ms, flush_one = 0;
        if ((e = ranks ? rank_sample(&rt, v, args, ctx, &ms) : flushed_sample(&ft, v, args, ctx, n, &ms, &flush_one)))
            break;
        flush_ms += flush_one;
        samples[n++] = ms;
        if (r)
            meter_tick(&meter);
        if (n < MIN_SAMPLES)
            continue;
        memcpy(scratch, samples, (size_t)n * sizeof *samples);
        kb_stats_compute(scratch, n, st);
        if (n == MAX_SAMPLES || kb_now_s() - t0 > rule.cap_s ||
            (n >= rule.min_samples && kb_median_noise(st) < rule.max_noise))
            break;
    }
    phase_s[PH_FLUSH] += flush_ms * 1e-3;
    double timed = kb_phase_end(PH_TIMING, t0);
    phase_s[PH_TIMING] -= flush_ms * 1e-3;
    if (r && n) {
        meter_stop(&meter, ranks ? n * rt.batch : n, r);
        kb_phase_end(PH_NVML, timed);
    }
    if (ranks)
        rank_timer_close(&rt);
    cudaEventDestroy(ft.flushed);
    cudaEventDestroy(ft.start);
    cudaEventDestroy(ft.stop);
    free(samples);
    free(scratch);
    return e;
}

const char *kb_time_variant(const kb_variant *v, const void *args, void *ctx, int hot,
                            double cap_s, void *flush, size_t flush_bytes, kb_stats *st, kb_result *r)
{
    return time_variant(v, args, ctx, hot, 0, NULL, (stop_rule){cap_s, TARGET_NOISE, SETTLE_SAMPLES}, flush,
                        flush_bytes, st, r);
}

int kb_wants_energy(const kb_options *o, const kb_op *op, const kb_shape *s, kb_dtype t)
{
    if (!o->energy)
        return 0;
    if (o->sizes)
        return 1;
    kb_shape *shapes, *largest = NULL;
    char err[256];
    int n = kb_default_shapes(op, &shapes, err, sizeof err);
    for (int i = 0; i < n; ++i) {
        double f = op->flops(&shapes[i]), b = kb_op_bytes(op, &shapes[i], t);
        if (!largest || f > op->flops(largest) || (f == op->flops(largest) && b > kb_op_bytes(op, largest, t)))
            largest = &shapes[i];
    }
    int yes = largest && !memcmp(largest, s, sizeof *s);
    if (n >= 0)
        free(shapes);
    return yes;
}

/* --energy: back-to-back launches for ENERGY_S, no flushes and no waits
 * between them, read on the total-energy counter: the kernel's own energy,
 * in place of the timed phase's (which has the flushes in it).  In
 * batches of some 50 ms, so the host never leaves the GPU idle. */
static const char *energy_window(const kb_variant *v, const void *args, void *ctx, kb_result *r)
{
    unsigned long long mj0, mj1;
    if (kb_nvml_energy(&mj0) != 0)
        return NULL;
    double t0 = kb_now_s(), each_s = r->time_ms.median * 1e-3;
    int batch = each_s > 0 && each_s < 0.05 ? (int)(0.05 / each_s) : 1, launches = 0;
    const char *e = NULL;
    while (!e && kb_now_s() - t0 < ENERGY_S) {
        for (int k = 0; k < batch && !e; ++k)
            e = v->launch(args, ctx, 0);
        if (!e)
            e = kb_cuda_status(cudaDeviceSynchronize());
        launches += batch;
    }
    if (!e && kb_nvml_energy(&mj1) == 0)
        r->mj_per_launch = kb_mj_per_launch(mj0, mj1, kb_now_s() - t0, launches);
    kb_phase_end(PH_ENERGY, t0);
    return e;
}

static kb_case current;
/* After an illegal address or a trap the CUDA context is unusable: every
 * later call fails.  The rows after it are skipped with that reason. */
static int context_lost;

static void run_variant(kb_case *c, const kb_job *job, const kb_options *o, void *flush,
                        size_t flush_bytes, kb_result *r)
{
    const kb_variant *v = job->variant;
    _Alignas(16) char args[256]; /* the op's argument struct (op->args_size) */
    void *ctx = NULL;
    const char *e;
    job->op->bind(&job->shape, c->dev, args);
    int outputs = 0;
    for (int i = 0; i < c->h.n; ++i)
        outputs += kb_is_checked(&c->h.t[i]);
    /* Reset first: a setup may copy the inputs (a tensor-parallel variant
     * spreads its weights over the GPUs), so they must be pristine then. */
    double t0 = kb_now_s();
    cudaError_t reset = kb_case_reset(c);
    t0 = kb_phase_end(PH_RESET, t0);
    e = v->setup ? v->setup(args, &ctx) : NULL;
    t0 = kb_phase_end(PH_SETUP, t0);
    if (e) {
        set_reason(r, KB_SKIP, "setup failed: %s", e);
        return;
    }
    /* The first launch also loads the variant's kernels (and a library's). */
    e = reset == cudaSuccess ? launch_sync(v, args, ctx) : NULL;
    kb_phase_end(PH_FIRST, t0);
    if (reset != cudaSuccess || e) {
        set_reason(r, KB_FAIL, "launch failed: %s", e ? e : "could not reset tensors");
    } else if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
        r->status = KB_FAIL;
        describe_failure(r, "before timing", outputs);
    } else if (!o->check_only) {
        /* NVML's energy counter sees one GPU, not a row that spans several. */
        int energy = kb_wants_energy(o, job->op, &job->shape, v->dtype) && !kb_job_multi_device(job);
        const kb_case *inouts = c->has_inout ? c : NULL;
        if ((e = time_variant(v, args, ctx, r->hot, job->op->distributed, inouts, stop_rule_of(o), flush,
                              flush_bytes, &r->time_ms, r)) ||
            (energy && (e = energy_window(v, args, ctx, r))) ||
            /* The energy window's launches accumulated into the inouts: the
             * check after timing then checks one launch from them restored. */
            (energy && inouts && !(e = kb_cuda_status(kb_case_restore_inouts(c))) &&
             (e = launch_sync(v, args, ctx)))) {
            set_reason(r, KB_FAIL, "failed while timing: %s", e);
        } else {
            r->timed = 1;
            if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
                r->status = KB_FAIL;
                describe_failure(r, "after timing", outputs);
            }
        }
    }
    if (v->teardown) {
        t0 = kb_now_s();
        v->teardown(ctx);
        kb_phase_end(PH_SETUP, t0);
    }
}

/* Why this device cannot run the variant at all, or NULL. */
static const char *unrunnable(const kb_job *job, char *why, size_t len)
{
    const kb_variant *v = job->variant;
    const int *ids;
    int dev = 0, major = 0, minor = 0;
    if (kb_job_too_few_gpus(job, kb_run_devices(&ids), why, len))
        return why;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (v->min_cc > major * 10 + minor) {
        snprintf(why, len, "needs compute capability %d.%d, device has %d.%d", v->min_cc / 10,
                 v->min_cc % 10, major, minor);
        return why;
    }
    return v->unsupported ? v->unsupported(&job->shape) : NULL;
}

void kb_run_plan(const kb_job *jobs, int n) { kb_case_plan(jobs, n); }

/* The GPU the row runs on ("1"), or the run's GPUs it spans ("0+1"). */
static void devices_text(const kb_job *job, char *buf, size_t len)
{
    const int *ids;
    int n = kb_job_multi_device(job) ? kb_run_devices(&ids) : 1, used = 0, dev = 0;
    if (n == 1) {
        cudaGetDevice(&dev);
        snprintf(buf, len, "%d", dev);
        return;
    }
    buf[0] = 0;
    for (int i = 0; i < n && used < (int)len; ++i)
        used += snprintf(buf + used, len - used, "%s%d", i ? "+" : "", ids[i]);
}

void kb_run_job(const kb_job *job, const kb_options *o, void *flush, size_t flush_bytes, kb_result *r)
{
    char why[160];
    const char *skip;
    memset(r, 0, sizeof *r);
    r->op = job->op;
    r->variant = job->variant;
    r->shape = job->shape;
    r->family = job->family;
    r->axis = job->axis;
    /* A collective's buffers stay warm between samples, as nccl-tests leaves them. */
    r->hot = o->hot || job->op->distributed;
    devices_text(job, r->devices, sizeof r->devices);
    r->flops = job->op->flops(&job->shape);
    r->bytes = kb_op_bytes(job->op, &job->shape, job->variant->dtype);
    r->status = KB_PASS;
    if (context_lost) {
        set_reason(r, KB_SKIP, "%s", "the CUDA context was lost at an earlier failure");
        return;
    }
    if ((skip = unrunnable(job, why, sizeof why)) || (skip = kb_case_for(&current, job, why, sizeof why))) {
        set_reason(r, KB_SKIP, "%s", skip);
        return;
    }
    int64_t checked;
    kb_case_rows(&current, &checked, &r->rows_total);
    run_variant(&current, job, o, flush, flush_bytes, r);
    if (r->status == KB_FAIL && cudaDeviceSynchronize() != cudaSuccess)
        context_lost = 1;
}

/* Drop the shared case, e.g. before allocating a large flush buffer elsewhere. */
void kb_run_release(void)
{
    kb_case_release(&current);
}

void kb_run_drop_case(void) { kb_case_free(&current); }
