/* `kbench model generate` on the GPU (model/llama_gpu.h): the model in
 * bf16, checked against the C reference, then prefill and decode timed.
 *
 * The check runs a short generation (the prompt's first CHECK_PROMPT tokens,
 * CHECK_STEPS tokens) through the same prefill and captured decode step,
 * and compares every step's logits with the reference's, fed the GPU's own
 * tokens (teacher forcing, so a near-tie cannot derail the rest).  The
 * weights are rounded to bf16 on the host first, so both sides use the same
 * values.  The timed run generates --tokens after the whole prompt; its
 * last logits must be finite. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness/harness.h"
#include "commands/generate.h"
#include "model/llama_gpu.h"
#include "formats/npy.h"
#include "model/stages.h"
#include "kernels/cuda_util.h"

#define CHECK_PROMPT 32
#define CHECK_STEPS 8

typedef struct {
    kb_llama_gpu *g;
    cudaStream_t s;
    cudaGraphExec_t step; /* one decode step */
    kb_time_opts timing;  /* the stop rule and the L2 flush buffer */
    kb_check check;       /* the worst step's logits against the reference */
    kb_timing prefill, graph, stream; /* decode per token */
    int steps;            /* decode steps timed per run (0: none) */
    int checked;          /* tokens whose logits the check compared */
    kb_ceilings ceil;
} gpu_run;

/* The decode step as one graph, replacing the last one. */
static const char *capture_step(gpu_run *r)
{
    cudaGraph_t graph;
    if (r->step)
        cudaGraphExecDestroy(r->step);
    r->step = NULL;
    KB_TRY(kb_cuda_status(cudaStreamBeginCapture(r->s, cudaStreamCaptureModeThreadLocal)));
    const char *err = kb_llama_gpu_decode(r->g, r->s);
    cudaError_t e = cudaStreamEndCapture(r->s, &graph);
    KB_TRY(err);
    KB_TRY(kb_cuda_status(e));
    e = cudaGraphInstantiate(&r->step, graph, 0);
    cudaGraphDestroy(graph);
    return kb_cuda_status(e);
}

/* Prefill, then steps decode steps as graph replays, and wait. */
static const char *generate(gpu_run *r, const int *ids, int n, int steps)
{
    KB_TRY(kb_llama_gpu_plan(r->g, n));
    KB_TRY(kb_llama_gpu_prefill(r->g, ids, n, r->s));
    for (int k = 0; k < steps; ++k)
        KB_TRY(kb_cuda_status(cudaGraphLaunch(r->step, r->s)));
    KB_TRY(kb_cuda_status(cudaStreamSynchronize(r->s)));
    return kb_cuda_status(cudaGetLastError());
}

/* The reference's logits at each of the steps, fed the GPU's tokens; the
 * worst step's relative L2 error, and how many greedy picks agree. */
static int check_against_reference(const kb_llama_model *m, const int *prompt, int n, const int *tokens,
                                   const float *logits, int steps, double *worst, int *agree)
{
    const int V = m->cfg.vocab;
    kb_llama_cache cache;
    float *ref = malloc(sizeof(float) * (size_t)V);
    if (!ref || kb_llama_cache_init(&cache, &m->cfg, n + steps) != 0) {
        free(ref);
        return -1;
    }
    int rc = kb_llama_forward(m, &cache, prompt, n, ref, NULL);
    *worst = 0, *agree = 0;
    for (int k = 0; rc == 0 && k < steps; ++k) {
        if (k)
            rc = kb_llama_forward(m, &cache, &tokens[k - 1], 1, ref, NULL);
        double e2 = 0, r2 = 0;
        for (int i = 0; i < V; ++i) {
            const double d = (double)logits[(size_t)k * V + i] - ref[i];
            e2 += isfinite(d) ? d * d : INFINITY;
            r2 += (double)ref[i] * ref[i];
        }
        const double rel = sqrt(e2 / (r2 > 0 ? r2 : 1));
        *worst = rel > *worst || isnan(rel) ? rel : *worst;
        *agree += kb_llama_argmax(ref, V) == tokens[k];
    }
    kb_llama_cache_free(&cache);
    free(ref);
    return rc;
}

