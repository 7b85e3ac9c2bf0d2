/* The transformer's weights by PyTorch name: loading a torch.nn.Transformer
 * state_dict from safetensors, and walking a model's weights by name (for
 * writers and tests).  One table of names drives both. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "formats/safetensors.h"
#include "harness/harness.h"
#include "model/transformer.h"

/* One weight: where its pointer lives in the model, its name, its shape. */
typedef struct {
    const float **slot;
    char name[128];
    int ndim;
    int64_t shape[2];
} weight_ref;

typedef struct {
    weight_ref *w;
    int n, cap, failed;
} weight_list;

/* Entries past a failed allocation are dropped; l->failed says so. */
static void add(weight_list *l, const float **slot, const char *prefix, const char *leaf, int64_t rows,
                int64_t cols)
{
    if (l->n == l->cap) {
        weight_ref *grown = realloc(l->w, (size_t)(l->cap ? 2 * l->cap : 64) * sizeof *l->w);
        if (!grown) {
            l->failed = 1;
            return;
        }
        l->w = grown;
        l->cap = l->cap ? 2 * l->cap : 64;
    }
    weight_ref *r = &l->w[l->n++];
    r->slot = slot;
    snprintf(r->name, sizeof r->name, "%s%s", prefix, leaf);
    r->ndim = cols ? 2 : 1;
    r->shape[0] = rows;
    r->shape[1] = cols;
}

static void add_attn(weight_list *l, kb_tf_attn *a, const char *prefix, int64_t d)
{
    add(l, &a->in_w, prefix, "in_proj_weight", 3 * d, d);
    add(l, &a->in_b, prefix, "in_proj_bias", 3 * d, 0);
    add(l, &a->out_w, prefix, "out_proj.weight", d, d);
    add(l, &a->out_b, prefix, "out_proj.bias", d, 0);
}

static void add_norm(weight_list *l, kb_tf_norm *n, const char *prefix, int64_t d)
{
    add(l, &n->w, prefix, "weight", d, 0);
    add(l, &n->b, prefix, "bias", d, 0);
}

static void add_layer(weight_list *l, kb_tf_layer *L, const char *stack, int i, int decoder, int64_t d,
                      int64_t ff)
{
    char p[96];
    snprintf(p, sizeof p, "%s.layers.%d.self_attn.", stack, i);
    add_attn(l, &L->self_attn, p, d);
    if (decoder) {
        snprintf(p, sizeof p, "%s.layers.%d.multihead_attn.", stack, i);
        add_attn(l, &L->cross_attn, p, d);
    }
    snprintf(p, sizeof p, "%s.layers.%d.", stack, i);
    add(l, &L->w1, p, "linear1.weight", ff, d);
    add(l, &L->b1, p, "linear1.bias", ff, 0);
    add(l, &L->w2, p, "linear2.weight", d, ff);
    add(l, &L->b2, p, "linear2.bias", d, 0);
    kb_tf_norm *norms[] = {&L->norm1, &L->norm2, &L->norm3};
    for (int k = 0; k < (decoder ? 3 : 2); ++k) {
        char np[112];
        snprintf(np, sizeof np, "%snorm%d.", p, k + 1);
        add_norm(l, norms[k], np, d);
    }
}

/* Every weight of m by name; m's layer arrays must be allocated. */
static weight_list list_weights(kb_tf_model *m)
{
    weight_list l = {0};
    const int64_t d = m->cfg.d_model, ff = m->cfg.d_ff;
    for (int i = 0; i < m->cfg.enc_layers; ++i)
        add_layer(&l, &m->enc[i], "encoder", i, 0, d, ff);
    for (int i = 0; i < m->cfg.dec_layers; ++i)
        add_layer(&l, &m->dec[i], "decoder", i, 1, d, ff);
    add_norm(&l, &m->enc_norm, "encoder.norm.", d);
    add_norm(&l, &m->dec_norm, "decoder.norm.", d);
    return l;
}

void kb_tf_each_weight(const kb_tf_model *m,
                       void (*fn)(const char *name, int ndim, const int64_t *shape, const float *data,
                                  void *user),
                       void *user)
{
    weight_list l = list_weights((kb_tf_model *)m);
    for (int i = 0; i < l.n; ++i)
        fn(l.w[i].name, l.w[i].ndim, l.w[i].shape, *l.w[i].slot, user);
    free(l.w);
}

/* Layers in a stack: one more than the highest N of any "<stack>.layers.N."
 * name, so a layer missing some weight is reported, not silently dropped. */
static int count_layers(const kb_st_file *f, const char *stack)
{
    char prefix[32];
    int n = 0, len = snprintf(prefix, sizeof prefix, "%s.layers.", stack);
    for (int i = 0; i < f->count; ++i) {
        const char *name = f->tensors[i].name;
        char *end;
        long layer = strncmp(name, prefix, (size_t)len) ? -1 : strtol(name + len, &end, 10);
        if (layer >= 0 && layer < 1 << 16 && *end == '.' && layer + 1 > n)
            n = (int)layer + 1;
    }
    return n;
}

