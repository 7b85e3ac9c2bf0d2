/* The transformer's weights: sizes, and seeded random initialization in
 * PyTorch's layout (model/transformer.h). */
#include <math.h>
#include <stdlib.h>
#include "ops/kbench.h"
#include "formats/safetensors.h"
#include "model/transformer.h"

/* One attention: in_proj 3d x d and 3d, out_proj d x d and d. */
static int64_t attn_count(int64_t d) { return kb_size_muladd(4 * d, d, 4 * d); }
/* linear1 ff x d and ff, linear2 d x ff and d. */
static int64_t ffn_count(int64_t d, int64_t ff) { return kb_size_muladd(2 * d, ff, ff + d); }

int64_t kb_tf_weight_count(const kb_tf_config *c)
{
    const int64_t d = c->d_model, ff = c->d_ff, attn = attn_count(d), ffn = ffn_count(d, ff);
    /* Each sum below is a muladd too, so an overflow anywhere gives -1. */
    const int64_t enc = kb_size_muladd(1, attn, kb_size_muladd(1, ffn, 4 * d));
    const int64_t dec = kb_size_muladd(2, attn, kb_size_muladd(1, ffn, 6 * d));
    const int64_t n = kb_size_muladd(c->enc_layers, enc, kb_size_muladd(c->dec_layers, dec, 4 * d));
    return n > KB_TF_MAX_FLOATS ? -1 : n;
}

int64_t kb_first_nonfinite(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        if (!isfinite(x[i]))
            return i;
    return -1;
}

/* Hands out consecutive slices of the weight storage, filling each. */
typedef struct {
    float *next;
    uint64_t seed;
} carver;

/* A matrix or bias: uniform in [-bound, bound]. */
static const float *take_uniform(carver *cv, int64_t n, float bound)
{
    float *p = cv->next;
    kb_fill_uniform(p, n, cv->seed++);
    for (int64_t i = 0; i < n; ++i)
        p[i] *= bound;
    cv->next += n;
    return p;
}

/* A norm: gamma near 1 and beta near 0, not exactly, so a forward that
 * drops either is caught. */
static kb_tf_norm take_norm(carver *cv, int64_t d)
{
    float *w = (float *)take_uniform(cv, d, 0.1f);
    for (int64_t i = 0; i < d; ++i)
        w[i] += 1.0f;
    kb_tf_norm n = {w, take_uniform(cv, d, 0.1f)};
    return n;
}

static kb_tf_attn take_attn(carver *cv, int64_t d)
{
    const float bound = 1.0f / sqrtf((float)d);
    kb_tf_attn a;
    a.in_w = take_uniform(cv, 3 * d * d, bound);
    a.in_b = take_uniform(cv, 3 * d, bound);
    a.out_w = take_uniform(cv, d * d, bound);
    a.out_b = take_uniform(cv, d, bound);
    return a;
}

static void take_ffn(carver *cv, kb_tf_layer *l, int64_t d, int64_t ff)
{
    l->w1 = take_uniform(cv, ff * d, 1.0f / sqrtf((float)d));
    l->b1 = take_uniform(cv, ff, 1.0f / sqrtf((float)d));
    l->w2 = take_uniform(cv, d * ff, 1.0f / sqrtf((float)ff));
    l->b2 = take_uniform(cv, d, 1.0f / sqrtf((float)ff));
}

int kb_tf_init_random(kb_tf_model *m, const kb_tf_config *c, uint64_t seed)
{
    const int64_t d = c->d_model;
    m->cfg = *c;
    m->weights_file = NULL;
    const int64_t count = kb_tf_weight_count(c);
    m->storage = count < 0 ? NULL : malloc((size_t)count * sizeof(float));
    m->enc = calloc((size_t)c->enc_layers + 1, sizeof *m->enc);
    m->dec = calloc((size_t)c->dec_layers + 1, sizeof *m->dec);
    if (!m->storage || !m->enc || !m->dec) {
        kb_tf_free(m);
        return -1;
    }
    carver cv = {m->storage, seed};
    for (int l = 0; l < c->enc_layers; ++l) {
        m->enc[l].self_attn = take_attn(&cv, d);
        take_ffn(&cv, &m->enc[l], d, c->d_ff);
        m->enc[l].norm1 = take_norm(&cv, d);
        m->enc[l].norm2 = take_norm(&cv, d);
    }
    for (int l = 0; l < c->dec_layers; ++l) {
        m->dec[l].self_attn = take_attn(&cv, d);
        m->dec[l].cross_attn = take_attn(&cv, d);
        take_ffn(&cv, &m->dec[l], d, c->d_ff);
        m->dec[l].norm1 = take_norm(&cv, d);
        m->dec[l].norm2 = take_norm(&cv, d);
        m->dec[l].norm3 = take_norm(&cv, d);
    }
    m->enc_norm = take_norm(&cv, d);
    m->dec_norm = take_norm(&cv, d);
    return 0;
}

void kb_tf_free(kb_tf_model *m)
{
    if (m->weights_file) {
        kb_st_close(m->weights_file);
        free(m->weights_file);
    }
    m->weights_file = NULL;
    free(m->storage);
    free(m->enc);
    free(m->dec);
    m->storage = NULL;
    m->enc = m->dec = NULL;
}
