/* The Llama model from a GGUF file (model/llama_gguf.h).  A table of the
 * weights by GGUF name drives three passes: shapes and types against the
 * config, nothing left over, then dequantization into one fp32 block. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "harness/harness.h"
#include "model/llama_gguf.h"

/* ---- the config ------------------------------------------------------------------------- */

/* An integer key from 1 to 2^30 into *out; absent gives def, or an error
 * when def < 0. */
static int get_size(const kb_gguf_file *f, const char *key, int def, int *out, char *err, size_t errlen)
{
    uint64_t v = 0;
    const int got = kb_gguf_get_uint(f, key, &v, err, errlen);
    if (got < 0)
        return -1;
    if (!got && def < 0)
        return kb_report(err, errlen, "%s: no key '%s'", f->path, key);
    if (got && (v < 1 || v > 1 << 30))
        return kb_report(err, errlen, "%s: key '%s' is %" PRIu64 " (1 to 2^30 allowed)", f->path, key, v);
    *out = got ? (int)v : def;
    return 0;
}

static int check_arch(const kb_gguf_file *f, char *err, size_t errlen)
{
    kb_gguf_str s = {0};
    const int got = kb_gguf_get_string(f, "general.architecture", &s, err, errlen);
    if (got < 0)
        return -1;
    if (!got || !kb_gguf_str_is(s, "llama"))
        return kb_report(err, errlen, "%s: general.architecture is not \"llama\"; kbench reads Llama models", f->path);
    const int scaled = kb_gguf_get_string(f, "llama.rope.scaling.type", &s, err, errlen);
    if (scaled < 0)
        return -1;
    if (scaled && !kb_gguf_str_is(s, "none"))
        return kb_report(err, errlen, "%s: llama.rope.scaling.type is set; kbench runs plain RoPE only", f->path);
    return 0;
}

/* The vocabulary: the tokenizer's token count, which llama.vocab_size must
 * equal when both are given. */
static int get_vocab(const kb_gguf_file *f, int *vocab, char *err, size_t errlen)
{
    const kb_gguf_kv *tokens = NULL;
    const int got = kb_gguf_get_strings(f, "tokenizer.ggml.tokens", &tokens, err, errlen);
    if (got < 0 || get_size(f, "llama.vocab_size", got ? 0 : -1, vocab, err, errlen))
        return -1;
    if (!got)
        return 0;
    if (tokens->count < 1 || tokens->count > 1 << 30)
        return kb_report(err, errlen, "%s: tokenizer.ggml.tokens holds %" PRIu64 " tokens (1 to 2^30 allowed)",
                         f->path, tokens->count);
    if (*vocab && *vocab != (int)tokens->count)
        return kb_report(err, errlen, "%s: llama.vocab_size %d differs from the %" PRIu64 " tokens of "
                         "tokenizer.ggml.tokens", f->path, *vocab, tokens->count);
    *vocab = (int)tokens->count;
    return 0;
}

static int get_head_dim(const kb_gguf_file *f, kb_llama_config *c, char *err, size_t errlen)
{
    int k = 0, v = 0, rot = 0;
    if (get_size(f, "llama.attention.key_length", 0, &k, err, errlen) ||
        get_size(f, "llama.attention.value_length", k, &v, err, errlen))
        return -1;
    if (k != v)
        return kb_report(err, errlen, "%s: llama.attention.key_length %d differs from value_length %d", f->path, k, v);
    if (!k && c->d_model % c->heads)
        return kb_report(err, errlen, "%s: llama.embedding_length %d is not a multiple of the head count %d (and no "
                         "key_length)", f->path, c->d_model, c->heads);
    c->head_dim = k ? k : c->d_model / c->heads;
    if (get_size(f, "llama.rope.dimension_count", c->head_dim, &rot, err, errlen))
        return -1;
    if (rot != c->head_dim)
        return kb_report(err, errlen, "%s: llama.rope.dimension_count %d is not the head dimension %d; kbench rotates "
                         "whole heads", f->path, rot, c->head_dim);
    return 0;
}

