/* `kbench model stages`: the four stages of model/stages.h at one shape, in
 * one call on one GPU, each checked against its own C reference, printed as
 * one table (prefill ms, decode ms/token, tokens/s, share of the bandwidth
 * bound, error) and, with --append, written as `stage-prefill` and
 * `stage-decode` rows of a kbench CSV. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "harness/harness.h"
#include "model/llama.h"
#include "model/llama_gpu.h"
#include "model/stages.h"

#define NSTAGES 4

typedef int (*stage_fn)(const kb_stage_shape *, const kb_time_opts *, kb_stage_result *, char *, size_t);

static const struct {
    const char *name;
    stage_fn run;
} stages[NSTAGES] = {
    {"basic", kb_stage_basic}, {"paper", kb_stage_paper}, {"modern", kb_stage_modern}, {"fast", kb_stage_fast}};

typedef struct {
    kb_stage_shape shape;
    int only[NSTAGES];   /* which stages run (all unless --stages) */
    const char *append;  /* --append RUN.csv */
    int no_ceilings;
    kb_stop_rule stop;   /* --max-time, --max-noise, --min-samples */
} stages_opts;

void kb_stages_usage(FILE *f)
{
    fputs("usage: kbench model stages [--layers N] [--d-model D] [--heads H] [--kv-heads K] [--d-ff F]\n"
          "         [--vocab V] [--untied] [--prompt-len T] [--tokens N] [--seed N]\n"
          "         [--stages basic,paper,modern,fast] [--append RUN.csv] [--no-ceilings]\n"
          "         [--max-time SECONDS] [--max-noise PCT] [--min-samples N]\n"
          "  defaults: SmolLM2-135M's shape (30 layers, d 576, 9 heads, 3 KV heads, ff 1536,\n"
          "  vocab 49152, tied), a 512-token prompt, 16 decoded tokens\n",
          f);
}

/* ---- flags ----------------------------------------------------------------------------- */

static int parse_int(const char *flag, const char *val, long hi, int *out, char *err, size_t errlen)
{
    uint64_t v;
    if (kb_int_flag(flag, val, 1, (uint64_t)hi, &v, err, errlen) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_stages(const char *val, stages_opts *o, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    memset(o->only, 0, sizeof o->only);
    for (const char *p = val;;) {
        const size_t n = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < NSTAGES; ++i)
            if (n == strlen(stages[i].name) && !strncmp(p, stages[i].name, n))
                found = i;
        if (found < 0)
            return kb_fail(err, errlen, "--stages takes basic, paper, modern and fast, comma-separated; got '%s'",
                           kb_quote(val, q, sizeof q));
        if (o->only[found])
            return kb_fail(err, errlen, "--stages names '%s' twice", stages[found].name);
        o->only[found] = 1;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

static int *int_flag(stages_opts *o, const char *a, long *hi)
{
    static const char *const names[] = {"--layers", "--d-model", "--heads", "--kv-heads", "--d-ff",
                                        "--vocab",  "--prompt-len", "--tokens"};
    static const long highs[] = {1 << 16, 1 << 30, 1 << 16, 1 << 16, 1 << 30, 1 << 30, 1 << 20, 1 << 20};
    kb_stage_shape *s = &o->shape;
    int *slots[] = {&s->layers, &s->d_model, &s->heads, &s->kv_heads, &s->d_ff, &s->vocab, &s->prompt, &s->tokens};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i])) {
            *hi = highs[i];
            return slots[i];
        }
    return NULL;
}

static int parse_flag(stages_opts *o, const char *a, const char *val, char *err, size_t errlen)
{
    long hi;
    int *slot = int_flag(o, a, &hi);
    if (slot)
        return parse_int(a, val, hi, slot, err, errlen);
    if (!strcmp(a, "--seed"))
        return kb_int_flag(a, val, 0, UINT64_MAX, &o->shape.seed, err, errlen);
    if (!strcmp(a, "--stages"))
        return parse_stages(val, o, err, errlen);
    if (kb_is_stop_flag(a))
        return kb_parse_stop_flag(a, val, &o->stop, err, errlen);
    o->append = val; /* --append, the only string flag left */
    return 0;
}

static int takes_value(const char *a)
{
    long hi;
    stages_opts dummy;
    return int_flag(&dummy, a, &hi) || !strcmp(a, "--seed") || !strcmp(a, "--stages") || !strcmp(a, "--append") ||
           kb_is_stop_flag(a);
}

/* The shape's rules: what every stage needs (the fast stage's own limits are
 * a SKIP of that stage, not a refusal). */
