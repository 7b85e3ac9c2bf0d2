/* The GPU suite: every registered variant of every op against the C
 * reference on the op's regular and tile-hostile test shapes, and broken
 * variants that the checks must catch, and the timing engine's contract.
 * Exits 77 (skip) without a GPU.  Asserts correctness only, never a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/case.h"
#include "harness/harness.h"
#include "harness/timing.h"
#include "ops/attention.h"
#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/embedding_backward.h"
#include "ops/matmul.h"
#include "tests/check.h"

extern const kb_variant broken_matmul_unwritten, broken_matmul_drop_term, broken_matmul_degrades,
    broken_matmul_drop_tile_bf16, broken_allreduce_local;
extern const kb_op kb_op_probe; /* tests/probe_op.cu */
extern const kb_variant probe_correct[], probe_assigns[], probe_no_mean[], probe_short_sum[];

static kb_options options(int check_only)
{
    kb_options o;
    memset(&o, 0, sizeof o);
    o.check_only = check_only;
    o.row_cap_s = 0.05;
    return o;
}

/* Every form of the op's variants into v[], in table order; their count. */
enum { MAX_FORMS = 128 };
static int forms(const kb_op *op, const kb_variant **v)
{
    int n = 0;
    KB_FOR_EACH_VARIANT(op, f)
        if (n < MAX_FORMS)
            v[n++] = f;
    CHECK(n < MAX_FORMS);
    return n;
}

static void *flush;
static size_t flush_bytes = 64 << 20;
static int ngpus; /* the machine's GPUs, up to KB_MAX_RANKS: the collectives span them all */

static kb_result run(const kb_op *op, const kb_variant *v, const kb_shape *s, int check_only)
{
    kb_job job = {op, v, *s};
    kb_options o = options(check_only);
    kb_result r;
    kb_run_job(&job, &o, flush, flush_bytes, &r);
    return r;
}

/* Every variant at every test shape, shape by shape as a sweep runs them,
 * the next case made on the host ahead (kb_run_plan). */
static void every_variant(const kb_op *op)
{
    kb_shape *shapes;
    char err[256], name[128];
    const kb_variant *v[MAX_FORMS];
    int ns = kb_parse_shape_list(op, op->test_sizes, &shapes, err, sizeof err), nv = forms(op, v);
    CHECK(ns > 0);
    for (int i = 0; i < ns && op->distributed; ++i)
        shapes[i].ranks = ngpus;
    kb_job *jobs = malloc((size_t)ns * nv * sizeof *jobs);
    int *passed = calloc((size_t)nv, sizeof *passed);
    for (int i = 0; i < ns; ++i)
        for (int j = 0; j < nv; ++j)
            jobs[i * nv + j] = (kb_job){op, v[j], shapes[i]};
    kb_options o = options(1);
    kb_run_plan(jobs, ns * nv);
    for (int k = 0; k < ns * nv; ++k) {
        kb_result r;
        kb_run_job(&jobs[k], &o, flush, flush_bytes, &r);
        kb_format_shape(op, &jobs[k].shape, name, sizeof name);
        printf("%-8s %-18s %-5s %-16s %s max_err %.2e rel_l2 %.2e rows %lld/%lld %s\n", op->name,
               jobs[k].variant->name, kb_dtype_name(jobs[k].variant->dtype), name, kb_status_name(r.status), r.check.max_abs_err, r.check.rel_l2_err,
               (long long)r.rows_checked, (long long)r.rows_total, r.reason);
        CHECK(r.status != KB_FAIL);
        passed[k % nv] += r.status == KB_PASS;
    }
    kb_run_release();
    /* A variant that skips everything proves nothing, unless it needs more GPUs than there are. */
    for (int j = 0; j < nv; ++j) {
        kb_job one = {op, v[j], shapes[0]};
        CHECK(passed[j] > 0 || (kb_job_multi_device(&one) && ngpus < 2));
    }
    free(passed);
    free(jobs);
    free(shapes);
}

