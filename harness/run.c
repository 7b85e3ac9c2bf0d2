/* Running one row: allocate, fill, poison, check, time, check again.
 *
 * A "case" is what every variant of one (op, shape, dtype) shares: host
 * inputs, the device tensors, the sampled rows and their reference values.
 * It is built once and reused by the variants that follow in the sweep;
 * inputs are uploaded again before each variant, so a variant that
 * scribbles on its inputs cannot hurt the next one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"

#define REF_BUDGET 1e9       /* CPU work (op units) spent on reference rows per case */
#define WARMUP_S 0.05        /* warm up by time, at least one launch */
#define MIN_SAMPLES 3
#define SETTLE_SAMPLES 20    /* the noise estimate may end a row only from here (--min-samples): at 3 */
                             /* samples it stopped 0.1 ms rows whose medians then moved a point between runs */
#define MAX_SAMPLES 2000
#define TARGET_NOISE 0.01    /* stop once the median's relative noise is under 1% (--max-noise) */
#define NVML_EVERY_S 0.01    /* an NVML reading (some 40 us) between samples this often */

typedef struct {
    const kb_op *op;
    kb_shape shape;
    kb_dtype dtype;
    unsigned quirks;              /* the variants' KB_QUIRK_* bits these inputs were made for */
    int n;                        /* tensors */
    kb_tensor t[KB_MAX_TENSORS];
    void *host[KB_MAX_TENSORS];   /* inputs (pinned, for fast re-upload); outputs: the checked rows */
    int pinned[KB_MAX_TENSORS];
    void *dev[KB_MAX_TENSORS];
    int first_out;                /* index of the first output tensor */
    int64_t *rows;                /* sampled output rows, shared by all outputs */
    int nrows;
    double *ref[KB_MAX_TENSORS];  /* per output, nrows * row_len */
    double started;               /* when the host inputs began, for kb_run_phases */
} kb_case;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Where a sweep's wall time goes, summed over its rows (kb_run_phases). */
enum { PH_ALLOC, PH_INPUTS, PH_REFERENCE, PH_UPLOAD, PH_CHECK, PH_WARMUP, PH_TIMING, PH_FLUSH, PH_NVML, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {
    "device alloc", "inputs", "reference", "upload", "check", "warm-up", "timed launches", "L2 flush", "NVML"};
static double phase_s[PH_COUNT];

/* Add the time since t0 to a phase; returns now, to start the next. */
static double phase_end(int ph, double t0)
{
    double t = now_s();
    phase_s[ph] += t - t0;
    return t;
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
}

static void case_free(kb_case *c)
{
    for (int i = 0; i < c->n; ++i) {
        if (c->pinned[i])
            cudaFreeHost(c->host[i]);
        else
            free(c->host[i]);
        free(c->ref[i]);
        if (c->dev[i])
            cudaFree(c->dev[i]);
    }
    free(c->rows);
    memset(c, 0, sizeof *c);
}

static void fill_input(const kb_case *c, int i, float *tmp)
{
    uint64_t seed = kb_seed_for(c->op->name, &c->shape, i);
    if (c->op->fill)
        c->op->fill(&c->shape, i, tmp, c->t[i].elems, seed, c->quirks);
    else
        kb_fill_uniform(tmp, c->t[i].elems, seed);
}

/* The reference of the sampled rows, in chunks across CPU threads: on a big
 * shape it is most of a row's wall time.  References are pure functions of
 * their rows, so chunks are independent. */
static void reference_parallel(kb_case *c)
{
    enum { CHUNK = 16 };
    int nchunks = (c->nrows + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < nchunks; ++k) {
        double *outs[KB_MAX_TENSORS];
        int no = 0, first = k * CHUNK, n = c->nrows - first < CHUNK ? c->nrows - first : CHUNK;
        for (int i = 0; i < c->n; ++i)
            if (c->t[i].is_output)
                outs[no++] = c->ref[i] + (int64_t)first * c->t[i].row_len;
        c->op->reference(&c->shape, c->dtype, (const void *const *)c->host, c->rows + first, n, outs);
    }
}

/* Convert filled values to a tensor's storage: bf16 rounds to nearest even;
 * i32 takes the integral values an op's fill writes for ids. */
static void store_as(kb_dtype t, const float *src, void *dst, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) {
        if (t == KB_BF16)
            ((uint16_t *)dst)[k] = kb_float_to_bf16(src[k]);
        else
            ((int32_t *)dst)[k] = (int32_t)src[k];
    }
}