static const char *check(gpu_run *r, const kb_llama_model *m, const int *prompt, int T, int tokens, int *pass)
{
    const int n = T < CHECK_PROMPT ? T : CHECK_PROMPT, steps = tokens < CHECK_STEPS ? tokens : CHECK_STEPS;
    const int V = m->cfg.vocab;
    int out[CHECK_STEPS], agree = 0;
    double worst = 0;
    float *logits = malloc(sizeof(float) * (size_t)steps * V);
    if (!logits)
        return "out of host memory for the checked logits";
    kb_llama_gpu_keep_logits(r->g, 1);
    const char *err = capture_step(r);
    if (!err)
        err = generate(r, prompt, n, steps - 1);
    if (!err)
        err = kb_llama_gpu_results(r->g, steps, out, logits);
    const double t0 = omp_get_wtime();
    if (!err && check_against_reference(m, prompt, n, out, logits, steps, &worst, &agree) != 0)
        err = "out of host memory for the reference's KV cache";
    free(logits);
    KB_TRY(err);
    const double tol = kb_model_bf16_rel_l2_tolerance();
    *pass = worst <= tol;
    r->check = (kb_check){.rel_l2_err = worst, .worst_tol = tol, .pass = *pass, .nonfinite = !isfinite(worst)};
    r->checked = n + steps;
    printf("check: the first %d prompt tokens and %d generated against the C reference (bf16-rounded weights, "
           "%.1f s): worst step's logits rel. L2 %.2e (tolerance %.2e), greedy picks equal %d of %d: %s\n",
           n, steps, omp_get_wtime() - t0, worst, tol, agree, steps, *pass ? "PASS" : "FAIL");
    return NULL;
}

/* Weight bytes a decode step reads (every matrix once; a tied embedding
 * once, as the LM head) and the KV cache at context ctx, in bf16. */
static double decode_bytes(const kb_llama_config *c, double ctx)
{
    const double kv = 2.0 * c->layers * c->kv_heads * c->head_dim * ctx;
    return 2.0 * ((double)kb_llama_weight_count(c) + kv);
}

/* FLOPs of a decode step at context ctx: every weight once (2 a weight) and
 * attention over the cache. */
static double decode_flops(const kb_llama_config *c, double ctx)
{
    return 2.0 * (double)kb_llama_weight_count(c) + 4.0 * c->layers * c->heads * c->head_dim * ctx;
}

/* FLOPs of a prefill of n tokens: every product, attention under the
 * causal mask (half the square), the LM head for the last position only. */
static double prefill_flops(const kb_llama_config *c, int n)
{
    const double d = c->d_model, qd = (double)c->heads * c->head_dim, kvd = (double)c->kv_heads * c->head_dim;
    const double per_token = 2.0 * c->layers * (d * (qd + 2 * kvd) + qd * d + 3.0 * d * c->d_ff);
    const double attn = 4.0 * c->layers * qd * (double)n * n / 2;
    return per_token * n + attn + 2.0 * d * c->vocab;
}

/* What the timing engine's callbacks of a timed generation need. */
typedef struct {
    gpu_run *r;
    const int *prompt;
    int T, steps, graph;
} timed_run;

static const char *launch_prefill(void *arg, cudaStream_t s)
{
    const timed_run *t = arg;
    return kb_llama_gpu_prefill(t->r->g, t->prompt, t->T, s);
}

/* A decode sample's steps start where a prefill leaves the cache. */
static const char *refill_cache(void *arg)
{
    const timed_run *t = arg;
    return launch_prefill(arg, t->r->s);
}

static const char *launch_decode(void *arg, cudaStream_t s)
{
    const timed_run *t = arg;
    for (int k = 0; k < t->steps; ++k)
        KB_TRY(t->graph ? kb_cuda_status(cudaGraphLaunch(t->r->step, s)) : kb_llama_gpu_decode(t->r->g, s));
    return NULL;
}

/* The prefill over the prompt, then the decode steps after it with stream
 * launches and with the graph (last, so the tokens kept are a graph run's),
 * each a row of the timing engine. */
