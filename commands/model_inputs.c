/* The weights and inputs of `kbench model` (model/command_internal.h):
 * seeded, from a safetensors file, from .npy activations or from text
 * through the vocabulary, every size checked before anything is
 * allocated; and the FLOPs and bytes of one forward. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "harness/harness.h"
#include "ops/posenc.h"
#include "commands/model_internal.h"
#include "formats/npy.h"
#include "tokenizer/tokenizer.h"

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

double kb_model_flops(const kb_tf_config *c, const kb_model_inputs *in)
{
    return c->enc_layers * encoder_layer_flops(c, in->B, in->Ts) +
           c->dec_layers * decoder_layer_flops(c, in->B, in->Ts, in->Tt);
}

double kb_model_bytes(const kb_tf_config *c, kb_tf_mode mode, const kb_model_inputs *in)
{
    const double tokens =
        (double)in->B * (in->Ts + (mode == KB_TF_ENCODER ? 0 : in->Tt) + kb_model_out_len(mode, in));
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

/* One .npy input: (B, T, d) or (T, d), d matching the model, all finite;
 * on a refusal *a holds nothing. */
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
    kb_npy_free(a); /* read, but refused: the caller gets nothing to free */
    return -1;
}

static int inputs_from_npy(const kb_model_opts *o, int d, kb_model_inputs *in, char *err, size_t errlen)
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

static int inputs_from_text(const kb_model_opts *o, int d, kb_model_inputs *in, char *err, size_t errlen)
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
static int check_activations(const kb_tf_config *c, const kb_model_inputs *in, char *err, size_t errlen)
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
static int check_host_memory(const kb_model_opts *o, const kb_tf_config *c, const kb_model_inputs *in, char *err,
                             size_t errlen)
{
    const int64_t tokens = (int64_t)in->B * (in->Ts + in->Tt + kb_model_out_len(o->mode, in));
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
static void random_shape(const kb_model_opts *o, kb_model_inputs *in)
{
    in->B = o->batch ? o->batch : 32;
    in->Ts = o->src_len ? o->src_len : 128;
    in->Tt = o->tgt_len ? o->tgt_len : 128;
}

static int random_inputs(const kb_model_opts *o, int d, kb_model_inputs *in, char *err, size_t errlen)
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

int kb_model_load(const kb_model_opts *o, kb_tf_model *m, kb_model_inputs *in, char *err, size_t errlen)
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
