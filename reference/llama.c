/* The Llama-style decoder's C reference forward with a KV cache: plain C11,
 * every activation in double, weights fp32 (reference/llama.h has the
 * maths).  Structured as reference/transformer.c: one function per block,
 * rows of each product and (head, query) pairs of attention over OpenMP
 * threads, none of which changes the arithmetic of any one value. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "model/transformer.h"
#include "reference/attend_row.h"
#include "reference/llama.h"

/* y[n x out] = x[n x in] W^T, W is [out x in].  Four partial sums break
 * the add's latency chain.  (block of ROWS rows, output) pairs go to
 * threads, so a decode step's single row still spreads over them, and a
 * prefill reads each weight row once per block rather than once per row.
 * Neither changes the arithmetic of any one output. */
#define ROWS 8
void kb_llama_linear(const double *x, int n, int in, const float *W, int out, double *y)
{
    const int blocks = (n + ROWS - 1) / ROWS;
#pragma omp parallel for schedule(static) collapse(2) if ((int64_t)n * out * in > (1 << 18))
    for (int b = 0; b < blocks; ++b)
        for (int o = 0; o < out; ++o) {
            const float *w = W + (int64_t)o * in;
            for (int i = b * ROWS; i < n && i < (b + 1) * ROWS; ++i) {
                const double *xi = x + (int64_t)i * in;
                double acc[4] = {0, 0, 0, 0};
                int k = 0;
                for (; k + 4 <= in; k += 4)
                    for (int u = 0; u < 4; ++u)
                        acc[u] += xi[k + u] * w[k + u];
                for (; k < in; ++k)
                    acc[0] += xi[k] * w[k];
                y[(int64_t)i * out + o] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            }
        }
}

/* y = x / sqrt(mean(x^2) + eps) * w, row by row. */
void kb_llama_rmsnorm(const double *x, int n, int d, const float *w, double eps, double *y)
{
    for (int i = 0; i < n; ++i) {
        const double *row = x + (int64_t)i * d;
        double ss = 0;
        for (int c = 0; c < d; ++c)
            ss += row[c] * row[c];
        const double r = 1.0 / sqrt(ss / d + eps);
        for (int c = 0; c < d; ++c)
            y[(int64_t)i * d + c] = row[c] * r * w[c];
    }
}

double kb_llama_inv_freq(const kb_llama_config *c, int i)
{
    const double f = pow(c->rope_theta, -2.0 * i / c->head_dim);
    const kb_llama_rope_scaling *r = &c->rope_scaling;
    if (r->factor == 0)
        return f;
    const double two_pi = 6.28318530717958647692, wavelen = two_pi / f, n = r->original_max_pos;
    if (wavelen < n / r->high_freq_factor)
        return f;
    if (wavelen > n / r->low_freq_factor)
        return f / r->factor;
    const double a = (n / wavelen - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
    return (1 - a) * f / r->factor + a * f;
}

void kb_llama_rope(double *x, const kb_llama_config *c, int64_t pos)
{
    const int half = c->head_dim / 2;
    for (int i = 0; i < half; ++i) {
        const double a = (double)pos * kb_llama_inv_freq(c, i);
        const double cs = cos(a), sn = sin(a), x1 = x[i], x2 = x[i + half];
        x[i] = x1 * cs - x2 * sn;
        x[i + half] = x2 * cs + x1 * sn;
    }
}

typedef struct {
    double *x, *h, *q, *o, *gate, *up, *probs;
    int keys; /* each thread's row of probs */
} scratch;

/* Self-attention of the n new rows of h (positions p0..p0+n-1) for layer
 * l: their keys and values go into the cache, then each query reads the
 * cache up to its own position.  The result, n x d, is added into s->x. */
static void attention(const kb_llama_model *m, int l, kb_llama_cache *c, int p0, int n, const scratch *s)
{
    const kb_llama_config *cfg = &m->cfg;
    const kb_llama_layer *L = &m->layers[l];
    const int d = cfg->d_model, hd = cfg->head_dim, H = cfg->heads, qd = H * hd, kvd = c->kv_dim;
    const int rep = H / cfg->kv_heads;
    double *Kc = c->k + (int64_t)l * c->max_len * kvd, *Vc = c->v + (int64_t)l * c->max_len * kvd;
    kb_llama_linear(s->h, n, d, L->wq, qd, s->q);
    kb_llama_linear(s->h, n, d, L->wk, kvd, Kc + (int64_t)p0 * kvd);
    kb_llama_linear(s->h, n, d, L->wv, kvd, Vc + (int64_t)p0 * kvd);
    for (int i = 0; i < n; ++i) {
        for (int h = 0; h < H; ++h)
            kb_llama_rope(s->q + (int64_t)i * qd + h * hd, cfg, p0 + i);
        for (int h = 0; h < cfg->kv_heads; ++h)
            kb_llama_rope(Kc + (int64_t)(p0 + i) * kvd + h * hd, cfg, p0 + i);
    }
    const double scale = 1.0 / sqrt((double)hd);
#pragma omp parallel if ((int64_t)n * (p0 + n) * qd > (1 << 16))
    {
        double *p = s->probs + (size_t)omp_get_thread_num() * s->keys;
#pragma omp for schedule(static) collapse(2)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < n; ++i) {
                const int kvh = h / rep;
                kb_ref_attend_row(s->q + (int64_t)i * qd + h * hd, Kc + kvh * hd, Vc + kvh * hd, p0 + i + 1, kvd, hd,
                           scale, p, s->o + (int64_t)i * qd + h * hd);
            }
    }
    /* Wo's product lands in h (free again), then joins the residual. */
    kb_llama_linear(s->o, n, qd, L->wo, d, s->h);
    for (int64_t i = 0; i < (int64_t)n * d; ++i)
        s->x[i] += s->h[i];
}