/* Host inputs (in the storage dtype), sampled rows and their reference. */
static void case_prepare_host(kb_case *c)
{
    c->nrows = kb_pick_rows(c->t[c->first_out].rows, c->op->row_cost(&c->shape), REF_BUDGET,
                            kb_seed_for(c->op->name, &c->shape, 99), &c->rows);
    for (int i = 0; i < c->n; ++i) {
        size_t es = kb_dtype_size(c->t[i].dtype);
        if (c->t[i].is_output) {
            c->host[i] = malloc((size_t)c->nrows * (size_t)c->t[i].row_len * es);
            continue;
        }
        c->pinned[i] = cudaMallocHost(&c->host[i], (size_t)c->t[i].elems * es) == cudaSuccess;
        if (!c->pinned[i])
            c->host[i] = malloc((size_t)c->t[i].elems * es);
        if (c->t[i].dtype == KB_F32) {
            fill_input(c, i, c->host[i]);
            continue;
        }
        float *tmp = malloc((size_t)c->t[i].elems * sizeof *tmp);
        fill_input(c, i, tmp);
        store_as(c->t[i].dtype, tmp, c->host[i], c->t[i].elems);
        free(tmp);
    }
    for (int i = 0; i < c->n; ++i)
        if (c->t[i].is_output)
            c->ref[i] = malloc((size_t)c->nrows * (size_t)c->t[i].row_len * sizeof(double));
    double t0 = phase_end(PH_INPUTS, c->started);
    reference_parallel(c);
    phase_end(PH_REFERENCE, t0);
}

/* Device tensors; a SKIP reason when they do not fit. */
static const char *case_alloc_device(kb_case *c, char *why, size_t len)
{
    int64_t need = 0;
    for (int i = 0; i < c->n; ++i)
        need += c->t[i].elems * (int64_t)kb_dtype_size(c->t[i].dtype);
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if ((double)need > 0.95 * (double)free_b) {
        snprintf(why, len, "needs %.2f GiB of device memory, %.2f GiB free",
                 need / 1073741824.0, free_b / 1073741824.0);
        return why;
    }
    for (int i = 0; i < c->n; ++i) {
        cudaError_t e = cudaMalloc(&c->dev[i], (size_t)c->t[i].elems * kb_dtype_size(c->t[i].dtype));
        if (e != cudaSuccess) {
            c->dev[i] = NULL;
            cudaGetLastError();
            snprintf(why, len, "out of device memory allocating %s: %s", c->t[i].name,
                     cudaGetErrorString(e));
            return why;
        }
    }
    return NULL;
}

/* Make `c` the case for this job, reusing it when op, shape and dtype match. */
static const char *case_for(kb_case *c, const kb_job *job, char *why, size_t len)
{
    kb_dtype t = job->variant->dtype;
    unsigned q = job->variant->quirks;
    if (c->op == job->op && c->dtype == t && c->quirks == q && !memcmp(&c->shape, &job->shape, sizeof c->shape))
        return NULL;
    case_free(c);
    c->op = job->op;
    c->shape = job->shape;
    c->dtype = t;
    c->quirks = q;
    c->n = job->op->ntensors(&job->shape);
    for (int i = c->n - 1; i >= 0; --i) {
        c->t[i] = job->op->tensor(&job->shape, t, i);
        if (c->t[i].is_output)
            c->first_out = i;
    }
    double t0 = now_s();
    const char *skip = case_alloc_device(c, why, len);
    c->started = phase_end(PH_ALLOC, t0);
    if (skip) {
        case_free(c);
        return skip;
    }
    case_prepare_host(c);
    return NULL;
}

/* Upload inputs and poison outputs with NaN (all-ones bytes are NaN in f32 and bf16). */
static cudaError_t case_reset(const kb_case *c)
{
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < c->n && e == cudaSuccess; ++i) {
        size_t bytes = (size_t)c->t[i].elems * kb_dtype_size(c->t[i].dtype);
        e = c->t[i].is_output ? cudaMemset(c->dev[i], 0xff, bytes)
                              : cudaMemcpy(c->dev[i], c->host[i], bytes, cudaMemcpyHostToDevice);
    }
    return e;
}

/* Copy the sampled rows of device tensor `dev` into `host`, one memcpy per
 * run of consecutive rows. */
static cudaError_t read_rows(const kb_case *c, const kb_tensor *t, const void *dev, void *host)
{
    size_t row_bytes = (size_t)t->row_len * kb_dtype_size(t->dtype);
    cudaError_t e = cudaSuccess;
    for (int k = 0; k < c->nrows && e == cudaSuccess;) {
        int run = 1;
        while (k + run < c->nrows && c->rows[k + run] == c->rows[k] + run)
            ++run;
        e = cudaMemcpy((char *)host + k * row_bytes, (const char *)dev + c->rows[k] * row_bytes,
                       run * row_bytes, cudaMemcpyDeviceToHost);
        k += run;
    }
    return e;
}