static int get_config(const kb_gguf_file *f, kb_llama_config *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->rope_theta = 10000;
    if (check_arch(f, err, errlen) || get_size(f, "llama.block_count", -1, &c->layers, err, errlen) ||
        get_size(f, "llama.embedding_length", -1, &c->d_model, err, errlen) ||
        get_size(f, "llama.feed_forward_length", -1, &c->d_ff, err, errlen) ||
        get_size(f, "llama.attention.head_count", -1, &c->heads, err, errlen) ||
        get_size(f, "llama.attention.head_count_kv", c->heads, &c->kv_heads, err, errlen) ||
        get_size(f, "llama.context_length", -1, &c->max_pos, err, errlen) || get_vocab(f, &c->vocab, err, errlen) ||
        get_head_dim(f, c, err, errlen) || kb_gguf_get_float(f, "llama.rope.freq_base", &c->rope_theta, err, errlen) < 0)
        return -1;
    const int eps = kb_gguf_get_float(f, "llama.attention.layer_norm_rms_epsilon", &c->eps, err, errlen);
    if (eps < 0)
        return -1;
    if (!eps)
        return kb_report(err, errlen, "%s: no key 'llama.attention.layer_norm_rms_epsilon'", f->path);
    c->tied = !kb_gguf_tensor_find(f, "output.weight");
    return kb_llama_config_check(c, f->path, err, errlen);
}

/* ---- the weights by GGUF name ----------------------------------------------------------- */

typedef struct {
    char name[40];
    const float **slot;
    int64_t rows, cols; /* cols 0: a vector */
    int perm_heads;     /* Wq, Wk: heads whose rows to un-permute; else 0 */
} wref;

static void put(wref *w, int *n, const char *name, const float **slot, int64_t rows, int64_t cols, int perm)
{
    wref *r = &w[(*n)++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->slot = slot;
    r->rows = rows;
    r->cols = cols;
    r->perm_heads = perm;
}

/* Every weight in kb_llama's storage order; w has room for 9 layers + 3. */
static int list_weights(kb_llama_model *m, wref *w)
{
    const kb_llama_config *c = &m->cfg;
    const int64_t d = c->d_model, qd = (int64_t)c->heads * c->head_dim, kvd = (int64_t)c->kv_heads * c->head_dim;
    char s[40];
    int n = 0;
    put(w, &n, "token_embd.weight", &m->embed, c->vocab, d, 0);
    for (int l = 0; l < c->layers; ++l) {
        kb_llama_layer *L = &m->layers[l];
#define LAYER(leaf, slot, rows, cols, perm)                   \
        snprintf(s, sizeof s, "blk.%d.%s.weight", l, leaf);   \
        put(w, &n, s, &L->slot, rows, cols, perm)
        LAYER("attn_norm", attn_norm, d, 0, 0);
        LAYER("attn_q", wq, qd, d, c->heads);
        LAYER("attn_k", wk, kvd, d, c->kv_heads);
        LAYER("attn_v", wv, kvd, d, 0);
        LAYER("attn_output", wo, d, qd, 0);
        LAYER("ffn_norm", mlp_norm, d, 0, 0);
        LAYER("ffn_gate", w_gate, c->d_ff, d, 0);
        LAYER("ffn_up", w_up, c->d_ff, d, 0);
        LAYER("ffn_down", w_down, d, c->d_ff, 0);
#undef LAYER
    }
    put(w, &n, "output_norm.weight", &m->norm, d, 0, 0);
    if (!c->tied)
        put(w, &n, "output.weight", &m->lm_head, c->vocab, d, 0);
    return n;
}

/* The tensor for r: present, of r's shape (GGUF lists columns first) and a
 * type kbench converts. */
static const kb_gguf_tensor *find(const kb_gguf_file *f, const wref *r, char *err, size_t errlen)
{
    const kb_gguf_tensor *t = kb_gguf_tensor_find(f, r->name);
    const int ndim = r->cols ? 2 : 1;
    const int64_t ne0 = r->cols ? r->cols : r->rows;
    if (!t) {
        kb_report(err, errlen, "%s: no tensor named '%s'", f->path, r->name);
        return NULL;
    }
    if ((int)t->ndim != ndim || t->ne[0] != ne0 || (r->cols && t->ne[1] != r->rows)) {
        char shape[128] = "";
        for (uint32_t k = 0; k < t->ndim; ++k)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%" PRId64, k ? ", " : "", t->ne[k]);
        if (r->cols)
            kb_report(err, errlen, "%s: tensor '%s' has ne [%s], expected [%" PRId64 ", %" PRId64 "]", f->path,
                      r->name, shape, r->cols, r->rows);
        else
            kb_report(err, errlen, "%s: tensor '%s' has ne [%s], expected [%" PRId64 "]", f->path, r->name, shape,
                      r->rows);
        return NULL;
    }
    if (!kb_gguf_can_dequantize(t->type)) {
        kb_report(err, errlen, "%s: tensor '%s' is %s; kbench converts F32, F16, BF16, Q8_0 and Q4_1", f->path,
                  r->name, kb_gguf_type_name(t->type));
        return NULL;
    }
    return t;
}

/* Every tensor of the file is one of the model's (each of which was found
 * by name). */
static int check_all_used(const kb_gguf_file *f, const wref *w, int n, char *err, size_t errlen)
{
    if (f->n_tensors == n)
        return 0; /* names are unique */
    unsigned char *used = calloc((size_t)f->n_tensors, 1);
    if (!used)
        return kb_report(err, errlen, "%s: out of memory", f->path);
    for (int k = 0; k < n; ++k)
        used[kb_gguf_tensor_find(f, w[k].name) - f->tensors] = 1;
    int64_t i = 0;
    while (used[i])
        ++i;
    free(used);
    return kb_report(err, errlen, "%s: tensor '%s' is not part of %s Llama model with %d layers", f->path,
                     f->tensors[i].name, n % 9 == 2 ? "a tied" : "an untied", (n - 2) / 9);
}

/* The GGUF row that holds HF row r of a weight un-permuted over heads. */
static int64_t source_row(int64_t r, int perm_heads, int head_dim)
{
    if (!perm_heads)
        return r;
    const int64_t half = head_dim / 2, j = r % head_dim, s = j / half, i = j % half;
    return r - j + 2 * i + s;
}

/* r's values from t into its slot; -1 at a NaN or Inf. */
static int load(const wref *r, const kb_gguf_tensor *t, int head_dim)
{
    float *dst = (float *)*r->slot;
    const int64_t cols = r->cols ? r->cols : r->rows, rows = r->cols ? r->rows : 1;
    int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static)
    for (int64_t k = 0; k < rows; ++k) {
        float *row = dst + k * cols;
        kb_gguf_dequantize(t, source_row(k, r->perm_heads, head_dim), 1, row);
        for (int64_t i = 0; i < cols; ++i)
            bad |= !isfinite(row[i]);
    }
    return bad ? -1 : 0;
}

