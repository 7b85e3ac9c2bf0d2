/* `kbench model`: weights and inputs, the C reference on the CPU, then
 * each GEMM path on the GPU, checked before and after timing, timed as
 * plain stream launches and as CUDA graphs.  Prints the CPU vs GPU
 * breakdown and writes one CSV row per (path, launch mode). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "formats/npy.h"
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "kernels/posenc.h"
#include "model/command.h"
#include "model/generate.h"
#include "model/gpu.h"
#include "model/stages.h"
#include "tokenizer/tokenizer.h"

#define WARMUP_S 0.05
#define MIN_SAMPLES 5
#define MAX_SAMPLES 2000
#define TARGET_NOISE 0.01
/* Double-precision FLOPs of reference work per check, when --check-seqs is
 * not given: at least the first and last sequence, more while they fit. */
#define CPU_CHECK_FLOPS 4e10

typedef struct {
    int B, Ts, Tt;
    float *src, *tgt; /* B x Ts x d, B x Tt x d */
} model_inputs;

/* The sequences checked against the reference, and its outputs for them. */
typedef struct {
    int n, *seq;
    float *ref;       /* n x T_out x d */
    double cpu_ms;    /* wall time of the reference on these n */
} reference_run;

static int out_len(kb_tf_mode mode, const model_inputs *in) { return mode == KB_TF_ENCODER ? in->Ts : in->Tt; }

static const char *const mode_names[] = {"encoder", "decoder", "seq2seq"};

/* ---- FLOPs and bytes of one forward ---------------------------------------------- */

static double encoder_layer_flops(const kb_tf_config *c, double B, double Ts)
{
    const double d = c->d_model, n = B * Ts;
    return 8 * n * d * d + 4 * n * d * c->d_ff + 4 * B * Ts * Ts * d;
}

static double decoder_layer_flops(const kb_tf_config *c, double B, double Ts, double Tt)
{
    const double d = c->d_model, nt = B * Tt, ns = B * Ts;
    const double self = 8 * nt * d * d + (c->causal ? 2 : 4) * B * Tt * Tt * d;
    const double cross = 4 * nt * d * d + 4 * ns * d * d + 4 * B * Tt * Ts * d;
    return self + cross + 4 * nt * d * c->d_ff;
}

static double forward_flops(const kb_tf_config *c, const model_inputs *in)
{
    return c->enc_layers * encoder_layer_flops(c, in->B, in->Ts) +
           c->dec_layers * decoder_layer_flops(c, in->B, in->Ts, in->Tt);
}

/* Every weight, the inputs and the output, once. */
static double forward_bytes(const kb_tf_config *c, kb_tf_mode mode, const model_inputs *in)
{
    const double tokens = (double)in->B * (in->Ts + (mode == KB_TF_ENCODER ? 0 : in->Tt) + out_len(mode, in));
    return 4.0 * ((double)kb_tf_weight_count(c) + tokens * c->d_model);
}

/* ---- weights and inputs ------------------------------------------------------------ */

/* The model the flags describe, checked before anything is allocated. */
static int random_config(const kb_model_opts *o, kb_tf_config *c, char *err, size_t errlen)
{
    const int d = o->d_model ? o->d_model : 512, heads = o->heads ? o->heads : 8;
    const int layers = o->layers ? o->layers : o->mode == KB_TF_SEQ2SEQ ? 6 : 1;
    const int64_t ff = o->d_ff ? o->d_ff : 4 * (int64_t)d;
    *c = (kb_tf_config){d, heads, (int)ff, o->mode == KB_TF_DECODER ? 0 : layers,
                        o->mode == KB_TF_ENCODER ? 0 : layers, 1e-5f, !o->no_causal};
    if (ff > 1 << 30)
        snprintf(err, errlen, "--d-ff defaults to 4 x --d-model = %lld, over 2^30: give --d-ff", (long long)ff);
    else if (d % heads)
        snprintf(err, errlen, "--d-model %d is not a multiple of --heads %d", d, heads);
    else if (kb_tf_weight_count(c) < 0)
        snprintf(err, errlen, "--d-model %d, --d-ff %d and --layers %d make over 2^40 weights, the most kbench "
                 "allocates", d, c->d_ff, layers);
    else
        return 0;
    return -1;
}