static int check_shape(const kb_stage_shape *s, char *err, size_t errlen)
{
    if (s->d_model % s->heads)
        return kb_fail(err, errlen, "--d-model %d is not a multiple of --heads %d", s->d_model, s->heads);
    if (s->kv_heads > s->heads || s->heads % s->kv_heads)
        return kb_fail(err, errlen, "--heads %d is not a multiple of --kv-heads %d", s->heads, s->kv_heads);
    if ((s->d_model / s->heads) % 2)
        return kb_fail(err, errlen, "--d-model / --heads = %d is odd; RoPE rotates pairs", s->d_model / s->heads);
    const kb_llama_config c = {.d_model = s->d_model, .d_ff = s->d_ff, .layers = s->layers, .heads = s->heads,
                               .kv_heads = s->kv_heads, .head_dim = s->d_model / s->heads, .vocab = s->vocab,
                               .max_pos = s->prompt + s->tokens, .tied = s->tied, .eps = 1e-5, .rope_theta = 10000};
    if (kb_llama_weight_count(&c) < 0)
        return kb_fail(err, errlen, "the shape makes over 2^40 weights, the most kbench allocates");
    return kb_llama_config_check(&c, "the flags", err, errlen);
}

static int parse(int argc, char **argv, stages_opts *o, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    *o = (stages_opts){.shape = {.layers = 30, .d_model = 576, .heads = 9, .kv_heads = 3, .d_ff = 1536,
                                 .vocab = 49152, .tied = 1, .prompt = 512, .tokens = 16, .seed = 1},
                       .only = {1, 1, 1, 1}};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--untied"))
            o->shape.tied = 0;
        else if (!strcmp(a, "--no-ceilings"))
            o->no_ceilings = 1;
        else if (!takes_value(a))
            return kb_fail(err, errlen, "unknown flag '%s' for model stages", kb_quote(a, q, sizeof q));
        else if (i + 1 >= argc)
            return kb_fail(err, errlen, "%s needs a value", a);
        else if (parse_flag(o, a, argv[++i], err, errlen) != 0)
            return -1;
    }
    if (check_shape(&o->shape, err, errlen) != 0)
        return -1;
    if (o->append) {
        char *text = kb_csv_read_for_append(o->append, err, errlen);
        if (!text)
            return -1;
        free(text);
    }
    return 0;
}

/* ---- running and reporting ------------------------------------------------------------- */

static const kb_op stage_ops[] = {
    {.name = "stage-prefill", .shape_fields = "LxDxHxKVxFxVxT", .nd = 7, .flag_suffix = "t"},
    {.name = "stage-decode", .shape_fields = "LxDxHxKVxFxVxT", .nd = 7, .flag_suffix = "t"},
};
static const kb_variant stage_variants[NSTAGES] = {
    {.name = "basic", .dtype = KB_F32, .math = KB_MATH_F32},
    {.name = "paper", .dtype = KB_F32, .math = KB_MATH_F32},
    {.name = "modern", .dtype = KB_F32, .math = KB_MATH_F32},
    {.name = "fast", .dtype = KB_BF16, .math = KB_MATH_BF16},
};

typedef struct {
    int ran;             /* 0: skipped, with why */
    kb_stage_result r;
    char why[256];
} stage_outcome;

/* One row: the shape is layers x d x heads x kv_heads x ff x vocab x prompt ("t" when tied). */
static kb_result stage_row(const kb_stage_shape *s, int op, int stage, const stage_outcome *out)
{
    kb_result row;
    memset(&row, 0, sizeof row);
    row.op = &stage_ops[op];
    row.variant = &stage_variants[stage];
    row.shape = (kb_shape){7, {s->layers, s->d_model, s->heads, s->kv_heads, s->d_ff, s->vocab, s->prompt}, s->tied};
    row.family = "model";
    snprintf(row.devices, sizeof row.devices, "0");
    if (!out->ran) {
        row.status = KB_SKIP;
        snprintf(row.reason, sizeof row.reason, "%s", out->why);
        return row;
    }
    const kb_stage_result *r = &out->r;
    row.flops = op ? r->decode_flops : r->prefill_flops;
    row.bytes = r->decode_bytes;
    row.check = (kb_check){.rel_l2_err = r->rel_l2, .worst_tol = r->tolerance, .pass = r->pass};
    row.rows_checked = r->checked_tokens;
    row.rows_total = s->prompt + s->tokens;
    row.status = r->pass ? KB_PASS : KB_FAIL;
    row.timed = r->pass;
    kb_timing_fill(op ? &r->decode : &r->prefill, &row);
    if (!r->pass)
        snprintf(row.reason, sizeof row.reason, "logits rel. L2 %.3e over the bound %.3e", r->rel_l2, r->tolerance);
    return row;
}

