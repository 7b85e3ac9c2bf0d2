/* The Llama-style model's weights (model/llama.h): sizes and checks,
 * config.json, seeded weights, loading a Hugging Face checkpoint.  One walk
 * over the weights by name lays out the storage, fills it at random, loads
 * it and hands it to writers. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "formats/json_flat.h"
#include "formats/safetensors.h"
#include "harness/harness.h"
#include "ops/kbench.h"
#include "model/llama.h"
#include "model/transformer.h"

/* ---- sizes --------------------------------------------------------------------------- */

int64_t kb_llama_weight_count(const kb_llama_config *c)
{
    const int64_t d = c->d_model, qd = kb_size_muladd(c->heads, c->head_dim, 0);
    const int64_t kvd = kb_size_muladd(c->kv_heads, c->head_dim, 0);
    /* per layer: two norms, q and o (qd x d each), k and v (kvd x d each), three ff x d */
    const int64_t attn = kb_size_muladd(2 * d, kb_size_muladd(qd, 1, kvd), 2 * d);
    const int64_t layer = kb_size_muladd(3 * d, c->d_ff, attn);
    const int64_t embed = kb_size_muladd(c->vocab, d, 0);
    const int64_t n = kb_size_muladd(c->layers, layer, kb_size_muladd(c->tied ? 1 : 2, embed, d));
    return qd < 0 || kvd < 0 || attn < 0 || n > KB_TF_MAX_FLOATS ? -1 : n;
}