/* m->cfg set: the layer array and one block of storage, carved in order. */
static int alloc_model(kb_llama_model *m, wref *w, int n)
{
    const int64_t count = kb_llama_weight_count(&m->cfg);
    m->storage = count < 0 || (uint64_t)count > SIZE_MAX / sizeof(float) ? NULL : malloc(sizeof(float) * (size_t)count);
    if (!m->storage)
        return -1;
    float *next = m->storage;
    for (int k = 0; k < n; ++k) {
        *w[k].slot = next;
        next += w[k].rows * (w[k].cols ? w[k].cols : 1);
    }
    if (m->cfg.tied)
        m->lm_head = m->embed;
    return 0;
}

static int load_weights(kb_llama_model *m, const kb_gguf_file *f, char *err, size_t errlen)
{
    wref *w = malloc(sizeof *w * (9 * (size_t)m->cfg.layers + 3));
    m->layers = calloc((size_t)m->cfg.layers, sizeof *m->layers);
    if (!w || !m->layers) {
        free(w);
        return kb_report(err, errlen, "%s: out of memory", f->path);
    }
    const int n = list_weights(m, w);
    int rc = 0;
    for (int k = 0; k < n && rc == 0; ++k)
        rc = find(f, &w[k], err, errlen) ? 0 : -1;
    if (rc == 0)
        rc = check_all_used(f, w, n, err, errlen);
    if (rc == 0 && alloc_model(m, w, n) != 0)
        rc = kb_report(err, errlen, "%s: out of memory for %lld weights", f->path,
                       (long long)kb_llama_weight_count(&m->cfg));
    for (int k = 0; k < n && rc == 0; ++k)
        if (load(&w[k], kb_gguf_tensor_find(f, w[k].name), m->cfg.head_dim) != 0)
            rc = kb_report(err, errlen, "%s: tensor '%s' holds NaN or Inf", f->path, w[k].name);
    free(w);
    return rc;
}

int kb_llama_from_gguf(kb_llama_model *m, const kb_gguf_file *f, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    const int rc = get_config(f, &m->cfg, err, errlen) || load_weights(m, f, err, errlen) ? -1 : 0;
    if (rc)
        kb_llama_free(m);
    return rc;
}