static const char *append_rows(const stages_opts *o, const stage_outcome *out)
{
    static char err[512];
    kb_result rows[2 * NSTAGES];
    int n = 0;
    for (int i = 0; i < NSTAGES; ++i)
        if (o->only[i])
            for (int op = 0; op < 2; ++op)
                rows[n++] = stage_row(&o->shape, op, i, &out[i]);
    char *prefix = kb_csv_read_for_append(o->append, err, sizeof err);
    if (!prefix)
        return err;
    const int rc = kb_csv_write_after(o->append, prefix, rows, n, err, sizeof err);
    free(prefix);
    if (rc)
        return err;
    printf("added %d rows to %s\n", n, o->append);
    return NULL;
}

static void print_table(const stages_opts *o, const stage_outcome *out, double mem_gb_s)
{
    printf("\n%-7s %-5s %12s %12s %9s %11s %10s %s\n", "stage", "dtype", "prefill ms", "ms/token", "tokens/s",
           "% of bound", "rel. L2", "check");
    for (int i = 0; i < NSTAGES; ++i) {
        if (!o->only[i])
            continue;
        const kb_stage_result *r = &out[i].r;
        if (!out[i].ran) {
            printf("%-7s SKIP: %s\n", stages[i].name, out[i].why);
            continue;
        }
        const double ms = r->decode.ms.median, gbs = r->decode_bytes / (ms * 1e-3) * 1e-9;
        printf("%-7s %-5s %12.3f %12.3f %9.1f", stages[i].name, r->dtype, r->prefill.ms.median, ms, 1e3 / ms);
        if (mem_gb_s > 0)
            printf(" %10.1f%%", 100 * gbs / mem_gb_s);
        else
            printf(" %11s", "-");
        printf(" %10.2e %s  (%s)\n", r->rel_l2, r->pass ? "PASS" : "FAIL", r->how);
    }
}

/* Each selected stage in turn; whether a check failed. */
static int run_stages(const stages_opts *o, const kb_time_opts *timing, stage_outcome *out)
{
    int failed = 0;
    memset(out, 0, sizeof *out * NSTAGES);
    for (int i = 0; i < NSTAGES; ++i) {
        if (!o->only[i])
            continue;
        printf("%s ...\n", stages[i].name);
        fflush(stdout);
        out[i].ran = stages[i].run(&o->shape, timing, &out[i].r, out[i].why, sizeof out[i].why) == 0;
        if (!out[i].ran)
            printf("%s: SKIP: %s\n", stages[i].name, out[i].why);
        failed |= out[i].ran && !out[i].r.pass;
    }
    return failed;
}

static int run(const stages_opts *o)
{
    kb_device_info info;
    kb_ceilings ceil = {0};
    char err[512];
    if (kb_gpu_open(0, &info, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_FAIL;
    }
    kb_time_opts timing = {.rule = o->stop};
    if (!(timing.flush = kb_alloc_flush(&info, &timing.flush_bytes))) {
        fprintf(stderr, "kbench: out of device memory for the L2 flush buffer\n");
        return KB_EXIT_FAIL;
    }
    if (!o->no_ceilings)
        kb_measure_ceilings(&info, timing.flush, timing.flush_bytes, &ceil);
    const kb_stage_shape *s = &o->shape;
    printf("GPU: %s (sm_%d%d, %d SMs); copy ceiling %.0f GB/s\n", info.name, info.cc_major, info.cc_minor,
           info.sm_count, ceil.mem_gb_s);
    printf("shape: %d layers, d %d, %d heads (%d KV heads in modern and fast), ff %d, vocab %d, %s; prefill %d "
           "tokens, then %d decoded\n",
           s->layers, s->d_model, s->heads, s->kv_heads, s->d_ff, s->vocab, s->tied ? "tied" : "untied", s->prompt,
           s->tokens);
    stage_outcome out[NSTAGES];
    const int failed = run_stages(o, &timing, out);
    cudaFree(timing.flush);
    print_table(o, out, ceil.mem_gb_s);
    const char *aerr = o->append ? append_rows(o, out) : NULL;
    if (aerr)
        fprintf(stderr, "kbench: %s\n", aerr);
    return failed || aerr ? KB_EXIT_FAIL : 0;
}

int kb_cmd_stages(int argc, char **argv)
{
    if (kb_asks_help(argc, argv)) {
        kb_stages_usage(stdout);
        return 0;
    }
    stages_opts o;
    char err[512];
    if (parse(argc, argv, &o, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    return run(&o);
}