/* One .npy input: (B, T, d) or (T, d), d matching the model, all finite. */
static int read_npy(const char *path, int d, kb_npy *a, int *B, int *T, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    if (kb_npy_read(path, a, err, errlen) != 0)
        return -1;
    const int nd = a->ndim;
    int64_t bad = -1;
    if ((nd != 2 && nd != 3) || a->shape[nd - 1] != d || a->count == 0 || a->shape[nd - 2] > (1 << 30) ||
        (nd == 3 && a->shape[0] > (1 << 30)))
        snprintf(err, errlen, "%s: expected float32 (B, T, %d) or (T, %d) activations",
                 kb_quote(path, q, sizeof q), d, d);
    else if ((bad = kb_first_nonfinite(a->data, a->count)) >= 0)
        snprintf(err, errlen, "%s: holds NaN or Inf (element %lld)", kb_quote(path, q, sizeof q), (long long)bad);
    else {
        *B = nd == 3 ? (int)a->shape[0] : 1;
        *T = (int)a->shape[nd - 2];
        return 0;
    }
    return -1;
}

static int inputs_from_npy(const kb_model_opts *o, int d, model_inputs *in, char *err, size_t errlen)
{
    kb_npy s = {0}, t = {0};
    int Bt = 0;
    if (read_npy(o->src_npy, d, &s, &in->B, &in->Ts, err, errlen) != 0 ||
        (o->tgt_npy && read_npy(o->tgt_npy, d, &t, &Bt, &in->Tt, err, errlen) != 0)) {
        kb_npy_free(&s);
        return -1;
    }
    if (o->tgt_npy && Bt != in->B) {
        char qs[KB_QUOTE_LEN], qt[KB_QUOTE_LEN];
        snprintf(err, errlen, "%s holds %d sequences but %s holds %d", kb_quote(o->src_npy, qs, sizeof qs), in->B,
                 kb_quote(o->tgt_npy, qt, sizeof qt), Bt);
        kb_npy_free(&s);
        kb_npy_free(&t);
        return -1;
    }
    in->src = s.data;
    in->tgt = t.data;
    if (!o->tgt_npy)
        in->Tt = 1;
    return 0;
}

/* Token ids through a seeded embedding table, plus the positional encoding
 * (the embed op's convention, kernels/posenc.h).  NULL when out of memory;
 * *T gets the token count either way. */
static float *embed_text(const kb_vocab *v, const char *text, int d, uint64_t seed, int *T)
{
    const int n = kb_encode(v, text, NULL, 0);
    const size_t rows = n > 0 ? (size_t)n : 1;
    int *ids = malloc(sizeof(int) * rows);
    float *x = malloc(sizeof(float) * rows * d), *row = malloc(sizeof(float) * d);
    float *pe = malloc(sizeof(float) * rows * d);
    *T = n;
    if (ids && x && row && pe) {
        kb_encode(v, text, ids, n);
        posenc_table_f32(n, d, KB_POSENC_SEED_SCALE, pe);
        for (int t = 0; t < n; ++t) {
            kb_fill_uniform(row, d, seed * 1000003u + (uint64_t)ids[t]);
            for (int j = 0; j < d; ++j)
                x[(int64_t)t * d + j] = row[j] + pe[(int64_t)t * d + j];
        }
    } else {
        free(x);
        x = NULL;
    }
    free(ids);
    free(row);
    free(pe);
    return x;
}