/* Check every output: NaN/Inf anywhere (counted on the device), and the
 * sampled rows against the reference.  Fills r->check with the worst output. */
static cudaError_t case_check(kb_case *c, kb_math math, kb_result *r)
{
    kb_check worst = {0};
    worst.pass = 1;
    for (int i = 0; i < c->n; ++i) {
        if (!c->t[i].is_output)
            continue;
        int64_t nonfinite, rl = c->t[i].row_len;
        cudaError_t e = kb_device_count_nonfinite(c->dev[i], c->t[i].elems, c->t[i].dtype, &nonfinite);
        if (e == cudaSuccess)
            e = read_rows(c, &c->t[i], c->dev[i], c->host[i]);
        if (e != cudaSuccess)
            return e;
        kb_check one;
        kb_compare_rows(c->host[i], c->t[i].dtype, c->ref[i], c->nrows * rl, math,
                        c->op->reduction_len(&c->shape), &one);
        int pass = worst.pass && one.pass && nonfinite == 0;
        nonfinite += worst.nonfinite;
        if (one.max_abs_err >= worst.max_abs_err)
            worst = one;
        worst.pass = pass;
        worst.nonfinite = nonfinite;
    }
    r->check = worst;
    r->rows_checked = c->nrows;
    return cudaSuccess;
}

/* case_check, its time counted as the check phase. */
static cudaError_t timed_check(kb_case *c, kb_math math, kb_result *r)
{
    double t0 = now_s();
    cudaError_t e = case_check(c, math, r);
    phase_end(PH_CHECK, t0);
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

static void describe_failure(kb_result *r, const char *when)
{
    if (r->check.nonfinite)
        snprintf(r->reason, sizeof r->reason, "%s: %lld NaN/Inf outputs (unwritten or overflowed)",
                 when, (long long)r->check.nonfinite);
    else if (r->check.bad_elems)
        snprintf(r->reason, sizeof r->reason, "%s: %lld elements over tolerance (max err %.3g > %.3g)",
                 when, (long long)r->check.bad_elems, r->check.max_abs_err, r->check.worst_tol);
    else
        snprintf(r->reason, sizeof r->reason, "%s: relative L2 error %.3g over its bound",
                 when, r->check.rel_l2_err);
}

/* NVML over a row's timed phase: the energy counter at both ends, readings
 * at both ends and every NVML_EVERY_S between samples, never inside an
 * event pair.  Without NVML it costs nothing and reads nothing. */
typedef struct {
    kb_nvml_window w;
    unsigned long long mj0;
    int have_mj0;
    double t0, last;
} power_meter;

static void meter_start(power_meter *m)
{
    memset(m, 0, sizeof *m);
    m->have_mj0 = kb_nvml_energy(&m->mj0) == 0;
    kb_nvml_sample(&m->w);
    m->t0 = m->last = now_s();
}

static void meter_tick(power_meter *m)
{
    double t = now_s();
    if (t - m->last >= NVML_EVERY_S) {
        kb_nvml_sample(&m->w);
        m->last = t;
    }
}

static void meter_stop(power_meter *m, int launches, kb_result *r)
{
    unsigned long long mj1 = 0;
    kb_nvml_sample(&m->w);
    double window = now_s() - m->t0;
    double mj = m->have_mj0 && kb_nvml_energy(&mj1) == 0 ? kb_mj_per_launch(m->mj0, mj1, window, launches) : 0;
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
    snprintf(buf, len, "median noise under %g%% from %d samples, or %g s, or %d samples", 100 * s.max_noise,
             s.min_samples, s.cap_s, MAX_SAMPLES);
}

/* kb_time_variant, also metering power into r when r is not NULL. */
static const char *time_variant(const kb_variant *v, const void *args, void *ctx, int hot, stop_rule rule,
                                void *flush, size_t flush_bytes, kb_stats *st, kb_result *r)
{
    const char *e;
    double t0 = now_s();
    do
        if ((e = launch_sync(v, args, ctx)))
            return e;
    while (now_s() - t0 < WARMUP_S);
    phase_end(PH_WARMUP, t0);

    power_meter meter;
    cudaEvent_t flushed, start, stop;
    cudaEventCreate(&flushed);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    double flush_ms = 0;
    double *samples = malloc(MAX_SAMPLES * sizeof *samples), *scratch = malloc(MAX_SAMPLES * sizeof *scratch);
    int n = 0;
    if (r) {
        t0 = now_s();
        meter_start(&meter);
        phase_end(PH_NVML, t0);
    }
    t0 = now_s();
    for (;;) {
        /* A memset, not a read, empties L2: it leaves L2 full of dirty
         * lines that the sample pays to write back, as a kernel in a
         * program pays for its predecessor's outputs, while its own last
         * writes stay in L2 unpaid.  Read-flushed (clean) L2 pays only the
         * second half: on the H100 a 64 MB copy then ran at 3241 GB/s,
         * above the 3030 the DRAM sustains (memset: 2506); from 256 MB
         * moved every row gained some 5 us. */
        cudaEventRecord(flushed, 0);
        if (!hot && (e = kb_cuda_status(cudaMemsetAsync(flush, n & 0xff, flush_bytes, 0))))
            break;
        cudaEventRecord(start, 0);
        e = v->launch(args, ctx, 0);
        cudaEventRecord(stop, 0);
        cudaError_t s = cudaEventSynchronize(stop);
        if (e || s != cudaSuccess) {
            e = e ? e : cudaGetErrorString(s);
            break;
        }
        float ms, flush_one;
        cudaEventElapsedTime(&ms, start, stop);
        cudaEventElapsedTime(&flush_one, flushed, start);
        flush_ms += flush_one;
        samples[n++] = ms;
        if (r)
            meter_tick(&meter);
        if (n < MIN_SAMPLES)
            continue;
        memcpy(scratch, samples, (size_t)n * sizeof *samples);
        kb_stats_compute(scratch, n, st);
        if (n == MAX_SAMPLES || now_s() - t0 > rule.cap_s ||
            (n >= rule.min_samples && kb_median_noise(st) < rule.max_noise))
            break;
    }
    phase_s[PH_FLUSH] += flush_ms * 1e-3;
    double timed = phase_end(PH_TIMING, t0);
    phase_s[PH_TIMING] -= flush_ms * 1e-3;
    if (r) {
        meter_stop(&meter, n, r);
        phase_end(PH_NVML, timed);
    }
    cudaEventDestroy(flushed);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    free(samples);
    free(scratch);
    return e;
}

const char *kb_time_variant(const kb_variant *v, const void *args, void *ctx, int hot,
                            double cap_s, void *flush, size_t flush_bytes, kb_stats *st)
{
    return time_variant(v, args, ctx, hot, (stop_rule){cap_s, TARGET_NOISE, SETTLE_SAMPLES}, flush, flush_bytes,
                        st, NULL);
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
    if (v->setup && (e = v->setup(args, &ctx))) {
        set_reason(r, KB_SKIP, "setup failed: %s", e);
        return;
    }
    double t0 = now_s();
    cudaError_t reset = case_reset(c);
    phase_end(PH_UPLOAD, t0);
    if (reset != cudaSuccess || (e = launch_sync(v, args, ctx))) {
        set_reason(r, KB_FAIL, "launch failed: %s", e ? e : "could not reset tensors");
    } else if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
        r->status = KB_FAIL;
        describe_failure(r, "before timing");
    } else if (!o->check_only) {
        if ((e = time_variant(v, args, ctx, o->hot, stop_rule_of(o), flush, flush_bytes, &r->time_ms, r))) {
            set_reason(r, KB_FAIL, "failed while timing: %s", e);
        } else {
            r->timed = 1;
            if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
                r->status = KB_FAIL;
                describe_failure(r, "after timing");
            }
        }
    }
    if (v->teardown)
        v->teardown(ctx);
}