static void broken_variants_fail(void)
{
    kb_shape s = {3, {67, 45, 129}, 0};
    kb_result r = run(&kb_op_matmul, &broken_matmul_unwritten, &s, 1);
    CHECK(r.status == KB_FAIL && r.check.nonfinite == 1);
    CHECK(strstr(r.reason, "NaN") != NULL);

    r = run(&kb_op_matmul, &broken_matmul_drop_term, &s, 1);
    CHECK(r.status == KB_FAIL && r.check.nonfinite == 0 && r.check.bad_elems > 0);
    CHECK(strstr(r.reason, "before timing") != NULL);

    r = run(&kb_op_matmul, &broken_matmul_degrades, &s, 0);
    CHECK(r.status == KB_FAIL && strstr(r.reason, "after timing") != NULL);

    /* bf16's tolerance still sees one K-tile of 32 missing from a long, odd K. */
    kb_shape long_k = {3, {130, 257, 8191}, 0};
    r = run(&kb_op_matmul, &broken_matmul_drop_tile_bf16, &long_k, 1);
    CHECK(r.status == KB_FAIL && r.check.nonfinite == 0 && r.check.bad_elems > 0);
    CHECK(strstr(r.reason, "before timing") != NULL);
    /* Every rank's output is checked: a sum that leaves out the peers fails. */
    if (ngpus > 1) {
        kb_shape n = {1, {4099}, 0, ngpus};
        r = run(&kb_op_allreduce, &broken_allreduce_local, &n, 1);
        CHECK(r.status == KB_FAIL && r.check.bad_elems > 0);
    }
    printf("broken variants: caught\n");
}

/* Keys whose scores grow along the sequence: key j of every head scaled by
 * 1 + 24 j / Tk, so that a row's running maximum keeps moving, by some 4
 * log2 units a 128-key tile, to about 32 in all.  The suite's uniform
 * inputs settle it in the first tile, where no rescale of O after it is
 * ever tested (and flash_wgmma's reference point moves only past 8). */
static void growing_keys(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_uniform(x, n, seed);
    const int64_t Tk = s->d[3], D = s->d[4];
    for (int64_t e = 0; i == 1 && e < n; ++e)
        x[e] *= 1.0f + 24.0f * (float)(e / D % Tk) / (float)Tk;
}

/* Every attention variant against the reference on those keys; each that
 * this GPU can run passes at least one shape (the decode ones, Tq = 1). */
static void attention_under_moving_maxima(const kb_device_info *dev)
{
    kb_op grow = kb_op_attention;
    grow.fill = growing_keys;
    kb_shape *shapes;
    char err[256], name[128];
    int ns = kb_parse_shape_list(
        &grow, "1x2x130x1000x128,1x2x130x1000x128c,2x4x200x777x64x2,1x2x100x1000x256c,2x4x1x1000x128x2", &shapes, err,
        sizeof err);
    CHECK(ns == 5);
    kb_options o = options(1);
    const kb_variant *v[MAX_FORMS];
    for (int j = 0, nv = forms(&grow, v); j < nv; ++j) {
        int passed = 0;
        for (int i = 0; i < ns; ++i) {
            kb_job job = {&grow, v[j], shapes[i]};
            kb_result r;
            kb_run_job(&job, &o, flush, flush_bytes, &r);
            kb_format_shape(&grow, &shapes[i], name, sizeof name);
            printf("growing keys %-18s %-5s %-18s %s max_err %.2e %s\n", v[j]->name, kb_dtype_name(v[j]->dtype), name,
                   kb_status_name(r.status), r.check.max_abs_err, r.reason);
            CHECK(r.status != KB_FAIL);
            passed += r.status == KB_PASS;
        }
        CHECK(passed > 0 || v[j]->min_cc > 10 * dev->cc_major + dev->cc_minor);
    }
    kb_run_release();
    free(shapes);
}

/* The contract a backward op needs (tests/probe_op.cu): an inout restored
 * before every launch, timed as well, an input derived by prepare, and a
 * second output with rows of its own.  The correct variant passes after
 * timing (acc accumulated once per sample, not once per launch); each broken
 * one fails, its reason naming the tensor. */