static const char *time_rows(gpu_run *r, const int *prompt, int T, int steps)
{
    timed_run t = {r, prompt, T, steps, 0};
    const kb_timed prefill = {.launch = launch_prefill, .arg = &t, .stream = r->s};
    const kb_timed decode = {
        .launch = launch_decode, .arg = &t, .stream = r->s, .before_sample = refill_cache, .units = steps};
    KB_TRY(kb_llama_gpu_plan(r->g, T));
    KB_TRY(kb_time(&prefill, &r->timing, &r->prefill));
    if (steps < 1)
        return NULL;
    KB_TRY(kb_time(&decode, &r->timing, &r->stream));
    t.graph = 1;
    return kb_time(&decode, &r->timing, &r->graph);
}

static const char *timed(gpu_run *r, const kb_llama_model *m, const int *prompt, int T, int tokens, int *out)
{
    const kb_ceilings *ceil = &r->ceil;
    const kb_llama_config *c = &m->cfg;
    const int steps = tokens - 1;
    kb_llama_gpu_keep_logits(r->g, 0); /* the timed steps, captured again, keep nothing */
    KB_TRY(capture_step(r));
    KB_TRY(time_rows(r, prompt, T, steps));
    KB_TRY(kb_llama_gpu_results(r->g, tokens, out, NULL));
    if (!kb_llama_gpu_logits_finite(r->g))
        return "the last logits of the timed run are not all finite";
    r->steps = steps;
    const double p = r->prefill.ms.median, tf = prefill_flops(c, T) / (p * 1e-3) * 1e-12;
    printf("prefill %d tokens: %.2f ms (median of %d), %.0f tokens/s, %.0f TFLOP/s", T, p, r->prefill.ms.n,
           T / (p * 1e-3), tf);
    if (ceil->tc_gflop_s > 0)
        printf(", %.0f%% of the measured bf16 tensor ceiling (%.0f TFLOP/s)", 100 * tf * 1e3 / ceil->tc_gflop_s,
               ceil->tc_gflop_s * 1e-3);
    putchar('\n');
    if (steps < 1)
        return NULL;
    const double g = r->graph.ms.median, s = r->stream.ms.median;
    const double bytes = decode_bytes(c, T + steps / 2.0), gbs = bytes / (g * 1e-3) * 1e-9;
    printf("decode: %.3f ms/token with the step in a CUDA graph, %.3f with stream launches (medians of %d and %d "
           "runs of %d steps after the prompt), %.0f tokens/s\n",
           g, s, r->graph.ms.n, r->stream.ms.n, steps, 1e3 / g);
    printf("bandwidth: %.2f GB of weights and KV cache a token, %.0f GB/s", bytes * 1e-9, gbs);
    if (ceil->mem_gb_s > 0)
        printf(", %.0f%% of the measured copy ceiling (%.0f GB/s; bound %.0f tokens/s)", 100 * gbs / ceil->mem_gb_s,
               ceil->mem_gb_s, ceil->mem_gb_s * 1e9 / bytes);
    putchar('\n');
    return NULL;
}

/* --logits-out: one more generation after the timed ones, over the whole
 * prompt, keeping every step's logits (tokens x vocab) for the file. */
static const char *logits_run(gpu_run *r, const int *prompt, int T, int tokens, int V, const char *path)
{
    static char err[512];
    float *all = malloc(sizeof(float) * (size_t)tokens * (size_t)V);
    int *ids = malloc(sizeof(int) * (size_t)tokens);
    const int64_t shape[2] = {tokens, V};
    const char *e = !all || !ids ? "out of host memory for --logits-out" : NULL;
    if (!e) {
        kb_llama_gpu_keep_logits(r->g, 1);
        e = capture_step(r);
    }
    if (!e)
        e = generate(r, prompt, T, tokens - 1);
    if (!e)
        e = kb_llama_gpu_results(r->g, tokens, ids, all);
    if (!e && kb_npy_write(path, 2, shape, all, err, sizeof err) != 0)
        e = err;
    free(all);
    free(ids);
    return e;
}

/* The GPU, with the L2 flush buffer its rows are timed with (the caller
 * frees it), and the ceilings when asked. */