int kb_llama_config_check(const kb_llama_config *c, const char *what, char *err, size_t errlen)
{
    static const struct { const char *key; size_t at; int max_log2; } sizes[] = {
        {"hidden_size", offsetof(kb_llama_config, d_model), 30},
        {"intermediate_size", offsetof(kb_llama_config, d_ff), 30},
        {"num_hidden_layers", offsetof(kb_llama_config, layers), 16},
        {"num_attention_heads", offsetof(kb_llama_config, heads), 16},
        {"num_key_value_heads", offsetof(kb_llama_config, kv_heads), 16},
        {"head_dim", offsetof(kb_llama_config, head_dim), 16},
        {"vocab_size", offsetof(kb_llama_config, vocab), 30},
        {"max_position_embeddings", offsetof(kb_llama_config, max_pos), 30},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; ++i) {
        const int v = *(const int *)((const char *)c + sizes[i].at);
        if (v < 1 || v > 1 << sizes[i].max_log2)
            return kb_report(err, errlen, "%s: %s %d is not from 1 to 2^%d", what, sizes[i].key, v,
                             sizes[i].max_log2);
    }
    if (c->heads % c->kv_heads)
        return kb_report(err, errlen, "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                         what, c->heads, c->kv_heads);
    if (c->head_dim % 2)
        return kb_report(err, errlen, "%s: head_dim %d is odd; RoPE rotates pairs", what, c->head_dim);
    if (!(c->eps > 0 && c->eps <= 1))
        return kb_report(err, errlen, "%s: rms_norm_eps %g is not in (0, 1]", what, c->eps);
    if (!(c->rope_theta > 0 && isfinite(c->rope_theta)))
        return kb_report(err, errlen, "%s: rope_theta %g is not a finite number above 0", what, c->rope_theta);
    const kb_llama_rope_scaling *r = &c->rope_scaling;
    if (r->factor != 0 && !(isfinite(r->factor) && r->factor >= 1 && r->low_freq_factor > 0 &&
                            isfinite(r->high_freq_factor) && r->high_freq_factor > r->low_freq_factor &&
                            r->original_max_pos >= 1))
        return kb_report(err, errlen, "%s: rope_scaling \"llama3\" needs factor >= 1 and 0 < low_freq_factor < "
                         "high_freq_factor, got %g, %g and %g", what, r->factor, r->low_freq_factor,
                         r->high_freq_factor);
    if ((int64_t)c->heads * c->head_dim > 1 << 30)
        return kb_report(err, errlen, "%s: num_attention_heads x head_dim = %lld is over 2^30", what,
                         (long long)c->heads * c->head_dim);
    if (kb_llama_weight_count(c) < 0)
        return kb_report(err, errlen, "%s: the model has over 2^40 weights, the most kbench allocates", what);
    return 0;
}

/* ---- config.json --------------------------------------------------------------------- */

/* The member's text as messages show it. */
static const char *shown(const char *text, const kb_json_member *m, char *buf, size_t len)
{
    /* A run of JSON whitespace (a pretty-printed object's newlines and
     * indents) shows as one space: the message stays one line of text. */
    char raw[96];
    size_t n = 0, i = m->begin;
    for (; i < m->end && n < sizeof raw - 4; ++i) {
        const int space = strchr(" \t\r\n", text[i]) != NULL;
        if (!space || (n > 0 && raw[n - 1] != ' '))
            raw[n++] = space ? ' ' : text[i];
    }
    if (i < m->end) /* cut short: say so */
        n += (size_t)snprintf(raw + n, sizeof raw - n, "...");
    raw[n] = '\0';
    return kb_quote(raw, buf, len);
}

/* An integer key from 1 to 2^30 (range checks come later, with the
 * others); absent or null gives def, and is an error when def < 0. */
static int get_int(const kb_json_object *o, const char *text, const char *key, int def, int *out, const char *what,
                   char *err, size_t errlen)
{
    const kb_json_member *m = kb_json_get(o, key);
    char q[KB_QUOTE_LEN];
    if (!m || m->kind == KB_JSON_NULL) {
        *out = def;
        return def < 0 ? kb_report(err, errlen, "%s: no \"%s\"", what, key) : 0;
    }
    if (m->kind != KB_JSON_NUMBER || !m->is_integer || m->integer < 1 || m->integer > 1 << 30)
        return kb_report(err, errlen, "%s: \"%s\" must be an integer from 1 to 2^30, got %s", what, key,
                         shown(text, m, q, sizeof q));
    *out = (int)m->integer;
    return 0;
}

static int get_number(const kb_json_object *o, const char *text, const char *key, double def, double *out,
                      const char *what, char *err, size_t errlen)
{
    const kb_json_member *m = kb_json_get(o, key);
    char q[KB_QUOTE_LEN];
    if (!m || m->kind == KB_JSON_NULL) {
        *out = def;
        return 0;
    }
    if (m->kind != KB_JSON_NUMBER)
        return kb_report(err, errlen, "%s: \"%s\" must be a number, got %s", what, key, shown(text, m, q, sizeof q));
    *out = m->number;
    return 0;
}

/* A key that must be absent, null or the given boolean or string. */
static int get_fixed(const kb_json_object *o, const char *text, const char *key, const char *string, int boolean,
                     const char *why, const char *what, char *err, size_t errlen)
{
    const kb_json_member *m = kb_json_get(o, key);
    char q[KB_QUOTE_LEN];
    if (!m || m->kind == KB_JSON_NULL)
        return 0;
    if (string ? m->kind == KB_JSON_STRING && !strcmp(m->string, string)
               : m->kind == KB_JSON_BOOL && m->boolean == boolean)
        return 0;
    return kb_report(err, errlen, "%s: \"%s\" is %s; %s", what, key, shown(text, m, q, sizeof q), why);
}

/* A nested rope_theta, which must agree with one given before (top-level
 * or in the other object): two values of one setting are a broken config,
 * and neither may silently win. */
static int nested_theta(const kb_json_object *inner, const char *text, const char *key, int *given,
                        kb_llama_config *c, const char *what, char *err, size_t errlen)
{
    double theta = 0;
    const kb_json_member *m = kb_json_get(inner, "rope_theta");
    if (!m || m->kind == KB_JSON_NULL)
        return 0;
    if (get_number(inner, text, "rope_theta", 0, &theta, what, err, errlen) != 0)
        return -1;
    if (*given && theta != c->rope_theta)
        return kb_report(err, errlen, "%s: \"%s\" gives rope_theta %g, but it is %g already; give it once", what,
                         key, theta, c->rope_theta);
    c->rope_theta = theta;
    *given = 1;
    return 0;
}

/* rope_type "llama3"'s four settings, each required (as transformers
 * requires them); given in both objects, they must agree.  Their ranges
 * are kb_llama_config_check's. */
static int llama3_scaling(const kb_json_object *inner, const char *text, const char *key, int *given,
                          kb_llama_config *c, const char *what, char *err, size_t errlen)
{
    static const char *names[] = {"factor", "low_freq_factor", "high_freq_factor",
                                  "original_max_position_embeddings"};
    double v[4];
    for (int i = 0; i < 4; ++i) {
        if (get_number(inner, text, names[i], NAN, &v[i], what, err, errlen) != 0)
            return -1;
        if (isnan(v[i]))
            return kb_report(err, errlen, "%s: \"%s\" of rope_type \"llama3\" has no \"%s\"", what, key, names[i]);
    }
    if (!(v[0] >= 1))
        return kb_report(err, errlen, "%s: \"%s\": the llama3 factor must be at least 1, got %g", what, key, v[0]);
    if (!(v[3] >= 1 && v[3] <= 1 << 30 && v[3] == floor(v[3])))
        return kb_report(err, errlen, "%s: \"%s\": original_max_position_embeddings must be an integer from 1 "
                         "to 2^30, got %g", what, key, v[3]);
    const kb_llama_rope_scaling r = {v[0], v[1], v[2], (int)v[3]}, *o = &c->rope_scaling;
    if (*given && (r.factor != o->factor || r.low_freq_factor != o->low_freq_factor ||
                   r.high_freq_factor != o->high_freq_factor || r.original_max_pos != o->original_max_pos))
        return kb_report(err, errlen, "%s: \"%s\" gives other llama3 settings than those given before; give "
                         "them once", what, key);
    c->rope_scaling = r;
    *given = 1;
    return 0;
}

/* rope_scaling (null, a plain "default" RoPE, or Llama 3.1's "llama3"
 * frequency scaling) and transformers 5's rope_parameters
 * ({"rope_type": ..., "rope_theta": X, and llama3's settings}). */
static int get_rope(const kb_json_object *o, const char *text, kb_llama_config *c, const char *what, char *err,
                    size_t errlen)
{
    const char *keys[] = {"rope_scaling", "rope_parameters"};
    const kb_json_member *top = kb_json_get(o, "rope_theta");
    int given = top && top->kind != KB_JSON_NULL, scaled = 0;
    char q[KB_QUOTE_LEN];
    for (int k = 0; k < 2; ++k) {
        const kb_json_member *m = kb_json_get(o, keys[k]);
        if (!m || m->kind == KB_JSON_NULL)
            continue;
        kb_json_object inner;
        if (m->kind != KB_JSON_OBJECT ||
            kb_json_parse_flat(text + m->begin, m->end - m->begin, what, &inner, err, errlen) != 0)
            return kb_report(err, errlen, "%s: \"%s\" is %s; kbench runs plain RoPE (null) or rope_type "
                             "\"llama3\"", what, keys[k], shown(text, m, q, sizeof q));
        const kb_json_member *type = kb_json_get(&inner, "rope_type");
        type = type ? type : kb_json_get(&inner, "type");
        const int plain = type && type->kind == KB_JSON_STRING && !strcmp(type->string, "default");
        const int llama3 = type && type->kind == KB_JSON_STRING && !strcmp(type->string, "llama3");
        int rc = 0;
        if (!plain && !llama3)
            rc = kb_report(err, errlen, "%s: \"%s\" is %s; kbench runs plain RoPE (null or rope_type "
                           "\"default\") and rope_type \"llama3\"", what, keys[k], shown(text, m, q, sizeof q));
        else
            rc = nested_theta(&inner, text + m->begin, keys[k], &given, c, what, err, errlen);
        if (!rc && llama3)
            rc = llama3_scaling(&inner, text + m->begin, keys[k], &scaled, c, what, err, errlen);
        kb_json_free(&inner);
        if (rc)
            return -1;
    }
    return 0;
}

static int config_from(const kb_json_object *o, const char *text, kb_llama_config *c, const char *what, char *err,
                       size_t errlen)
{
    const kb_json_member *tie = kb_json_get(o, "tie_word_embeddings");
    char q[KB_QUOTE_LEN];
    memset(c, 0, sizeof *c);
    if (get_int(o, text, "hidden_size", -1, &c->d_model, what, err, errlen) ||
        get_int(o, text, "intermediate_size", -1, &c->d_ff, what, err, errlen) ||
        get_int(o, text, "num_hidden_layers", -1, &c->layers, what, err, errlen) ||
        get_int(o, text, "num_attention_heads", -1, &c->heads, what, err, errlen) ||
        get_int(o, text, "vocab_size", -1, &c->vocab, what, err, errlen) ||
        get_int(o, text, "num_key_value_heads", c->heads, &c->kv_heads, what, err, errlen) ||
        get_int(o, text, "max_position_embeddings", 2048, &c->max_pos, what, err, errlen) ||
        get_number(o, text, "rms_norm_eps", 1e-6, &c->eps, what, err, errlen) ||
        get_number(o, text, "rope_theta", 10000, &c->rope_theta, what, err, errlen))
        return -1;
    const kb_json_member *hd = kb_json_get(o, "head_dim");
    if ((!hd || hd->kind == KB_JSON_NULL) && c->d_model % c->heads)
        return kb_report(err, errlen, "%s: hidden_size %d is not a multiple of num_attention_heads %d (and no "
                         "head_dim)", what, c->d_model, c->heads);
    if (get_int(o, text, "head_dim", c->d_model / c->heads, &c->head_dim, what, err, errlen))
        return -1;
    if (tie && tie->kind != KB_JSON_BOOL && tie->kind != KB_JSON_NULL)
        return kb_report(err, errlen, "%s: \"tie_word_embeddings\" must be true or false, got %s", what,
                         shown(text, tie, q, sizeof q));
    c->tied = tie && tie->kind == KB_JSON_BOOL && tie->boolean;
    if (get_fixed(o, text, "hidden_act", "silu", 0, "the MLP is SwiGLU (\"silu\")", what, err, errlen) ||
        get_fixed(o, text, "model_type", "llama", 0, "kbench reads Llama checkpoints (\"llama\")", what, err, errlen) ||
        get_fixed(o, text, "attention_bias", NULL, 0, "the model has no biases (false)", what, err, errlen) ||
        get_fixed(o, text, "mlp_bias", NULL, 0, "the model has no biases (false)", what, err, errlen) ||
        get_rope(o, text, c, what, err, errlen))
        return -1;
    return kb_llama_config_check(c, what, err, errlen);
}

int kb_llama_config_parse(const char *text, size_t len, const char *what, kb_llama_config *c, char *err,
                          size_t errlen)
{
    kb_json_object o;
    if (kb_json_parse_flat(text, len, what, &o, err, errlen) != 0)
        return -1;
    const int rc = config_from(&o, text, c, what, err, errlen);
    kb_json_free(&o);
    return rc;
}

int kb_llama_config_read(const char *path, kb_llama_config *c, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    kb_quote(path, q, sizeof q);
    size_t len = 0;
    char *text = kb_input_read(path, q, KB_JSON_MAX_BYTES, &len, err, errlen);
    if (!text)
        return -1;
    const int rc = kb_llama_config_parse(text, len, q, c, err, errlen);
    free(text);
    return rc;
}

/* ---- the weights by name ------------------------------------------------------------- */

typedef enum { W_EMBED, W_NORM, W_MATRIX } weight_kind;

typedef struct {
    const float **slot;
    char name[96];
    int64_t rows, cols; /* cols 0: a vector of rows values */
    weight_kind kind;
} weight_ref;

typedef void (*ref_fn)(const weight_ref *r, void *user);

static void ref(ref_fn fn, void *user, const float **slot, const char *name, int64_t rows, int64_t cols,
                weight_kind kind)
{
    weight_ref r = {slot, "", rows, cols, kind};
    snprintf(r.name, sizeof r.name, "%s", name);
    fn(&r, user);
}

/* Every weight in storage order; m->layers must be allocated.  A tied
 * model's lm_head is the embedding and no weight of its own. */
static void each_ref(kb_llama_model *m, ref_fn fn, void *user)
{
    const kb_llama_config *c = &m->cfg;
    const int64_t d = c->d_model, qd = (int64_t)c->heads * c->head_dim, kvd = (int64_t)c->kv_heads * c->head_dim;
    char n[96];
    ref(fn, user, &m->embed, "model.embed_tokens.weight", c->vocab, d, W_EMBED);
    for (int l = 0; l < c->layers; ++l) {
        kb_llama_layer *L = &m->layers[l];
#define LAYER(slot, leaf, rows, cols, kind)                                   \
        snprintf(n, sizeof n, "model.layers.%d.%s.weight", l, leaf);          \
        ref(fn, user, &L->slot, n, rows, cols, kind)
        LAYER(attn_norm, "input_layernorm", d, 0, W_NORM);
        LAYER(wq, "self_attn.q_proj", qd, d, W_MATRIX);
        LAYER(wk, "self_attn.k_proj", kvd, d, W_MATRIX);
        LAYER(wv, "self_attn.v_proj", kvd, d, W_MATRIX);
        LAYER(wo, "self_attn.o_proj", d, qd, W_MATRIX);
        LAYER(mlp_norm, "post_attention_layernorm", d, 0, W_NORM);
        LAYER(w_gate, "mlp.gate_proj", c->d_ff, d, W_MATRIX);
        LAYER(w_up, "mlp.up_proj", c->d_ff, d, W_MATRIX);
        LAYER(w_down, "mlp.down_proj", d, c->d_ff, W_MATRIX);
#undef LAYER
    }
    ref(fn, user, &m->norm, "model.norm.weight", d, 0, W_NORM);
    if (!c->tied)
        ref(fn, user, &m->lm_head, "lm_head.weight", c->vocab, d, W_MATRIX);
}

static int64_t ref_count(const weight_ref *r) { return r->rows * (r->cols ? r->cols : 1); }

static void carve(const weight_ref *r, void *user)
{
    float **next = user;
    *r->slot = *next;
    *next += ref_count(r);
}

/* m->cfg set: the layer array and the storage, every pointer in place. */
static int alloc_model(kb_llama_model *m)
{
    const int64_t count = kb_llama_weight_count(&m->cfg);
    m->layers = calloc((size_t)m->cfg.layers, sizeof *m->layers);
    m->storage = count < 0 || (uint64_t)count > SIZE_MAX / sizeof(float) ? NULL
                                                                        : malloc(sizeof(float) * (size_t)count);
    if (!m->layers || !m->storage)
        return -1;
    float *next = m->storage;
    each_ref(m, carve, &next);
    if (m->cfg.tied)
        m->lm_head = m->embed;
    return 0;
}

typedef struct {
    uint64_t seed;
    int64_t k;
} filler;

static void fill_random(const weight_ref *r, void *user)
{
    filler *f = user;
    float *p = (float *)*r->slot;
    const int64_t n = ref_count(r);
    kb_fill_uniform(p, n, f->seed * 1000003u + (uint64_t)f->k++);
    const float scale = r->kind == W_EMBED ? 1.0f : r->kind == W_NORM ? 0.1f : 1.0f / sqrtf((float)r->cols);
    for (int64_t i = 0; i < n; ++i)
        p[i] = p[i] * scale + (r->kind == W_NORM ? 1.0f : 0.0f);
}

int kb_llama_init_random(kb_llama_model *m, const kb_llama_config *c, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    if (alloc_model(m) != 0) {
        kb_llama_free(m);
        return -1;
    }
    filler f = {seed, 0};
    each_ref(m, fill_random, &f);
    return 0;
}

typedef struct {
    void (*fn)(const char *name, int64_t rows, int64_t cols, const float *data, void *user);
    void *user;
} each_ctx;

static void hand_out(const weight_ref *r, void *user)
{
    each_ctx *e = user;
    e->fn(r->name, r->rows, r->cols, *r->slot, e->user);
}

void kb_llama_each_weight(const kb_llama_model *m,
                          void (*fn)(const char *name, int64_t rows, int64_t cols, const float *data, void *user),
                          void *user)
{
    each_ctx e = {fn, user};
    each_ref((kb_llama_model *)m, hand_out, &e);
}

void kb_llama_round_bf16(kb_llama_model *m)
{
    const int64_t n = kb_llama_weight_count(&m->cfg);
    for (int64_t i = 0; i < n; ++i)
        m->storage[i] = kb_bf16_to_f32(kb_f32_to_bf16(m->storage[i]));
}

void kb_llama_free(kb_llama_model *m)
{
    free(m->storage);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ---- fp32, bf16 and f16 ------------------------------------------------------------- */

uint16_t kb_f32_to_bf16(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(b >> 16 | 0x40);
    return (uint16_t)((b + 0x7fffu + (b >> 16 & 1)) >> 16);
}

float kb_bf16_to_f32(uint16_t h)
{
    const uint32_t b = (uint32_t)h << 16;
    float x;
    memcpy(&x, &b, 4);
    return x;
}

uint16_t kb_f32_to_f16(float x)
{
    uint32_t b;
    memcpy(&b, &x, 4);
    const uint16_t sign = (uint16_t)(b >> 16 & 0x8000);
    const uint32_t exp = b >> 23 & 0xff, man = b & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    const int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10)
            return sign;
        const uint32_t m24 = man | 0x800000, shift = (uint32_t)(14 - e);
        uint32_t h = m24 >> shift;
        const uint32_t rem = m24 & ((1u << shift) - 1), half = 1u << (shift - 1);
        h += rem > half || (rem == half && (h & 1));
        return (uint16_t)(sign | h);
    }
    uint32_t h = (uint32_t)e << 10 | man >> 13;
    const uint32_t rem = man & 0x1fff;
    h += rem > 0x1000 || (rem == 0x1000 && (h & 1)); /* a carry into the exponent rounds up to Inf */
    return (uint16_t)(sign | h);
}