static int inputs_from_text(const kb_model_opts *o, int d, model_inputs *in, char *err, size_t errlen)
{
    kb_vocab v;
    if (o->vocab ? kb_vocab_load(o->vocab, &v, err, errlen) != 0 : kb_vocab_default(&v) != 0) {
        if (!o->vocab)
            snprintf(err, errlen, "out of host memory for the vocabulary");
        return -1;
    }
    in->B = 1;
    in->src = embed_text(&v, o->src_text, d, o->seed, &in->Ts);
    in->tgt = o->tgt_text ? embed_text(&v, o->tgt_text, d, o->seed, &in->Tt) : NULL;
    in->Tt = o->tgt_text ? in->Tt : 1;
    kb_vocab_free(&v);
    if (in->Ts == 0 || in->Tt == 0) {
        snprintf(err, errlen, "--%s holds no tokens", in->Ts == 0 ? "src" : "tgt");
        return -1;
    }
    if (!in->src || (o->tgt_text && !in->tgt)) {
        snprintf(err, errlen, "out of host memory for the embedded text");
        return -1;
    }
    return 0;
}

/* The kernels index tokens with int: at most 2^30 of them in a batch; and
 * every activation buffer (tokens x d_model or d_ff) is within
 * KB_TF_MAX_FLOATS, so no size computed from them overflows. */
static int check_activations(const kb_tf_config *c, const model_inputs *in, char *err, size_t errlen)
{
    const int64_t tokens = (int64_t)in->B * (in->Ts > in->Tt ? in->Ts : in->Tt);
    const int64_t width = c->d_ff > c->d_model ? c->d_ff : c->d_model;
    if (tokens > 1 << 30)
        snprintf(err, errlen, "batch x length is over 2^30 tokens");
    else if (kb_size_muladd(tokens, width, 0) > KB_TF_MAX_FLOATS)
        snprintf(err, errlen, "%lld tokens (--batch x --src-len, --tgt-len) at width %lld (--d-model, --d-ff) are "
                 "over 2^40 activations, the most kbench allocates", (long long)tokens, (long long)width);
    else
        return 0;
    return -1;
}

/* The host memory of the random weights, the inputs and the output, known
 * before they are allocated: past the host's memory only the OOM killer
 * would say so, once the initializer touches the pages. */
static int check_host_memory(const kb_model_opts *o, const kb_tf_config *c, const model_inputs *in, char *err,
                             size_t errlen)
{
    const int64_t tokens = (int64_t)in->B * (in->Ts + in->Tt + out_len(o->mode, in));
    const double floats = (double)tokens * c->d_model + (o->weights ? 0 : (double)kb_tf_weight_count(c));
    const double need = 4 * floats / (1 << 30);
    const double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE) / (1 << 30);
    if (have <= 0 || need <= have)
        return 0;
    snprintf(err, errlen, "the weights and activations need %.1f GiB of host memory; this host has %.1f GiB",
             need, have);
    return -1;
}

/* The sizes of random inputs; allocated by random_inputs once checked. */
static void random_shape(const kb_model_opts *o, model_inputs *in)
{
    in->B = o->batch ? o->batch : 32;
    in->Ts = o->src_len ? o->src_len : 128;
    in->Tt = o->tgt_len ? o->tgt_len : 128;
}

static int random_inputs(const kb_model_opts *o, int d, model_inputs *in, char *err, size_t errlen)
{
    const int64_t ns = (int64_t)in->B * in->Ts * d, nt = (int64_t)in->B * in->Tt * d;
    in->src = malloc(sizeof(float) * (size_t)ns);
    in->tgt = malloc(sizeof(float) * (size_t)nt);
    if (!in->src || !in->tgt) {
        snprintf(err, errlen, "out of host memory for %lld input activations", (long long)(ns + nt));
        return -1;
    }
    kb_fill_uniform(in->src, ns, o->seed * 7919u + 1);
    kb_fill_uniform(in->tgt, nt, o->seed * 7919u + 2);
    return 0;
}

/* Weights and inputs: sizes first, from the flags or the files, checked;
 * then the random ones are allocated. */
