/* Running one row: check, time, check again.  The inputs, reference and
 * device tensors the row shares with its op, shape and dtype are its case
 * (case.c). */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "harness/case.h"
#include "kernels/cuda_util.h"

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

/* A variant's launch as the timing engine calls it, and the case whose
 * inouts are restored before each sample (NULL: none). */
typedef struct {
    const kb_variant *v;
    const void *args;
    void *ctx;
    const kb_case *inouts;
} variant_call;

static const char *launch_variant(void *arg, cudaStream_t stream)
{
    const variant_call *c = arg;
    return c->v->launch(c->args, c->ctx, stream);
}

static const char *restore_inouts(void *arg)
{
    const variant_call *c = arg;
    return kb_cuda_status(kb_case_restore_inouts(c->inouts));
}

static const char *time_call(variant_call *call, const kb_time_opts *o, int ranks, int energy, kb_result *r)
{
    const kb_timed w = {.launch = launch_variant,
                        .arg = call,
                        .before_sample = call->inouts ? restore_inouts : NULL,
                        .ranks = ranks,
                        .energy = energy};
    kb_timing t;
    const char *e = kb_time(&w, o, &t);
    if (!e)
        kb_timing_fill(&t, r);
    return e;
}

const char *kb_time_variant(const kb_variant *v, const void *args, void *ctx, const kb_time_opts *o, int ranks,
                            int energy, kb_result *r)
{
    variant_call call = {v, args, ctx, NULL};
    return time_call(&call, o, ranks, energy, r);
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

/* With a kernel of one's own in the run: a row whose inputs the variant
 * changed (over its check and timed launches) fails, naming the input. */
static void guard_inputs(const kb_case *c, kb_result *r)
{
    int tensor;
    int64_t bytes;
    const cudaError_t e = kb_case_changed_input(c, &tensor, &bytes);
    if (e != cudaSuccess)
        snprintf(r->reason, sizeof r->reason, "checking its inputs failed: %s", cudaGetErrorString(e));
    else if (tensor >= 0)
        snprintf(r->reason, sizeof r->reason, "it changed its input %s (%lld bytes differ from the copy it was given)",
                 c->h.t[tensor].name, (long long)bytes);
    if (e != cudaSuccess || tensor >= 0) {
        r->status = KB_FAIL;
        r->timed = 0;
    }
}

/* With a kernel of one's own in the run: after timing, the outputs
 * poisoned again and one more launch checked, so that a kernel that works
 * on its first call alone (its later, timed calls leaving the first
 * result in place) fails instead of timing nothing. */
static void guard_fresh_outputs(const kb_case *c, const kb_variant *v, const void *args, void *ctx, int outputs,
                                kb_result *r)
{
    const cudaError_t reset = kb_case_reset(c);
    const char *e = reset == cudaSuccess ? launch_sync(v, args, ctx) : cudaGetErrorString(reset);
    if (e) {
        set_reason(r, KB_FAIL, "the launch after timing failed: %s", e);
        r->timed = 0;
    } else if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
        r->status = KB_FAIL;
        describe_failure(r, "after timing, on outputs poisoned again", outputs);
        r->timed = 0;
    }
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
    size_t free0 = 0, free1 = 0, total = 0;
    const int gauged = cudaMemGetInfo(&free0, &total) == cudaSuccess;
    e = v->setup ? v->setup(args, &ctx) : NULL;
    t0 = kb_phase_end(PH_SETUP, t0);
    if (e) {
        set_reason(r, KB_SKIP, "setup failed: %s", e);
        return;
    }
    /* The first launch also loads the variant's kernels (and a library's). */
    e = reset == cudaSuccess ? launch_sync(v, args, ctx) : NULL;
    kb_phase_end(PH_FIRST, t0);
    if (!e && reset == cudaSuccess && gauged && cudaMemGetInfo(&free1, &total) == cudaSuccess) {
        r->workspace_mib = free1 < free0 ? (double)(free0 - free1) / 1048576.0 : 0;
        r->workspace_gauged = 1;
    }
    if (reset != cudaSuccess || e) {
        set_reason(r, KB_FAIL, "launch failed: %s", e ? e : "could not reset tensors");
    } else if (timed_check(c, v->math, r) != cudaSuccess || !r->check.pass) {
        r->status = KB_FAIL;
        describe_failure(r, "before timing", outputs);
    } else if (!o->check_only) {
        /* NVML's energy counter sees one GPU, not a row that spans several. */
        int energy = kb_wants_energy(o, job->op, &job->shape, v->dtype) && !kb_job_multi_device(job);
        const kb_time_opts timing = {kb_options_stop_rule(o), r->hot, flush, flush_bytes};
        variant_call call = {v, args, ctx, c->has_inout ? c : NULL};
        if ((e = time_call(&call, &timing, job->op->distributed, energy, r)) ||
            /* The energy window's launches accumulated into the inouts: the
             * check after timing then checks one launch from them restored. */
            (energy && call.inouts && !(e = kb_cuda_status(kb_case_restore_inouts(c))) &&
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
    if (o->kernel_path && r->status != KB_FAIL)
        guard_inputs(c, r);
    if (o->kernel_path && r->status == KB_PASS && r->timed)
        guard_fresh_outputs(c, v, args, ctx, outputs, r);
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
