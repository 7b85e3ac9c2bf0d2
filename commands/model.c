/* `kbench model`: weights and inputs (commands/model_inputs.c), the C
 * reference on the CPU, then each GEMM path on the GPU (commands/model_paths.c),
 * checked before and after timing, timed as plain stream launches and as
 * CUDA graphs.  Prints the CPU vs GPU breakdown and writes one CSV row per
 * (path, launch mode), after checking every output before any work. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "formats/fileio.h"
#include "formats/npy.h"
#include "harness/harness.h"
#include "commands/model_internal.h"
#include "commands/generate.h"
#include "commands/train.h"
#include "model/stages.h"

/* Double-precision FLOPs of reference work per check, when --check-seqs is
 * not given: at least the first and last sequence, more while they fit. */
#define CPU_CHECK_FLOPS 4e10

static const char *const mode_names[] = {"encoder", "decoder", "seq2seq"};

/* ---- the C reference ------------------------------------------------------------- */

static double now_ms(void) { return omp_get_wtime() * 1e3; }

/* All sequences with --cpu-only or when cheap; else first, last and evenly
 * spaced ones within the budget (or --check-seqs of them).  -1 when out of
 * memory. */
static int pick_sequences(const kb_model_opts *o, double flops_per_seq, int B, kb_model_reference *r)
{
    /* In double: the budget over a tiny model's FLOPs can pass INT_MAX. */
    const double fit = CPU_CHECK_FLOPS / flops_per_seq;
    int n = o->check_seqs ? o->check_seqs : fit < B ? (int)fit : B;
    n = o->cpu_only || n > B ? B : n < 2 ? 2 : n;
    n = n > B ? B : n;
    r->n = n;
    r->seq = malloc(sizeof(int) * (size_t)n);
    if (!r->seq)
        return -1;
    for (int i = 0; i < n; ++i)
        r->seq[i] = n == 1 ? 0 : (int)((int64_t)i * (B - 1) / (n - 1));
    return 0;
}

/* -1 when out of memory for the outputs or the reference's scratch. */
static int run_reference(const kb_tf_model *m, kb_tf_mode mode, const kb_model_inputs *in, kb_model_reference *r)
{
    const int64_t d = m->cfg.d_model, T = kb_model_out_len(mode, in);
    r->ref = malloc(sizeof(float) * (size_t)(r->n * T * d));
    if (!r->ref)
        return -1;
    double t0 = now_ms();
    for (int i = 0; i < r->n; ++i) {
        const int64_t b = r->seq[i];
        if (kb_tf_reference_seq(m, mode, in->Ts, in->Tt, in->src + b * in->Ts * d,
                                in->tgt ? in->tgt + b * in->Tt * d : NULL, r->ref + i * T * d) != 0)
            return -1;
    }
    r->cpu_ms = now_ms() - t0;
    return 0;
}

static int write_out(const char *path, const float *out, int B, int T, int d)
{
    const int64_t shape[3] = {B, T, d};
    char err[512], q[KB_QUOTE_LEN];
    if (kb_npy_write(path, 3, shape, out, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return -1;
    }
    printf("wrote %s (%d x %d x %d)\n", kb_quote(path, q, sizeof q), B, T, d);
    return 0;
}

/* The kernels that differ from the defaults, as "+OP-VARIANT" each: what a
 * row's variant name adds, so rows of other kernels never pass for the
 * defaults'. */
static void kernels_suffix(const kb_tf_kernels *k, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int kind = 0; kind < 3; ++kind) {
        const char *name = kb_tf_kernel_name(k, kind);
        if (strcmp(name, kb_tf_kernel_name(NULL, kind)) && used < len)
            used += (size_t)snprintf(buf + used, len - used, "+%s-%s", kb_tf_kernel_ops[kind], name);
    }
}