static const char *open_gpu(gpu_run *r, int measure_ceilings)
{
    kb_device_info info;
    static char why[512];
    if (kb_gpu_open(0, &info, why, sizeof why) != 0)
        return why;
    if (!(r->timing.flush = kb_alloc_flush(&info, &r->timing.flush_bytes)))
        return "out of device memory for the L2 flush buffer";
    if (measure_ceilings) /* else zeros: no shares printed */
        kb_measure_ceilings(&info, r->timing.flush, r->timing.flush_bytes, &r->ceil);
    printf("GPU: %s (sm_%d%d, %d SMs)\n", info.name, info.cc_major, info.cc_minor, info.sm_count);
    return NULL;
}

/* On the current GPU: the model, its check, its timed rows. */
static const char *run_all(gpu_run *r, const kb_llama_model *m, const int *prompt, int T, int tokens, int *out,
                           int *pass)
{
    const int check_n = T < CHECK_PROMPT ? T : CHECK_PROMPT;
    KB_TRY(kb_llama_gpu_create(m, T + tokens, T > check_n ? T : check_n, tokens > CHECK_STEPS ? tokens : CHECK_STEPS,
                            1, &r->g));
    KB_TRY(kb_cuda_status(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking)));
    KB_TRY(check(r, m, prompt, T, tokens, pass));
    return timed(r, m, prompt, T, tokens, out);
}

/* ---- the CSV rows ---- */

static const kb_op llama_ops[] = {
    {.name = "llama-prefill", .shape_fields = "LxDxHxKVxFxVxT", .nd = 7, .flag_suffix = "t"},
    {.name = "llama-decode", .shape_fields = "LxDxHxKVxFxVxT", .nd = 7, .flag_suffix = "t"},
};
static const kb_variant llama_variants[] = {
    {.name = "bf16", .dtype = KB_BF16, .math = KB_MATH_BF16},
    {.name = "bf16_graph", .dtype = KB_BF16, .math = KB_MATH_BF16},
    {.name = "bf16_stream", .dtype = KB_BF16, .math = KB_MATH_BF16},
};

/* A row: shape layers x d x heads x kv_heads x ff x vocab x prompt, "t" when tied. */
static kb_result llama_row(const gpu_run *r, const kb_llama_config *c, int T, int op, int variant,
                           const kb_timing *t, double flops, double bytes)
{
    kb_result row;
    memset(&row, 0, sizeof row);
    row.op = &llama_ops[op];
    row.variant = &llama_variants[variant];
    row.shape = (kb_shape){7, {c->layers, c->d_model, c->heads, c->kv_heads, c->d_ff, c->vocab, T}, c->tied};
    row.family = "model";
    row.flops = flops;
    row.bytes = bytes;
    row.check = r->check;
    row.rows_checked = r->checked;
    row.rows_total = T + r->steps + 1;
    row.status = r->check.pass ? KB_PASS : KB_FAIL;
    row.timed = row.status == KB_PASS;
    kb_timing_fill(t, &row);
    snprintf(row.devices, sizeof row.devices, "0");
    if (!r->check.pass)
        snprintf(row.reason, sizeof row.reason, "logits rel. L2 %.3e over the bf16 bound %.3e", r->check.rel_l2_err,
                 r->check.worst_tol);
    return row;
}

/* Prefill and decode rows (graph and stream launches) into the kbench CSV path. */
static const char *append_rows(const gpu_run *r, const kb_llama_config *c, int T, const char *path)
{
    static char err[512];
    kb_result rows[3];
    int n = 0;
    const double per_token = decode_flops(c, T + r->steps / 2.0);
    rows[n++] = llama_row(r, c, T, 0, 0, &r->prefill, prefill_flops(c, T), 2.0 * (double)kb_llama_weight_count(c));
    if (r->steps > 0) {
        rows[n++] = llama_row(r, c, T, 1, 1, &r->graph, per_token, decode_bytes(c, T + r->steps / 2.0));
        rows[n++] = llama_row(r, c, T, 1, 2, &r->stream, per_token, decode_bytes(c, T + r->steps / 2.0));
    }
    char *prefix = kb_csv_read_for_append(path, err, sizeof err);
    if (!prefix)
        return err;
    const int rc = kb_csv_write_after(path, prefix, rows, n, err, sizeof err);
    free(prefix);
    if (rc)
        return err;
    printf("added %d rows to %s\n", n, path);
    return NULL;
}