float kb_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1f, man = h & 0x3ff;
    uint32_t b;
    if (exp == 0x1f)
        b = sign | 0x7f800000u | man << 13;
    else if (exp == 0) {
        const float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    } else
        b = sign | (exp + 112) << 23 | man << 13;
    float x;
    memcpy(&x, &b, 4);
    return x;
}

/* ---- loading a checkpoint ------------------------------------------------------------ */

typedef struct {
    const kb_st_file *f;
    unsigned char *used;
    char *err;
    size_t errlen;
    int failed;
} loader;

static int element_bytes(const char *dtype)
{
    return !strcmp(dtype, "F32") ? 4 : !strcmp(dtype, "BF16") || !strcmp(dtype, "F16") ? 2 : 0;
}

/* The tensor named r->name, with r's shape and a dtype kbench converts;
 * NULL with err set. */
static const kb_st_tensor *find(loader *ld, const char *name, int64_t rows, int64_t cols)
{
    const int i = kb_st_index(ld->f, name);
    if (i < 0) {
        kb_report(ld->err, ld->errlen, "%s: no tensor named '%s'", ld->f->path, name);
        return NULL;
    }
    const kb_st_tensor *t = &ld->f->tensors[i];
    const int ndim = cols ? 2 : 1;
    if (!element_bytes(t->dtype)) {
        kb_report(ld->err, ld->errlen, "%s: tensor '%s' has dtype %s; kbench loads F32, BF16 or F16", ld->f->path,
                  name, t->dtype);
        return NULL;
    }
    if (t->ndim != ndim || t->shape[0] != rows || (cols && t->shape[1] != cols)) {
        char found[160] = "[";
        for (int k = 0; k < t->ndim; ++k)
            snprintf(found + strlen(found), sizeof found - strlen(found), "%s%" PRId64, k ? ", " : "", t->shape[k]);
        strncat(found, "]", sizeof found - strlen(found) - 1);
        if (cols)
            kb_report(ld->err, ld->errlen, "%s: tensor '%s' has shape %s, expected [%" PRId64 ", %" PRId64 "]",
                      ld->f->path, name, found, rows, cols);
        else
            kb_report(ld->err, ld->errlen, "%s: tensor '%s' has shape %s, expected [%" PRId64 "]", ld->f->path,
                      name, found, rows);
        return NULL;
    }
    ld->used[i] = 1;
    return t;
}

