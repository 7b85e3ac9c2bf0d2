/* The transformer's weights: sizes, and seeded random initialization in
 * PyTorch's layout (model/transformer.h). */
#include <math.h>
#include <stdlib.h>
#include "kernels/kbench.h"
#include "model/safetensors.h"
#include "model/transformer.h"

static int64_t attn_count(int64_t d) { return 3 * d * d + 3 * d + d * d + d; }
static int64_t ffn_count(int64_t d, int64_t ff) { return 2 * d * ff + ff + d; }

int64_t kb_tf_weight_count(const kb_tf_config *c)
{
    const int64_t d = c->d_model, ff = c->d_ff;
    int64_t enc = attn_count(d) + ffn_count(d, ff) + 4 * d;
    int64_t dec = 2 * attn_count(d) + ffn_count(d, ff) + 6 * d;
    return c->enc_layers * enc + c->dec_layers * dec + 4 * d;
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
    m->storage = malloc((size_t)kb_tf_weight_count(c) * sizeof(float));
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