static void print_setup(const kb_tf_model *m, kb_tf_mode mode, const kb_model_inputs *in, const kb_tf_kernels *k)
{
    const kb_tf_config *c = &m->cfg;
    printf("kbench model %s: B=%d Ts=%d", mode_names[mode], in->B, in->Ts);
    if (mode != KB_TF_ENCODER)
        printf(" Tt=%d", in->Tt);
    printf(", d_model=%d heads=%d d_ff=%d, layers %d+%d%s, %.1fM weights, %.1f GFLOP per forward\n", c->d_model,
           c->heads, c->d_ff, c->enc_layers, c->dec_layers,
           mode == KB_TF_ENCODER ? "" : c->causal ? ", causal decoder" : ", unmasked decoder",
           kb_tf_weight_count(c) / 1e6, kb_model_flops(c, in) / 1e9);
    if (!k) /* --cpu-only: only the C reference runs */
        return;
    printf("kernels: attention %s, add_layernorm %s%s%s\n", kb_tf_kernel_name(k, 0), kb_tf_kernel_name(k, 1),
           mode == KB_TF_SEQ2SEQ ? ", final norms layernorm " : "", mode == KB_TF_SEQ2SEQ ? kb_tf_kernel_name(k, 2) : "");
}

static void print_cpu(const kb_model_reference *r, int B)
{
    printf("CPU total (C reference, double, %d threads): %.1f ms", omp_get_max_threads(), r->cpu_ms);
    if (r->n < B)
        printf(" for %d of %d sequences; the batch would take ~%.0f ms", r->n, B, r->cpu_ms * B / r->n);
    putchar('\n');
}

/* Pick the sequences and run the reference on them, or say why not. */
static int reference(const kb_model_opts *o, const kb_tf_model *m, const kb_model_inputs *in, kb_model_reference *r)
{
    const double flops_per_seq = o->cpu_only ? 1 : kb_model_flops(&m->cfg, in) / in->B;
    if (pick_sequences(o, flops_per_seq, in->B, r) != 0 || run_reference(m, o->mode, in, r) != 0) {
        fprintf(stderr, "kbench: out of host memory for the C reference\n");
        return -1;
    }
    print_cpu(r, in->B);
    return 0;
}

/* ---- CSV rows ----------------------------------------------------------------------- */

static const kb_op model_ops[] = {
    {.name = "encoder-layer", .shape_fields = "BxTxDxHxFxL", .nd = 6},
    {.name = "decoder-layer", .shape_fields = "BxTsxTtxDxHxFxL", .nd = 7, .flag_suffix = "c"},
    {.name = "seq2seq", .shape_fields = "BxTsxTtxDxHxFxLexLd", .nd = 8, .flag_suffix = "c"},
};

/* A row's variant: the GEMM path and launch mode (fp32_graph), then the
 * kernels that differ from the defaults (kernels_suffix). */
static kb_variant model_variants[KB_TF_GEMM_COUNT][2];
static char model_variant_names[KB_TF_GEMM_COUNT][2][160];

static const kb_variant *model_variant(kb_tf_gemm gemm, int graph, const kb_tf_kernels *k)
{
    char suffix[128];
    kernels_suffix(k, suffix, sizeof suffix);
    snprintf(model_variant_names[gemm][graph], sizeof model_variant_names[gemm][graph], "%s_%s%s",
             kb_tf_gemm_name(gemm), graph ? "graph" : "stream", suffix);
    model_variants[gemm][graph] = (kb_variant){.name = model_variant_names[gemm][graph], .dtype = KB_F32,
                                               .math = gemm == KB_TF_GEMM_3XTF32 ? KB_MATH_3XTF32 : KB_MATH_F32};
    return &model_variants[gemm][graph];
}

static kb_shape model_shape(const kb_tf_config *c, kb_tf_mode mode, const kb_model_inputs *in)
{
    kb_shape s = {0};
    int64_t *d = s.d;
    *d++ = in->B;
    *d++ = in->Ts;
    if (mode != KB_TF_ENCODER)
        *d++ = in->Tt;
    *d++ = c->d_model;
    *d++ = c->heads;
    *d++ = c->d_ff;
    if (mode != KB_TF_DECODER)
        *d++ = c->enc_layers;
    if (mode != KB_TF_ENCODER)
        *d++ = c->dec_layers;
    s.nd = (int)(d - s.d);
    s.flags = mode != KB_TF_ENCODER && c->causal;
    return s;
}