/* Why this device cannot run the variant at all, or NULL. */
static const char *unrunnable(const kb_job *job, char *why, size_t len)
{
    const kb_variant *v = job->variant;
    int dev = 0, major = 0, minor = 0;
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

void kb_run_job(const kb_job *job, const kb_options *o, void *flush, size_t flush_bytes, kb_result *r)
{
    char why[160];
    const char *skip;
    memset(r, 0, sizeof *r);
    r->op = job->op;
    r->variant = job->variant;
    r->shape = job->shape;
    r->hot = o->hot;
    r->flops = job->op->flops(&job->shape);
    r->bytes = job->op->bytes(&job->shape, job->variant->dtype);
    r->status = KB_PASS;
    if (context_lost) {
        set_reason(r, KB_SKIP, "%s", "the CUDA context was lost at an earlier failure");
        return;
    }
    if ((skip = unrunnable(job, why, sizeof why)) || (skip = case_for(&current, job, why, sizeof why))) {
        set_reason(r, KB_SKIP, "%s", skip);
        return;
    }
    r->rows_total = current.t[current.first_out].rows;
    run_variant(&current, job, o, flush, flush_bytes, r);
    if (r->status == KB_FAIL && cudaDeviceSynchronize() != cudaSuccess)
        context_lost = 1;
}

/* Drop the shared case, e.g. before allocating a large flush buffer elsewhere. */
void kb_run_release(void)
{
    case_free(&current);
}