static void check_ref(const weight_ref *r, void *user)
{
    loader *ld = user;
    if (!ld->failed && !find(ld, r->name, r->rows, r->cols))
        ld->failed = 1;
}

/* dst[0..n) from the tensor's bytes, converted; -1 at a NaN or Inf. */
static int convert(const kb_st_tensor *t, const unsigned char *src, int64_t n, float *dst)
{
    const int f32 = !strcmp(t->dtype, "F32"), bf16 = !strcmp(t->dtype, "BF16");
    for (int64_t i = 0; i < n; ++i) {
        if (f32)
            memcpy(&dst[i], src + 4 * i, 4);
        else {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = bf16 ? kb_bf16_to_f32(h) : kb_f16_to_f32(h);
        }
        if (!isfinite(dst[i]))
            return -1;
    }
    return 0;
}

static void load_ref(const weight_ref *r, void *user)
{
    loader *ld = user;
    if (ld->failed)
        return;
    const kb_st_tensor *t = &ld->f->tensors[kb_st_index(ld->f, r->name)];
    if (convert(t, ld->f->data + t->begin, ref_count(r), (float *)*r->slot) != 0) {
        kb_report(ld->err, ld->errlen, "%s: tensor '%s' holds NaN or Inf", ld->f->path, r->name);
        ld->failed = 1;
    }
}