/* d_model and d_ff from a layer's linear1.weight, [d_ff, d_model]. */
static int read_dims(const kb_st_file *f, kb_tf_config *c, char *err, size_t errlen)
{
    int ndim;
    int64_t shape[KB_ST_MAX_DIMS];
    char first[96];
    c->enc_layers = count_layers(f, "encoder");
    c->dec_layers = count_layers(f, "decoder");
    if (!c->enc_layers && !c->dec_layers)
        return kb_report(err, errlen, "%s: no torch.nn.Transformer layers (no encoder.layers.* or decoder.layers.*)",
                      f->path);
    snprintf(first, sizeof first, "%s.layers.0.linear1.weight", c->enc_layers ? "encoder" : "decoder");
    if (kb_st_shape(f, first, &ndim, shape) != 0 || ndim != 2)
        return kb_report(err, errlen, "%s: missing tensor %s, which gives d_model and d_ff", f->path, first);
    if (shape[0] > 1 << 20 || shape[1] > 1 << 20)
        return kb_report(err, errlen, "%s: tensor %s gives d_ff = %" PRId64 " and d_model = %" PRId64
                      ", over 2^20", f->path, first, shape[0], shape[1]);
    c->d_ff = (int)shape[0];
    c->d_model = (int)shape[1];
    if (c->heads < 1 || c->d_model % c->heads)
        return kb_report(err, errlen, "%s: %d heads do not divide d_model = %d", f->path, c->heads, c->d_model);
    return 0;
}

/* No torch.nn.Transformer tensor has a zero-sized dimension; one in
 * linear1.weight would make d_model or d_ff 0. */
static int check_no_empty_dims(const kb_st_file *f, char *err, size_t errlen)
{
    char name[KB_QUOTE_LEN];
    for (int i = 0; i < f->count; ++i)
        for (int k = 0; k < f->tensors[i].ndim; ++k)
            if (f->tensors[i].shape[k] == 0)
                return kb_report(err, errlen, "%s: tensor '%s' has a zero-sized dimension", f->path,
                              kb_quote(f->tensors[i].name, name, sizeof name));
    return 0;
}

/* Point each weight of l at its tensor (F32, the shape the model expects,
 * all finite), marking the tensors it takes in used[]. */
static int take(const kb_st_file *f, const weight_list *l, unsigned char *used, char *err, size_t errlen)
{
    if (l->failed)
        return kb_report(err, errlen, "%s: out of memory", f->path);
    for (int i = 0; i < l->n; ++i) {
        const weight_ref *w = &l->w[i];
        if (kb_st_get(f, w->name, w->ndim, w->shape, w->slot, err, errlen) != 0)
            return -1;
        if (kb_first_nonfinite(*w->slot, w->shape[0] * (w->ndim == 2 ? w->shape[1] : 1)) >= 0)
            return kb_report(err, errlen, "%s: tensor '%s' holds NaN or Inf", f->path, w->name);
        used[kb_st_index(f, w->name)] = 1;
    }
    return 0;
}

/* Every weight, a layer at a time (a file that names a far layer then costs
 * a short list, not one for every layer up to it), then the final norms. */
static int take_all(kb_tf_model *m, const kb_st_file *f, unsigned char *used, char *err, size_t errlen)
{
    const kb_tf_config *c = &m->cfg;
    weight_list l = {0};
    int rc = 0;
    for (int i = 0; i < c->enc_layers + c->dec_layers && rc == 0; ++i) {
        const int dec = i >= c->enc_layers, n = dec ? i - c->enc_layers : i;
        l.n = 0;
        add_layer(&l, dec ? &m->dec[n] : &m->enc[n], dec ? "decoder" : "encoder", n, dec, c->d_model, c->d_ff);
        rc = take(f, &l, used, err, errlen);
    }
    if (rc == 0) {
        l.n = 0;
        add_norm(&l, &m->enc_norm, "encoder.norm.", c->d_model);
        add_norm(&l, &m->dec_norm, "decoder.norm.", c->d_model);
        rc = take(f, &l, used, err, errlen);
    }
    free(l.w);
    return rc;
}

/* As PyTorch's strict load_state_dict: a tensor the model has no place for
 * is an error, not something to skip. */
static int check_all_used(const kb_st_file *f, const kb_tf_config *c, const unsigned char *used, char *err,
                          size_t errlen)
{
    char name[KB_QUOTE_LEN];
    for (int i = 0; i < f->count; ++i)
        if (!used[i])
            return kb_report(err, errlen, "%s: tensor '%s' is not part of a torch.nn.Transformer with %d encoder and "
                          "%d decoder layers", f->path, kb_quote(f->tensors[i].name, name, sizeof name),
                          c->enc_layers, c->dec_layers);
    return 0;
}

int kb_tf_load(kb_tf_model *m, const char *path, int heads, int causal, char *err, size_t errlen)
{
    kb_st_file *f = calloc(1, sizeof *f);
    unsigned char *used = NULL;
    memset(m, 0, sizeof *m);
    m->weights_file = f;
    m->cfg = (kb_tf_config){.heads = heads, .eps = 1e-5f, .causal = causal};
    if (!f)
        return kb_report(err, errlen, "out of host memory for the weights");
    int rc = kb_st_open(path, f, err, errlen) != 0 || check_no_empty_dims(f, err, errlen) != 0 ||
             read_dims(f, &m->cfg, err, errlen) != 0 ? -1 : 0;
    if (rc == 0) {
        m->enc = calloc((size_t)m->cfg.enc_layers + 1, sizeof *m->enc);
        m->dec = calloc((size_t)m->cfg.dec_layers + 1, sizeof *m->dec);
        used = calloc((size_t)f->count, 1);
        rc = !m->enc || !m->dec || !used ? kb_report(err, errlen, "%s: out of memory", f->path)
             : take_all(m, f, used, err, errlen) != 0 ? -1 : check_all_used(f, &m->cfg, used, err, errlen);
    }
    free(used);
    if (rc != 0)
        kb_tf_free(m);
    return rc;
}