static void fill_row(const kb_model_gpu_run *r, kb_tf_gemm gemm, int k, const kb_model_path *p, kb_result *row)
{
    const kb_tf_config *c = &r->m->cfg;
    memset(row, 0, sizeof *row);
    row->op = &model_ops[r->mode];
    row->variant = model_variant(gemm, k, r->kernels);
    row->shape = model_shape(c, r->mode, r->in);
    row->family = "model";
    row->flops = kb_model_flops(c, r->in);
    row->bytes = kb_model_bytes(c, r->mode, r->in);
    row->check = p->check.pass && !p->recheck.pass && !p->error ? p->recheck : p->check;
    row->rows_checked = (int64_t)r->ref->n * kb_model_out_len(r->mode, r->in);
    row->rows_total = (int64_t)r->in->B * kb_model_out_len(r->mode, r->in);
    row->hot = r->timing.hot;
    row->status = kb_model_path_passed(p) ? KB_PASS : KB_FAIL;
    row->timed = row->status == KB_PASS;
    kb_timing_fill(&p->timing, row);
    if (p->error)
        snprintf(row->reason, sizeof row->reason, "%s", p->error);
    else if (!p->check.pass || !p->recheck.pass)
        snprintf(row->reason, sizeof row->reason, "relative L2 error %.3e, %lld non-finite%s", row->check.rel_l2_err,
                 (long long)row->check.nonfinite, p->check.pass ? " after timing" : "");
}

/* ---- outputs, checked before any work ---------------------------------------------- */

typedef struct {
    kb_meta_set meta;
    char csv[4096];
    char *prefix;     /* --append: the CSV's text so far */
    kb_result rows[2 * KB_TF_GEMM_COUNT];
    int nrows;
} csv_out;

static int output_error(char *err, size_t errlen, const char *flag, const char *path, const char *why)
{
    char q[KB_QUOTE_LEN];
    snprintf(err, errlen, "%s '%s' %s", flag, kb_quote(path, q, sizeof q), why);
    return -1;
}

/* Whether this process may create files in dir (which must exist). */
static int writable_dir(const char *flag, const char *path, const char *dir, char *err, size_t errlen)
{
    char why[256];
    if (access(dir, W_OK | X_OK) == 0)
        return 0;
    snprintf(why, sizeof why, "cannot be written: %s", strerror(errno));
    return output_error(err, errlen, flag, path, why);
}

/* dir with path's last component dropped, as dirname(3) gives it. */
static int parent_of(const char *path, char *dir, size_t len)
{
    if (strlen(path) >= len)
        return -1;
    strcpy(dir, path);
    const char *parent = dirname(dir);
    memmove(dir, parent, strlen(parent) + 1);
    return 0;
}

/* An output file, as the writers replace it (a temporary file beside it,
 * renamed over it): absent or a regular file, in a writable directory. */
/* The file the writer will replace (kb_output_target: a link's file; a
 * device, a link to no file or a hard link refused), in a writable folder. */