/* A tied model's file may still carry lm_head.weight, if it is the
 * embedding: it is checked and marked used, and compared once loaded. */
static const kb_st_tensor *tied_head(loader *ld, const kb_llama_config *c)
{
    if (!c->tied || kb_st_index(ld->f, "lm_head.weight") < 0)
        return NULL;
    const kb_st_tensor *t = find(ld, "lm_head.weight", c->vocab, c->d_model);
    if (!t)
        ld->failed = 1;
    return t;
}

static int same_as_embedding(loader *ld, const kb_llama_model *m, const kb_st_tensor *t)
{
    const int64_t n = (int64_t)m->cfg.vocab * m->cfg.d_model;
    float *head = malloc(sizeof(float) * (size_t)n);
    int rc = 0;
    if (!head)
        rc = kb_report(ld->err, ld->errlen, "%s: out of memory", ld->f->path);
    else if (convert(t, ld->f->data + t->begin, n, head) != 0 || memcmp(head, m->embed, sizeof(float) * (size_t)n))
        rc = kb_report(ld->err, ld->errlen, "%s: tensor 'lm_head.weight' differs from model.embed_tokens.weight but "
                       "config.json says tie_word_embeddings", ld->f->path);
    free(head);
    return rc;
}

static int check_all_used(const loader *ld, const kb_llama_config *c)
{
    char name[KB_QUOTE_LEN];
    for (int i = 0; i < ld->f->count; ++i)
        if (!ld->used[i])
            return kb_report(ld->err, ld->errlen, "%s: tensor '%s' is not part of a %s LlamaForCausalLM with %d "
                             "layers", ld->f->path, kb_quote(ld->f->tensors[i].name, name, sizeof name),
                             c->tied ? "tied" : "untied", c->layers);
    return 0;
}