static int load_model(const kb_model_opts *o, kb_tf_model *m, model_inputs *in, char *err, size_t errlen)
{
    kb_tf_config c;
    if (o->weights ? kb_tf_load(m, o->weights, o->heads ? o->heads : 8, !o->no_causal, err, errlen) != 0
                   : random_config(o, &c, err, errlen) != 0)
        return -1;
    if (o->weights)
        c = m->cfg;
    int rc = 0;
    if (o->src_npy)
        rc = inputs_from_npy(o, c.d_model, in, err, errlen);
    else if (o->src_text)
        rc = inputs_from_text(o, c.d_model, in, err, errlen);
    else
        random_shape(o, in);
    if (rc != 0 || check_activations(&c, in, err, errlen) != 0 || check_host_memory(o, &c, in, err, errlen) != 0)
        return -1;
    if (!o->weights && kb_tf_init_random(m, &c, o->seed) != 0) {
        snprintf(err, errlen, "out of host memory for %lld weights", (long long)kb_tf_weight_count(&c));
        return -1;
    }
    return in->src ? 0 : random_inputs(o, c.d_model, in, err, errlen);
}

/* ---- the C reference ------------------------------------------------------------- */

static double now_ms(void) { return omp_get_wtime() * 1e3; }

/* All sequences with --cpu-only or when cheap; else first, last and evenly
 * spaced ones within the budget (or --check-seqs of them).  -1 when out of
 * memory. */