static int check_file(const char *flag, const char *path, char *err, size_t errlen)
{
    char target[PATH_MAX], dir[PATH_MAX], why[KB_QUOTE_LEN + 128];
    if (kb_output_target(path, target, sizeof target, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", flag, why);
        return -1;
    }
    if (parent_of(target, dir, sizeof dir) != 0)
        return output_error(err, errlen, flag, path, "is too long a path");
    return writable_dir(flag, path, dir, err, errlen);
}

/* The CSV's directory: a writable one, or one that can be made (later, by
 * kb_default_csv_path) in a writable parent. */
static int check_dir(const char *flag, const char *path, char *err, size_t errlen)
{
    struct stat st;
    char parent[PATH_MAX];
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? writable_dir(flag, path, path, err, errlen)
                                   : output_error(err, errlen, flag, path, "is not a directory");
    if (parent_of(path, parent, sizeof parent) != 0)
        return output_error(err, errlen, flag, path, "is too long a path");
    return writable_dir(flag, path, parent, err, errlen);
}

/* Every output, so that a bad one is refused before the reference runs:
 * --out, and for a GPU run the CSV (--csv; --append's kbench CSV, read now;
 * or a new file under --out-dir or results/). */
static int check_outputs(const kb_model_opts *o, csv_out *co, char *err, size_t errlen)
{
    if (o->out_npy && check_file("--out", o->out_npy, err, errlen) != 0)
        return -1;
    if (o->cpu_only)
        return 0;
    if (o->csv_path)
        return check_file("--csv", o->csv_path, err, errlen);
    if (!o->append)
        return check_dir(o->out_dir ? "--out-dir" : "the default --out-dir", o->out_dir ? o->out_dir : "results",
                         err, errlen);
    if (check_file("--append", o->append, err, errlen) != 0)
        return -1;
    if (access(o->append, F_OK) != 0)
        return output_error(err, errlen, "--append", o->append, "does not exist (it adds rows to a kbench CSV)");
    co->prefix = kb_csv_read_for_append(o->append, err, errlen);
    return co->prefix ? 0 : -1;
}

/* ---- the command ------------------------------------------------------------------ */

static int cpu_only(const kb_model_opts *o, const kb_tf_model *m, const kb_model_inputs *in)
{
    kb_model_reference ref = {0};
    int rc = reference(o, m, in, &ref) != 0 ||
             (o->out_npy && write_out(o->out_npy, ref.ref, in->B, kb_model_out_len(o->mode, in), m->cfg.d_model) != 0);
    free(ref.seq);
    free(ref.ref);
    return rc ? KB_EXIT_FAIL : 0;
}

static int open_gpu(const kb_model_opts *o, kb_model_gpu_run *r, const kb_device_info *dev, csv_out *co)
{
    char err[512];
    if (!o->csv_path && !o->append &&
        kb_default_csv_path(o->out_dir, co->csv, sizeof co->csv, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return -1;
    }
    if (o->csv_path || o->append)
        snprintf(co->csv, sizeof co->csv, "%s", o->csv_path ? o->csv_path : o->append);
    const size_t src = kb_model_in_bytes(r, 0), tgt = kb_model_in_bytes(r, 1), out = kb_model_out_bytes(r);
    if (cudaStreamCreate(&r->stream) != cudaSuccess || cudaMallocHost((void **)&r->h_src, src) != cudaSuccess ||
        cudaMallocHost((void **)&r->h_tgt, tgt) != cudaSuccess || cudaMallocHost((void **)&r->h_out, out) != cudaSuccess ||
        !(r->timing.flush = kb_alloc_flush(dev, &r->timing.flush_bytes))) {
        fprintf(stderr, "kbench: out of memory for the pinned inputs, output and L2 flush buffer\n");
        return -1;
    }
    memcpy(r->h_src, r->in->src, src);
    if (r->in->tgt)
        memcpy(r->h_tgt, r->in->tgt, tgt);
    const kb_options meta_opts = {.hot = o->hot, .row_cap_s = o->stop.cap_s, .max_noise = o->stop.max_noise,
                                  .min_samples = o->stop.min_samples};
    kb_collect_meta(dev, &meta_opts, &co->meta);
    return 0;
}

static void close_gpu(kb_model_gpu_run *r)
{
    cudaFreeHost(r->h_src);
    cudaFreeHost(r->h_tgt);
    cudaFreeHost(r->h_out);
    cudaFree(r->timing.flush);
    if (r->stream)
        cudaStreamDestroy(r->stream);
}

/* One GEMM path: build, check, time, print, add its two rows. */
static int gpu_path(const kb_model_opts *o, const kb_model_gpu_run *r, kb_tf_gemm gemm, int write_output, csv_out *co)
{
    kb_tf_gpu *g;
    char err[512];
    const char *e = kb_tf_gpu_create(r->m, r->mode, r->in->B, r->in->Ts, r->in->Tt, gemm, &o->kernels, &g);
    if (e) {
        fprintf(stderr, "kbench: %s path: %s\n", kb_tf_gemm_name(gemm), e);
        return -1;
    }
    kb_model_path res[2] = {{.error = NULL}, {.error = NULL}};
    e = kb_model_run_path(g, r, res);
    kb_tf_gpu_destroy(g);
    if (e) {
        fprintf(stderr, "kbench: %s path failed on the GPU: %s\n", kb_tf_gemm_name(gemm), e);
        return -1;
    }
    kb_model_print_path(gemm, r->mode, res, r->ref, r->in->B);
    for (int k = 0; k < 2; ++k)
        fill_row(r, gemm, k, &res[k], &co->rows[co->nrows++]);
    if ((co->prefix ? kb_csv_write_after(co->csv, co->prefix, co->rows, co->nrows, err, sizeof err)
                    : kb_csv_write(co->csv, co->meta.meta, co->meta.n, co->rows, co->nrows, err, sizeof err)) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return -1;
    }
    if (write_output && o->out_npy &&
        write_out(o->out_npy, r->h_out, r->in->B, kb_model_out_len(r->mode, r->in), r->m->cfg.d_model) != 0)
        return -1;
    return kb_model_path_passed(&res[0]) && kb_model_path_passed(&res[1]) ? 0 : 1;
}

static int gpu_model(const kb_model_opts *o, const kb_tf_model *m, const kb_model_inputs *in,
                     const kb_device_info *dev, csv_out *co)
{
    kb_model_gpu_run r = {.m = m, .mode = o->mode, .in = in, .timing = {o->stop, o->hot}, .kernels = &o->kernels};
    kb_model_reference ref = {0};
    int rc = 0, first = 1;
    if (open_gpu(o, &r, dev, co) != 0 || reference(o, m, in, &ref) != 0)
        rc = -1;
    else {
        kb_meta_set_value(&co->meta, "cpu_reference_ms", "%.1f", ref.cpu_ms);
        kb_meta_set_value(&co->meta, "cpu_reference_sequences", "%d of %d", ref.n, in->B);
        r.ref = &ref;
    }
    for (int gm = 0; gm < KB_TF_GEMM_COUNT && rc >= 0; ++gm)
        if (!o->gemm_mask || (o->gemm_mask >> gm & 1)) {
            int prc = gpu_path(o, &r, (kb_tf_gemm)gm, first, co);
            rc = prc < 0 ? -1 : rc | prc;
            first = 0;
        }
    char q[KB_QUOTE_LEN];
    if (co->nrows)
        printf("wrote %s\n", kb_quote(co->csv, q, sizeof q));
    close_gpu(&r);
    free(ref.seq);
    free(ref.ref);
    return rc ? KB_EXIT_FAIL : 0;
}

/* Flags, outputs, sizes, weights and inputs (exit 2), then the GPU (exit
 * 1), all before any work: 0, or the exit code with one line in err. */
static int prepare(int argc, char **argv, kb_model_opts *o, csv_out *co, kb_device_info *dev, kb_tf_model *m,
                   kb_model_inputs *in, char *err, size_t errlen)
{
    if (kb_model_parse(argc, argv, o, err, errlen) != 0 || check_outputs(o, co, err, errlen) != 0 ||
        kb_model_load(o, m, in, err, errlen) != 0)
        return KB_EXIT_USAGE;
    const char *unfit = o->cpu_only ? NULL : kb_tf_kernels_fit(&o->kernels, &m->cfg, o->mode, in->B, in->Ts, in->Tt);
    if (unfit) {
        snprintf(err, errlen, "%s", unfit);
        return KB_EXIT_USAGE;
    }
    if (o->cpu_only)
        return 0;
    if (kb_gpu_open(o->device, dev, err, errlen) != 0)
        return KB_EXIT_FAIL;
    /* A kernel this GPU is too old for: one line, before the reference runs. */
    const char *old_gpu = kb_tf_kernels_cc(&o->kernels, o->mode, dev->cc_major * 10 + dev->cc_minor);
    if (old_gpu) {
        snprintf(err, errlen, "%s", old_gpu);
        return KB_EXIT_FAIL;
    }
    return 0;
}

int kb_cmd_model(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "generate"))
        return kb_cmd_generate(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "stages"))
        return kb_cmd_stages(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "tokenize"))
        return kb_cmd_tokenize(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "train"))
        return kb_cmd_train(argc - 1, argv + 1);
    if (kb_asks_help(argc, argv)) {
        kb_model_usage(stdout);
        return 0;
    }
    kb_model_opts o;
    kb_tf_model m = {0};
    kb_model_inputs in = {0};
    kb_device_info dev;
    csv_out *co = calloc(1, sizeof *co);
    char err[512];
    if (!co) {
        fprintf(stderr, "kbench: out of host memory\n");
        return KB_EXIT_FAIL;
    }
    int rc = prepare(argc, argv, &o, co, &dev, &m, &in, err, sizeof err);
    if (rc)
        fprintf(stderr, "kbench: %s\n", err);
    else {
        print_setup(&m, o.mode, &in, o.cpu_only ? NULL : &o.kernels);
        rc = o.cpu_only ? cpu_only(&o, &m, &in) : gpu_model(&o, &m, &in, &dev, co);
    }
    kb_tf_free(&m);
    free(in.src);
    free(in.tgt);
    free(co->prefix);
    free(co);
    return rc;
}