static void gpu_run_free(gpu_run *r)
{
    if (r->step)
        cudaGraphExecDestroy(r->step);
    if (r->s)
        cudaStreamDestroy(r->s);
    kb_llama_gpu_destroy(r->g);
}

int kb_generate_gpu(kb_llama_model *m, const int *prompt, int T, const kb_generate_opts *o)
{
    const int tokens = o->tokens;
    gpu_run r = {.timing = {o->stop}};
    int pass = 0, *out = malloc(sizeof(int) * (size_t)tokens);
    if (!out) {
        fprintf(stderr, "kbench: out of host memory\n");
        return KB_EXIT_FAIL;
    }
    kb_llama_round_bf16(m);
    const char *err = open_gpu(&r, !o->no_ceilings);
    if (!err)
        err = run_all(&r, m, prompt, T, tokens, out, &pass);
    if (!err && o->logits_out)
        err = logits_run(&r, prompt, T, tokens, m->cfg.vocab, o->logits_out);
    if (!err && o->append)
        err = append_rows(&r, &m->cfg, T, o->append);
    if (!err) {
        printf("generated ids:");
        for (int i = 0; i < tokens; ++i)
            printf(i ? ",%d" : " %d", out[i]);
        putchar('\n');
        kb_generate_print_text(o, out, tokens);
    } else
        fprintf(stderr, "kbench: %s\n", err);
    gpu_run_free(&r);
    cudaFree(r.timing.flush);
    free(out);
    return err || !pass ? KB_EXIT_FAIL : 0;
}

/* ---- the fast stage of `kbench model stages` ---- */

static void fast_result(const gpu_run *r, const kb_llama_config *c, int T, kb_stage_result *res)
{
    res->dtype = "bf16";
    res->prefill = r->prefill;
    res->decode = r->graph;
    res->prefill_flops = prefill_flops(c, T);
    res->decode_flops = decode_flops(c, T + r->steps / 2.0);
    res->decode_bytes = decode_bytes(c, T + r->steps / 2.0);
    res->rel_l2 = r->check.rel_l2_err;
    res->tolerance = r->check.worst_tol;
    res->pass = r->check.pass;
    res->checked_tokens = r->checked;
    snprintf(res->how, sizeof res->how, "KV cache; the step as one CUDA graph");
}

/* The model of `kbench model generate` at the stage's shape, seeded, on the
 * GPU the stages command opened, without the ceilings (it measures them
 * once) and timed with its flush buffer. */
int kb_stage_fast(const kb_stage_shape *s, const kb_time_opts *timing, kb_stage_result *res, char *err,
                  size_t errlen)
{
    const kb_llama_config c = {.d_model = s->d_model, .d_ff = s->d_ff, .layers = s->layers, .heads = s->heads,
                               .kv_heads = s->kv_heads, .head_dim = s->d_model / s->heads, .vocab = s->vocab,
                               .max_pos = s->prompt + s->tokens + 1, .tied = s->tied, .eps = 1e-5,
                               .rope_theta = 10000};
    const char *why = kb_llama_gpu_unfit(&c);
    if (why) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    kb_llama_model m = {0};
    gpu_run r = {.timing = *timing};
    int pass = 0, *prompt = malloc(sizeof(int) * (size_t)s->prompt);
    int *out = malloc(sizeof(int) * (size_t)(s->tokens + 1));
    if (!prompt || !out || kb_llama_init_random(&m, &c, s->seed) != 0)
        why = "out of host memory";
    else {
        kb_stage_prompt(s, prompt, s->prompt);
        kb_llama_round_bf16(&m);
        why = run_all(&r, &m, prompt, s->prompt, s->tokens + 1, out, &pass);
    }
    if (!why)
        fast_result(&r, &c, s->prompt, res);
    else
        snprintf(err, errlen, "%s", why);
    gpu_run_free(&r);
    kb_llama_free(&m);
    free(prompt);
    free(out);
    return why ? -1 : 0;
}