static int load_file(kb_llama_model *m, const kb_st_file *f, char *err, size_t errlen)
{
    loader ld = {f, calloc((size_t)f->count + 1, 1), err, errlen, 0};
    if (!ld.used || !(m->layers = calloc((size_t)m->cfg.layers, sizeof *m->layers))) {
        free(ld.used);
        return kb_report(err, errlen, "%s: out of memory", f->path);
    }
    /* Names, shapes and dtypes first: the file's size then bounds the
     * storage, which is allocated only for a file that matches. */
    each_ref(m, check_ref, &ld);
    const kb_st_tensor *head = ld.failed ? NULL : tied_head(&ld, &m->cfg);
    int rc = ld.failed || check_all_used(&ld, &m->cfg) != 0 ? -1 : 0;
    free(m->layers);
    m->layers = NULL;
    if (rc == 0 && alloc_model(m) != 0)
        rc = kb_report(err, errlen, "%s: out of memory for %lld weights", f->path,
                       (long long)kb_llama_weight_count(&m->cfg));
    if (rc == 0) {
        each_ref(m, load_ref, &ld);
        rc = ld.failed ? -1 : head ? same_as_embedding(&ld, m, head) : 0;
    }
    free(ld.used);
    return rc;
}

int kb_llama_load(kb_llama_model *m, const char *dir, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    const size_t len = strlen(dir) + 32;
    char *path = malloc(len);
    if (!path)
        return kb_report(err, errlen, "out of memory");
    snprintf(path, len, "%s/config.json", dir);
    int rc = kb_llama_config_read(path, &m->cfg, err, errlen);
    if (rc == 0) {
        kb_st_file f;
        snprintf(path, len, "%s/model.safetensors", dir);
        rc = kb_st_open(path, &f, err, errlen);
        if (rc == 0) {
            rc = load_file(m, &f, err, errlen);
            kb_st_close(&f);
        }
    }
    free(path);
    if (rc != 0)
        kb_llama_free(m);
    return rc;
}