/* x += down(silu(gate(h)) * up(h)), h being RMSNorm(x) already. */
static void mlp(const kb_llama_layer *L, int n, int d, int ff, const scratch *s)
{
    kb_llama_linear(s->h, n, d, L->w_gate, ff, s->gate);
    kb_llama_linear(s->h, n, d, L->w_up, ff, s->up);
    for (int64_t i = 0; i < (int64_t)n * ff; ++i) {
        const double g = s->gate[i];
        s->gate[i] = g / (1.0 + exp(-g)) * s->up[i];
    }
    kb_llama_linear(s->gate, n, ff, L->w_down, d, s->h);
    for (int64_t i = 0; i < (int64_t)n * d; ++i)
        s->x[i] += s->h[i];
}

int kb_llama_cache_init(kb_llama_cache *c, const kb_llama_config *cfg, int max_len)
{
    memset(c, 0, sizeof *c);
    const int64_t kvd = (int64_t)cfg->kv_heads * cfg->head_dim;
    const int64_t n = kb_size_muladd(kb_size_muladd(cfg->layers, max_len, 0), kvd, 0);
    if (max_len < 1 || max_len > cfg->max_pos || n < 0 || n > KB_TF_MAX_FLOATS)
        return -1;
    c->k = malloc(sizeof(double) * (size_t)n);
    c->v = malloc(sizeof(double) * (size_t)n);
    if (!c->k || !c->v) {
        kb_llama_cache_free(c);
        return -1;
    }
    c->max_len = max_len;
    c->kv_dim = (int)kvd;
    c->layers = cfg->layers;
    return 0;
}

void kb_llama_cache_free(kb_llama_cache *c)
{
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Doubles of scratch for n new rows over `keys` positions: x and h (n x
 * d), q and o (n x H*hd), gate and up (n x ff), a row of probabilities per
 * thread and a row of logits; -1 when the count overflows. */
static int64_t scratch_doubles(const kb_llama_config *c, int n, int keys, int threads)
{
    const int64_t qd = (int64_t)c->heads * c->head_dim;
    const int64_t width = kb_size_muladd(2, c->d_model, kb_size_muladd(2, qd, 2 * (int64_t)c->d_ff));
    return kb_size_muladd(n, width, kb_size_muladd(threads, keys, c->vocab));
}

int kb_llama_forward(const kb_llama_model *m, kb_llama_cache *c, const int *ids, int n, float *logits,
                     float *all_logits)
{
    const kb_llama_config *cfg = &m->cfg;
    const int d = cfg->d_model, p0 = c->len, threads = omp_get_max_threads();
    if (n < 1 || n > c->max_len - p0)
        return -1;
    for (int i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= cfg->vocab)
            return -1;
    const int64_t count = scratch_doubles(cfg, n, p0 + n, threads);
    double *mem = count < 0 || (uint64_t)count > SIZE_MAX / sizeof(double) ? NULL
                                                                          : malloc(sizeof(double) * (size_t)count);
    if (!mem)
        return -1;
    const int64_t qd = (int64_t)cfg->heads * cfg->head_dim;
    scratch s = {.x = mem, .keys = p0 + n};
    s.h = s.x + (int64_t)n * d;
    s.q = s.h + (int64_t)n * d;
    s.o = s.q + n * qd;
    s.gate = s.o + n * qd;
    s.up = s.gate + (int64_t)n * cfg->d_ff;
    s.probs = s.up + (int64_t)n * cfg->d_ff;
    double *row = s.probs + (int64_t)threads * s.keys;

    for (int i = 0; i < n; ++i)
        for (int j = 0; j < d; ++j)
            s.x[(int64_t)i * d + j] = m->embed[(int64_t)ids[i] * d + j];
    for (int l = 0; l < cfg->layers; ++l) {
        const kb_llama_layer *L = &m->layers[l];
        kb_llama_rmsnorm(s.x, n, d, L->attn_norm, cfg->eps, s.h);
        attention(m, l, c, p0, n, &s);
        kb_llama_rmsnorm(s.x, n, d, L->mlp_norm, cfg->eps, s.h);
        mlp(L, n, d, cfg->d_ff, &s);
    }
    c->len = p0 + n;

    /* The final norm and the LM head, over every new row or the last. */
    const int first = all_logits ? 0 : n - 1;
    kb_llama_rmsnorm(s.x + (int64_t)first * d, n - first, d, m->norm, cfg->eps, s.h);
    for (int i = first; i < n; ++i) {
        kb_llama_linear(s.h + (int64_t)(i - first) * d, 1, d, m->lm_head, cfg->vocab, row);
        for (int v = 0; v < cfg->vocab; ++v) {
            if (all_logits)
                all_logits[(int64_t)i * cfg->vocab + v] = (float)row[v];
            if (logits && i == n - 1)
                logits[v] = (float)row[v];
        }
    }
    free(mem);
    return 0;
}

int kb_llama_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best])
            best = i;
    return best;
}