static int pick_sequences(const kb_model_opts *o, double flops_per_seq, int B, reference_run *r)
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
static int run_reference(const kb_tf_model *m, kb_tf_mode mode, const model_inputs *in, reference_run *r)
{
    const int64_t d = m->cfg.d_model, T = out_len(mode, in);
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

static void print_setup(const kb_tf_model *m, kb_tf_mode mode, const model_inputs *in, const kb_tf_kernels *k)
{
    const kb_tf_config *c = &m->cfg;
    printf("kbench model %s: B=%d Ts=%d", mode_names[mode], in->B, in->Ts);
    if (mode != KB_TF_ENCODER)
        printf(" Tt=%d", in->Tt);
    printf(", d_model=%d heads=%d d_ff=%d, layers %d+%d%s, %.1fM weights, %.1f GFLOP per forward\n", c->d_model,
           c->heads, c->d_ff, c->enc_layers, c->dec_layers,
           mode == KB_TF_ENCODER ? "" : c->causal ? ", causal decoder" : ", unmasked decoder",
           kb_tf_weight_count(c) / 1e6, forward_flops(c, in) / 1e9);
    if (!k) /* --cpu-only: only the C reference runs */
        return;
    printf("kernels: attention %s, add_layernorm %s%s%s\n", kb_tf_kernel_name(k, 0), kb_tf_kernel_name(k, 1),
           mode == KB_TF_SEQ2SEQ ? ", final norms layernorm " : "", mode == KB_TF_SEQ2SEQ ? kb_tf_kernel_name(k, 2) : "");
}

static void print_cpu(const reference_run *r, int B)
{
    printf("CPU total (C reference, double, %d threads): %.1f ms", omp_get_max_threads(), r->cpu_ms);
    if (r->n < B)
        printf(" for %d of %d sequences; the batch would take ~%.0f ms", r->n, B, r->cpu_ms * B / r->n);
    putchar('\n');
}

/* Pick the sequences and run the reference on them, or say why not. */
static int reference(const kb_model_opts *o, const kb_tf_model *m, const model_inputs *in, reference_run *r)
{
    const double flops_per_seq = o->cpu_only ? 1 : forward_flops(&m->cfg, in) / in->B;
    if (pick_sequences(o, flops_per_seq, in->B, r) != 0 || run_reference(m, o->mode, in, r) != 0) {
        fprintf(stderr, "kbench: out of host memory for the C reference\n");
        return -1;
    }
    print_cpu(r, in->B);
    return 0;
}

/* ---- the GPU paths ------------------------------------------------------------------ */

enum { PH_H2D, PH_ENC, PH_DEC, PH_D2H, PH_TOTAL, PH_COMPUTE, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"host-to-device copy", "encoder", "decoder",
                                                  "device-to-host copy", "total", "compute"};

typedef struct {
    const kb_tf_model *m;
    kb_tf_mode mode;
    const model_inputs *in;
    const reference_run *ref;
    cudaStream_t stream;
    float *h_src, *h_tgt, *h_out; /* pinned */
    void *flush;
    size_t flush_bytes;
    int hot;
    double cap_s;
    const kb_tf_kernels *kernels;
} gpu_run;

typedef struct {
    kb_stats phase[PH_COUNT];
    kb_check check, recheck;
    const char *error;
} path_result;

/* Optional graphs replace the encode and decode calls. */
typedef struct {
    cudaGraphExec_t enc, dec;
} graphs;

static size_t in_bytes(const gpu_run *r, int tgt)
{
    const int64_t T = tgt ? r->in->Tt : r->in->Ts;
    return sizeof(float) * (size_t)((int64_t)r->in->B * T * r->m->cfg.d_model);
}

static size_t out_bytes(const gpu_run *r)
{
    return sizeof(float) * (size_t)((int64_t)r->in->B * out_len(r->mode, r->in) * r->m->cfg.d_model);
}

static const char *enqueue(kb_tf_gpu *g, const gpu_run *r, const graphs *gr, cudaEvent_t ev[5])
{
    cudaStream_t s = r->stream;
    const char *e = NULL;
    cudaEventRecord(ev[0], s);
    cudaMemcpyAsync(kb_tf_gpu_src(g), r->h_src, in_bytes(r, 0), cudaMemcpyHostToDevice, s);
    if (r->mode != KB_TF_ENCODER)
        cudaMemcpyAsync(kb_tf_gpu_tgt(g), r->h_tgt, in_bytes(r, 1), cudaMemcpyHostToDevice, s);
    cudaEventRecord(ev[1], s);
    if (gr && gr->enc)
        e = kb_cuda_status(cudaGraphLaunch(gr->enc, s));
    else if (!gr)
        e = kb_tf_gpu_encode(g, s);
    cudaEventRecord(ev[2], s);
    if (!e && gr && gr->dec)
        e = kb_cuda_status(cudaGraphLaunch(gr->dec, s));
    else if (!e && !gr)
        e = kb_tf_gpu_decode(g, s);
    cudaEventRecord(ev[3], s);
    cudaMemcpyAsync(r->h_out, kb_tf_gpu_out(g), out_bytes(r), cudaMemcpyDeviceToHost, s);
    cudaEventRecord(ev[4], s);
    return e ? e : kb_cuda_status(cudaGetLastError());
}

static const char *run_once(kb_tf_gpu *g, const gpu_run *r, const graphs *gr, cudaEvent_t ev[5], double ms[PH_COUNT])
{
    const char *e = enqueue(g, r, gr, ev);
    if (e)
        return e;
    if ((e = kb_cuda_status(cudaEventSynchronize(ev[4]))))
        return e;
    float t[4];
    for (int i = 0; i < 4; ++i)
        cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
    for (int i = 0; i < 4; ++i)
        ms[i] = t[i];
    ms[PH_TOTAL] = t[0] + t[1] + t[2] + t[3];
    ms[PH_COMPUTE] = t[1] + t[2];
    return NULL;
}

/* The checked sequences of the output against the reference; NaN or Inf
 * anywhere in the output fails. */
static void check_output(const gpu_run *r, kb_check *c)
{
    const int64_t per_seq = (int64_t)out_len(r->mode, r->in) * r->m->cfg.d_model;
    const int64_t total = per_seq * r->in->B;
    double err2 = 0, ref2 = 0;
    memset(c, 0, sizeof *c);
    for (int64_t i = 0; i < total; ++i)
        c->nonfinite += !isfinite(r->h_out[i]);
    for (int s = 0; s < r->ref->n; ++s)
        for (int64_t i = 0; i < per_seq; ++i) {
            const double got = r->h_out[r->ref->seq[s] * per_seq + i], want = r->ref->ref[s * per_seq + i];
            const double diff = fabs(got - want);
            c->max_abs_err = diff > c->max_abs_err ? diff : c->max_abs_err;
            err2 += diff * diff;
            ref2 += want * want;
        }
    c->rel_l2_err = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    c->worst_tol = kb_model_rel_l2_tolerance();
    c->pass = c->nonfinite == 0 && c->rel_l2_err <= c->worst_tol;
}

static const char *time_launches(kb_tf_gpu *g, const gpu_run *r, const graphs *gr, kb_stats st[PH_COUNT])
{
    cudaEvent_t ev[5];
    for (int i = 0; i < 5; ++i)
        cudaEventCreate(&ev[i]);
    double ms[PH_COUNT], *samples[PH_COUNT], *scratch = malloc(sizeof(double) * MAX_SAMPLES);
    for (int p = 0; p < PH_COUNT; ++p)
        samples[p] = malloc(sizeof(double) * MAX_SAMPLES);
    const char *e = NULL;
    double t0 = now_ms();
    do
        e = run_once(g, r, gr, ev, ms);
    while (!e && now_ms() - t0 < WARMUP_S * 1e3);
    int n = 0;
    t0 = now_ms();
    while (!e) {
        if (!r->hot && (e = kb_cuda_status(cudaMemsetAsync(r->flush, n & 0xff, r->flush_bytes, r->stream))))
            break;
        if ((e = run_once(g, r, gr, ev, ms)))
            break;
        for (int p = 0; p < PH_COUNT; ++p)
            samples[p][n] = ms[p];
        if (++n < MIN_SAMPLES)
            continue;
        memcpy(scratch, samples[PH_COMPUTE], sizeof(double) * (size_t)n);
        kb_stats_compute(scratch, n, &st[PH_COMPUTE]);
        if (n == MAX_SAMPLES || kb_median_noise(&st[PH_COMPUTE]) < TARGET_NOISE || now_ms() - t0 > r->cap_s * 1e3)
            break;
    }
    for (int p = 0; p < PH_COUNT; ++p) {
        if (!e)
            kb_stats_compute(samples[p], n, &st[p]);
        free(samples[p]);
    }
    free(scratch);
    for (int i = 0; i < 5; ++i)
        cudaEventDestroy(ev[i]);
    return e;
}

static const char *capture(kb_tf_gpu *g, cudaStream_t s, const char *(*part)(kb_tf_gpu *, cudaStream_t),
                           cudaGraphExec_t *exec)
{
    cudaGraph_t graph = NULL;
    const char *e = kb_cuda_status(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (e)
        return e;
    const char *fe = part(g, s);
    e = kb_cuda_status(cudaStreamEndCapture(s, &graph));
    if (!fe && !e)
        e = kb_cuda_status(cudaGraphInstantiate(exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    return fe ? fe : e;
}

/* Check (poisoned outputs), time the plain launches, capture and time the
 * graphs, check again after the last timed run. */
static const char *run_path(kb_tf_gpu *g, const gpu_run *r, path_result res[2])
{
    cudaEvent_t ev[5];
    double ms[PH_COUNT];
    const char *e = kb_tf_gpu_poison(g);
    for (int i = 0; i < 5; ++i)
        cudaEventCreate(&ev[i]);
    if (!e)
        e = run_once(g, r, NULL, ev, ms);
    for (int i = 0; i < 5; ++i)
        cudaEventDestroy(ev[i]);
    if (e)
        return e;
    check_output(r, &res[0].check);
    res[1].check = res[0].check;
    if (!res[0].check.pass)
        return NULL;
    res[0].error = time_launches(g, r, NULL, res[0].phase);
    check_output(r, &res[0].recheck);
    graphs gr = {NULL, NULL};
    if (r->mode != KB_TF_DECODER && (e = capture(g, r->stream, kb_tf_gpu_encode, &gr.enc)))
        return e;
    if (r->mode != KB_TF_ENCODER && (e = capture(g, r->stream, kb_tf_gpu_decode, &gr.dec)))
        return e;
    res[1].error = time_launches(g, r, &gr, res[1].phase);
    check_output(r, &res[1].recheck);
    if (gr.enc)
        cudaGraphExecDestroy(gr.enc);
    if (gr.dec)
        cudaGraphExecDestroy(gr.dec);
    return NULL;
}

static int path_passed(const path_result *p)
{
    return !p->error && p->check.pass && p->recheck.pass;
}

static void print_path(kb_tf_gemm gemm, kb_tf_mode mode, const path_result res[2], const reference_run *ref,
                       int B)
{
    printf("GPU, %s linear layers          stream     graph (ms, median)\n", kb_tf_gemm_name(gemm));
    for (int p = 0; p <= PH_TOTAL; ++p) {
        if ((p == PH_ENC && mode == KB_TF_DECODER) || (p == PH_DEC && mode == KB_TF_ENCODER))
            continue;
        printf("  %-28s", phase_names[p]);
        for (int k = 0; k < 2; ++k)
            if (path_passed(&res[k]))
                printf(" %9.3f", res[k].phase[p].median);
            else
                printf(" %9s", "-");
        putchar('\n');
    }
    const kb_check *c = &res[0].check;
    printf("  GPU vs CPU: max abs error %.3e, relative L2 error %.3e over %d of %d sequences (bound %.0e): %s\n",
           c->max_abs_err, c->rel_l2_err, ref->n, B, c->worst_tol, c->pass ? "PASS" : "FAIL");
    for (int k = 0; k < 2; ++k) {
        if (res[k].error)
            printf("  %s timing failed: %s\n", k ? "graph" : "stream", res[k].error);
        else if (c->pass && !res[k].recheck.pass)
            printf("  after the %s timing: relative L2 error %.3e, %lld non-finite: FAIL\n", k ? "graph" : "stream",
                   res[k].recheck.rel_l2_err, (long long)res[k].recheck.nonfinite);
    }
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

static kb_shape model_shape(const kb_tf_config *c, kb_tf_mode mode, const model_inputs *in)
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

static void fill_row(const gpu_run *r, kb_tf_gemm gemm, int k, const path_result *p, kb_result *row)
{
    const kb_tf_config *c = &r->m->cfg;
    memset(row, 0, sizeof *row);
    row->op = &model_ops[r->mode];
    row->variant = model_variant(gemm, k, r->kernels);
    row->shape = model_shape(c, r->mode, r->in);
    row->family = "model";
    row->flops = forward_flops(c, r->in);
    row->bytes = forward_bytes(c, r->mode, r->in);
    row->check = p->check.pass && !p->recheck.pass && !p->error ? p->recheck : p->check;
    row->rows_checked = (int64_t)r->ref->n * out_len(r->mode, r->in);
    row->rows_total = (int64_t)r->in->B * out_len(r->mode, r->in);
    row->hot = r->hot;
    row->status = path_passed(p) ? KB_PASS : KB_FAIL;
    row->timed = row->status == KB_PASS;
    row->time_ms = p->phase[PH_COMPUTE];
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
static int check_file(const char *flag, const char *path, char *err, size_t errlen)
{
    struct stat st;
    char dir[PATH_MAX];
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return output_error(err, errlen, flag, path, "is not a regular file");
    if (parent_of(path, dir, sizeof dir) != 0)
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

static int cpu_only(const kb_model_opts *o, const kb_tf_model *m, const model_inputs *in)
{
    reference_run ref = {0};
    int rc = reference(o, m, in, &ref) != 0 ||
             (o->out_npy && write_out(o->out_npy, ref.ref, in->B, out_len(o->mode, in), m->cfg.d_model) != 0);
    free(ref.seq);
    free(ref.ref);
    return rc ? KB_EXIT_FAIL : 0;
}

static int open_gpu(const kb_model_opts *o, gpu_run *r, const kb_device_info *dev, csv_out *co)
{
    char err[512];
    if (!o->csv_path && !o->append &&
        kb_default_csv_path(o->out_dir, co->csv, sizeof co->csv, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return -1;
    }
    if (o->csv_path || o->append)
        snprintf(co->csv, sizeof co->csv, "%s", o->csv_path ? o->csv_path : o->append);
    const size_t src = in_bytes(r, 0), tgt = in_bytes(r, 1), out = out_bytes(r);
    if (cudaStreamCreate(&r->stream) != cudaSuccess || cudaMallocHost((void **)&r->h_src, src) != cudaSuccess ||
        cudaMallocHost((void **)&r->h_tgt, tgt) != cudaSuccess || cudaMallocHost((void **)&r->h_out, out) != cudaSuccess ||
        !(r->flush = kb_alloc_flush(dev, &r->flush_bytes))) {
        fprintf(stderr, "kbench: out of memory for the pinned inputs, output and L2 flush buffer\n");
        return -1;
    }
    memcpy(r->h_src, r->in->src, src);
    if (r->in->tgt)
        memcpy(r->h_tgt, r->in->tgt, tgt);
    kb_options meta_opts = {.hot = o->hot};
    kb_collect_meta(dev, &meta_opts, &co->meta);
    return 0;
}

static void close_gpu(gpu_run *r)
{
    cudaFreeHost(r->h_src);
    cudaFreeHost(r->h_tgt);
    cudaFreeHost(r->h_out);
    cudaFree(r->flush);
    if (r->stream)
        cudaStreamDestroy(r->stream);
}

/* One GEMM path: build, check, time, print, add its two rows. */
static int gpu_path(const kb_model_opts *o, const gpu_run *r, kb_tf_gemm gemm, int write_output, csv_out *co)
{
    kb_tf_gpu *g;
    char err[512];
    const char *e = kb_tf_gpu_create(r->m, r->mode, r->in->B, r->in->Ts, r->in->Tt, gemm, &o->kernels, &g);
    if (e) {
        fprintf(stderr, "kbench: %s path: %s\n", kb_tf_gemm_name(gemm), e);
        return -1;
    }
    path_result res[2] = {{.error = NULL}, {.error = NULL}};
    e = run_path(g, r, res);
    kb_tf_gpu_destroy(g);
    if (e) {
        fprintf(stderr, "kbench: %s path failed on the GPU: %s\n", kb_tf_gemm_name(gemm), e);
        return -1;
    }
    print_path(gemm, r->mode, res, r->ref, r->in->B);
    for (int k = 0; k < 2; ++k)
        fill_row(r, gemm, k, &res[k], &co->rows[co->nrows++]);
    if ((co->prefix ? kb_csv_write_after(co->csv, co->prefix, co->rows, co->nrows, err, sizeof err)
                    : kb_csv_write(co->csv, co->meta.meta, co->meta.n, co->rows, co->nrows, err, sizeof err)) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return -1;
    }
    if (write_output && o->out_npy &&
        write_out(o->out_npy, r->h_out, r->in->B, out_len(r->mode, r->in), r->m->cfg.d_model) != 0)
        return -1;
    return path_passed(&res[0]) && path_passed(&res[1]) ? 0 : 1;
}

static int gpu_model(const kb_model_opts *o, const kb_tf_model *m, const model_inputs *in,
                     const kb_device_info *dev, csv_out *co)
{
    gpu_run r = {.m = m, .mode = o->mode, .in = in, .hot = o->hot, .cap_s = o->max_time_s, .kernels = &o->kernels};
    reference_run ref = {0};
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
                   model_inputs *in, char *err, size_t errlen)
{
    if (kb_model_parse(argc, argv, o, err, errlen) != 0 || check_outputs(o, co, err, errlen) != 0 ||
        load_model(o, m, in, err, errlen) != 0)
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
    if (kb_asks_help(argc, argv)) {
        kb_model_usage(stdout);
        return 0;
    }
    kb_model_opts o;
    kb_tf_model m = {0};
    model_inputs in = {0};
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