static void contract_probe(void)
{
    kb_shape s = {2, {300, 1000}, 0};
    kb_result r = run(&kb_op_probe, probe_correct, &s, 0);
    printf("probe correct: %s %s, rows %lld/%lld\n", kb_status_name(r.status), r.reason,
           (long long)r.rows_checked, (long long)r.rows_total);
    CHECK(r.status == KB_PASS && r.timed && r.time_ms.n >= 20);
    CHECK(r.rows_total == 300 + 1000 && r.rows_checked == r.rows_total);
    const struct {
        const kb_variant *v;
        const char *tensor;
    } broken[] = {{probe_assigns, "acc"}, {probe_no_mean, "acc"}, {probe_short_sum, "colsum"}};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; ++i) {
        r = run(&kb_op_probe, broken[i].v, &s, 1);
        printf("probe %s: %s %s\n", broken[i].v->name, kb_status_name(r.status), r.reason);
        CHECK(r.status == KB_FAIL && strstr(r.reason, "before timing") && strstr(r.reason, broken[i].tensor));
    }
    kb_run_release();
}

/* A row too big for the machine is a SKIP within a second, its reason
 * naming what it needs and what there is, between rows that PASS, made
 * ahead by the plan's thread as a sweep makes them (it once made the big
 * case's inputs on the host until the kernel killed the process). */
static void oversized_rows_skip(void)
{
    const struct {
        const char *op, *variant, *shapes[3];
        kb_dtype t;
    } runs[] = {{"attention", "cudnn", {"1x1x128x128x64", "64x64x32768x32768x128", "1x2x128x128x64"}, KB_BF16},
                {"softmax", "vectorized", {"64x1000", "400000x65536", "65x1000"}, KB_F32}};
    kb_options o = options(1);
    char err[256];
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; ++k) {
        kb_job jobs[3];
        const kb_op *op = kb_find_op(runs[k].op);
        for (int i = 0; i < 3; ++i) {
            jobs[i] = (kb_job){op, kb_find_variant(op, runs[k].variant, runs[k].t), {0}};
            CHECK(jobs[i].variant && kb_parse_shape(op, runs[k].shapes[i], &jobs[i].shape, err, sizeof err) == 0);
        }
        kb_run_plan(jobs, 3);
        for (int i = 0; i < 3; ++i) {
            kb_result r;
            const double t0 = kb_now_s();
            kb_run_job(&jobs[i], &o, flush, flush_bytes, &r);
            const double s = kb_now_s() - t0;
            printf("oversized: %s %s %s: %s in %.2f s %s\n", runs[k].op, runs[k].variant, runs[k].shapes[i],
                   kb_status_name(r.status), s, r.reason);
            CHECK(i == 1 ? r.status == KB_SKIP && strstr(r.reason, "GiB") && s < 1.0 : r.status == KB_PASS);
        }
        kb_run_release();
    }
}

/* dE of `name` over the same inputs, twice: whether the two agree bit for
 * bit.  64 ids over 8192 tokens put 128 adds on every element of dE, so an
 * order that changes between runs changes its last bits. */
static int embedding_backward_repeats(const char *name)
{
    enum { T = 8192, V = 64, D = 256 };
    const kb_variant *v = kb_find_variant(&kb_op_embedding_backward, name, KB_F32);
    int *ids_h = malloc(sizeof(int) * T), *ids = NULL, same = 0;
    float *dx_h = malloc(sizeof(float) * T * D);
    float *out[2] = {malloc(sizeof(float) * V * D), malloc(sizeof(float) * V * D)};
    float *dx = NULL, *dE = NULL;
    void *ctx = NULL;
    CHECK(v && ids_h && dx_h && out[0] && out[1]);
    kb_fill_uniform(dx_h, (int64_t)T * D, 71);
    for (int t = 0; t < T; ++t)
        ids_h[t] = (t * 37) % V;
    CHECK(cudaMalloc((void **)&ids, sizeof(int) * T) == cudaSuccess &&
          cudaMalloc((void **)&dx, sizeof(float) * T * D) == cudaSuccess &&
          cudaMalloc((void **)&dE, sizeof(float) * V * D) == cudaSuccess);
    CHECK(cudaMemcpy(ids, ids_h, sizeof(int) * T, cudaMemcpyHostToDevice) == cudaSuccess &&
          cudaMemcpy(dx, dx_h, sizeof(float) * T * D, cudaMemcpyHostToDevice) == cudaSuccess);
    const kb_embedding_backward_args a = {T, V, D, ids, dx, dE};
    CHECK(!v->setup || v->setup(&a, &ctx) == NULL);
    for (int k = 0; k < 2; ++k) {
        CHECK(v->launch(&a, ctx, 0) == NULL);
        CHECK(cudaMemcpy(out[k], dE, sizeof(float) * V * D, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    same = memcmp(out[0], out[1], sizeof(float) * V * D) == 0;
    if (v->teardown)
        v->teardown(ctx);
    cudaFree(ids), cudaFree(dx), cudaFree(dE);
    free(ids_h), free(dx_h), free(out[0]), free(out[1]);
    return same;
}

/* sorted is deterministic, as its header says; atomic's runs may differ
 * (said, not asserted: it depends on the GPU's scheduling). */
static void embedding_backward_determinism(void)
{
    CHECK(embedding_backward_repeats("sorted"));
    printf("embedding_backward: atomic's two runs %s\n",
           embedding_backward_repeats("atomic") ? "agree bit for bit" : "differ in their last bits");
}

static void timing_is_recorded(void)
{
    kb_shape s = {3, {256, 256, 256}, 0};
    kb_result r = run(&kb_op_matmul, &kb_op_matmul.variants[0][0], &s, 0);
    CHECK(r.status == KB_PASS && r.timed);
    CHECK(r.time_ms.n >= 3 && r.time_ms.min > 0);
    CHECK(r.time_ms.min <= r.time_ms.median && r.time_ms.median <= r.time_ms.max);
    /* Collectives are timed on every GPU's stream behind a gate, in batches
     * (run.c): a small one takes microseconds a launch, not the batch's
     * total, and a big one is not cut short by the batching. */
    if (ngpus > 1) {
        const kb_variant *const *v = kb_op_allreduce.variants;
        for (int j = 0; v[j]; ++j) {
            kb_shape small = {1, {4096}, 0, ngpus}, big = {1, {64 << 20}, 0, ngpus};
            r = run(&kb_op_allreduce, v[j], &small, 0);
            printf("timed allreduce %-12s 4096: %s %.4f ms %s\n", v[j]->name, kb_status_name(r.status),
                   r.time_ms.median, r.reason);
            CHECK(r.status == KB_SKIP || (r.status == KB_PASS && r.timed && r.time_ms.min > 0.0005 &&
                                          r.time_ms.median < 0.2));
            r = run(&kb_op_allreduce, v[j], &big, 0);
            /* 256 MB a GPU: over 0.3 ms even at 900 GB/s */
            CHECK(r.status == KB_SKIP || (r.status == KB_PASS && r.time_ms.min > 0.3));
        }
    }
}

/* The timing engine with a launch of its own (a small memset): the hook
 * runs before every launch, warm-up's included; with any noise accepted
 * and time to spare the samples stop at min_samples; a sample hook's time
 * replaces the events', divided by the units; a hook's failure is the
 * row's. */
typedef struct {
    void *buf;
    int launches, hooks, fail_at;
} engine_probe;

static const char *probe_launch(void *arg, cudaStream_t stream)
{
    engine_probe *p = arg;
    p->launches++;
    return cudaMemsetAsync(p->buf, 0, 4096, stream) == cudaSuccess ? NULL : "memset failed";
}

static const char *probe_hook(void *arg)
{
    engine_probe *p = arg;
    return ++p->hooks == p->fail_at ? "the planted hook failure" : NULL;
}

static const char *probe_sample(void *arg, double *ms)
{
    (void)arg;
    *ms = 2.0;
    return NULL;
}

static void timing_engine(void)
{
    engine_probe p = {0};
    CHECK(cudaMalloc(&p.buf, 4096) == cudaSuccess);
    kb_time_opts o = {.rule = {.cap_s = 60, .max_noise = 1, .min_samples = 25}, .flush = flush,
                      .flush_bytes = flush_bytes};
    kb_timed w = {.launch = probe_launch, .arg = &p, .before_sample = probe_hook};
    kb_timing t;
    CHECK(kb_time(&w, &o, &t) == NULL);
    printf("engine: %d launches, %d hooks, %d samples\n", p.launches, p.hooks, t.ms.n);
    CHECK(t.ms.n == 25 && p.hooks == p.launches && p.launches > t.ms.n);
    w.sample_ms = probe_sample;
    w.units = 4;
    o.hot = 1;
    CHECK(kb_time(&w, &o, &t) == NULL);
    CHECK(t.ms.n == 25 && t.ms.min == 0.5 && t.ms.max == 0.5);
    p.hooks = 0;
    p.fail_at = 3;
    const char *e = kb_time(&w, &o, &t);
    CHECK(e && !strcmp(e, "the planted hook failure"));
    cudaFree(p.buf);
}

/* The ceiling kernels' own clock stamps: a clock inside the launches
 * between a fifth of the GPU's top clock and the top (with 5% for the
 * readings), and the measured tensor rate no higher than the datasheet's
 * at that clock.  Measured as kbench run measures them, with a sweep's
 * plan announced: they must leave its thread making the cases (they once
 * stopped it, and a run with --ceilings made every case as its row came). */
static void ceilings_clock_inside(const kb_device_info *dev)
{
    kb_ceilings c;
    kb_job plan = {&kb_op_copy, &kb_op_copy.variants[0][0], {1, {4096}, 0}};
    kb_run_plan(&plan, 1);
    kb_measure_ceilings(dev, flush, flush_bytes, &c);
    CHECK(kb_case_planned());
    kb_run_release();
    const double top = dev->sm_clock_khz / 1000.0;
    printf("SM clock inside the ceilings: %.0f MHz (fp32), %.0f MHz (tensor, %s); NVML %.0f, %.0f\n",
           c.fp32_inside_mhz, c.tc_inside_mhz, c.tc_kernel, c.fp32_clock_mhz, c.tc_clock_mhz);
    CHECK(c.fp32_inside_mhz > top / 5 && c.fp32_inside_mhz < top * 1.05);
    if (!strcmp(c.tc_kernel, "wgmma_peak")) {
        CHECK(c.tc_inside_mhz > top / 5 && c.tc_inside_mhz < top * 1.05);
        CHECK(c.tc_gflop_s < c.ds_tc_gflop_s * c.tc_inside_mhz / top * 1.05);
    } else {
        CHECK(c.tc_inside_mhz == 0); /* cuBLAS's kernel has no stamps */
    }
}

int main(void)
{
    kb_device_info dev;
    SKIP_WITHOUT_GPU("the GPU suite", &dev);
    if (cudaMalloc(&flush, flush_bytes) != cudaSuccess) {
        printf("cannot allocate the flush buffer\n");
        return 1;
    }
    int ids[KB_MAX_RANKS];
    cudaGetDeviceCount(&ngpus);
    ngpus = ngpus < KB_MAX_RANKS ? ngpus : KB_MAX_RANKS;
    for (int i = 0; i < ngpus; ++i)
        ids[i] = i;
    kb_set_run_devices(ids, ngpus);
    printf("GPU suite on %s (%d GPU%s)\n", dev.name, ngpus, ngpus > 1 ? "s" : "");
    for (int i = 0; kb_ops[i]; ++i)
        every_variant(kb_ops[i]);
    broken_variants_fail();
    contract_probe();
    oversized_rows_skip();
    embedding_backward_determinism();
    attention_under_moving_maxima(&dev);
    timing_is_recorded();
    timing_engine();
    kb_run_release();
    ceilings_clock_inside(&dev);
    cudaFree(flush);
    return CHECK_DONE();
}
