/* The Llama-style reference (reference/llama.h) on the CPU: RoPE's
 * convention and invariants; a case worked out by hand; a plain
 * full-sequence forward written here, independently, on a seeded GQA model;
 * KV-cache decoding against a full recompute; GQA against the MHA model
 * whose K/V heads are repeated; thread-count independence; refusals. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "model/llama.h"
#include "tests/check.h"

static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* ---- RoPE ------------------------------------------------------------------------------ */

static void test_rope(void)
{
    enum { HD = 8 };
    double x[HD], y[HD];
    for (int i = 0; i < HD; ++i)
        x[i] = y[i] = sin(3.0 * i + 1);
    kb_llama_config c = {.head_dim = HD, .rope_theta = 10000};
    kb_llama_rope(y, &c, 0);
    for (int i = 0; i < HD; ++i)
        CHECK(y[i] == x[i]);
    /* Norm-preserving at any position; and HF's rotate_half: the pair
     * (x[i], x[i + 4]) turns as the complex number x[i] + j x[i + 4] times
     * e^{j p f_i}, f_i = theta^(-i/4). */
    const double theta = 500, pos = 37;
    memcpy(y, x, sizeof x);
    c.rope_theta = theta;
    kb_llama_rope(y, &c, (int64_t)pos);
    double n0 = 0, n1 = 0;
    for (int i = 0; i < HD; ++i)
        n0 += x[i] * x[i], n1 += y[i] * y[i];
    CHECK_NEAR(n0, n1, 1e-12);
    for (int i = 0; i < HD / 2; ++i) {
        const double a = pos * exp(-log(theta) * (2.0 * i / HD));
        const double re = x[i] * cos(a) - x[i + HD / 2] * sin(a), im = x[i] * sin(a) + x[i + HD / 2] * cos(a);
        CHECK_NEAR(y[i], re, 1e-12);
        CHECK_NEAR(y[i + HD / 2], im, 1e-12);
    }
    /* Position 1, i = 0: a rotation by exactly 1 radian. */
    double z[HD] = {1, 0, 0, 0, 0, 0, 0, 0};
    kb_llama_rope(z, &c, 1);
    CHECK_NEAR(z[0], cos(1.0), 1e-15);
    CHECK_NEAR(z[4], sin(1.0), 1e-15);
}

/* Llama 3.1's rope_scaling (theta 500000, head_dim 128, factor 8, low 1,
 * high 4, original context 8192): wavelengths under 8192 / 4 keep their
 * frequency, those over 8192 / 1 take an eighth of it, and those between
 * blend the two by (8192 / wavelength - 1) / 3; the frequencies still
 * fall with i.  Factor 0 is plain RoPE. */
static void test_rope_scaling(void)
{
    kb_llama_config c = {.head_dim = 128, .rope_theta = 500000};
    const double two_pi = 6.28318530717958647692;
    double plain[64];
    for (int i = 0; i < 64; ++i) {
        plain[i] = kb_llama_inv_freq(&c, i);
        CHECK_NEAR(plain[i], exp(-log(500000.0) * i / 64), 1e-15 * plain[i] + 1e-300);
    }
    c.rope_scaling = (kb_llama_rope_scaling){8, 1, 4, 8192};
    int kept = 0, divided = 0, blended = 0;
    for (int i = 0; i < 64; ++i) {
        const double f = kb_llama_inv_freq(&c, i), w = two_pi / plain[i];
        if (w < 2048) {
            CHECK(f == plain[i]);
            ++kept;
        } else if (w > 8192) {
            CHECK_NEAR(f, plain[i] / 8, 1e-15 * f);
            ++divided;
        } else {
            const double a = (8192 / w - 1) / 3;
            CHECK(a >= 0 && a <= 1);
            CHECK_NEAR(f, plain[i] * (a + (1 - a) / 8), 1e-15 * f);
            ++blended;
        }
        CHECK(i == 0 || f < kb_llama_inv_freq(&c, i - 1));
    }
    /* log f_i = -i ln(500000) / 64: the band of wavelengths 2048-8192 is i = 29..34. */
    CHECK(kept == 29 && blended == 6 && divided == 29);
}

/* ---- by hand ------------------------------------------------------------------------------ */

/* d 4, two heads of 2 (two K/V heads), one layer, vocab 3, tied.  Wq = Wk
 * = 0, so attention averages the values uniformly; Wv = Wo = I; gate = up
 * = down = 0, so the MLP adds silu(0) * 0 = 0; norm weights 1.  With n(x)
 * = x / rms(x), position t's hidden state is e_t + mean_{j<=t} n(e_j).
 *   e0 = [1 1 1 1]: n(e0) = e0; h0 = [2 2 2 2]; n(h0) = [1 1 1 1];
 *     logits0 = n(h0) . E^T = [4, 2, 3].
 *   e1 = [2 0 0 0]: n(e1) = e1; h1 = e1 + (e0 + e1) / 2 = [3.5 .5 .5 .5],
 *     rms(h1) = sqrt(13) / 2, n(h1) = [7 1 1 1] / sqrt(13);
 *     logits1 = [10, 14, 3] / sqrt(13).
 * (eps = 1e-12 moves these by ~1e-12.) */
static void test_by_hand(void)
{
    enum { D = 4, V = 3 };
    static float embed[V * D] = {1, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0, 3}, ones[D] = {1, 1, 1, 1}, eye[D * D],
                 zeros[D * D];
    for (int i = 0; i < D; ++i)
        eye[i * D + i] = 1;
    kb_llama_layer L = {ones, zeros, zeros, eye, eye, ones, zeros, zeros, zeros};
    kb_llama_model m = {{.d_model = D, .d_ff = D, .layers = 1, .heads = 2, .kv_heads = 2, .head_dim = 2, .vocab = V,
                         .max_pos = 8, .tied = 1, .eps = 1e-12, .rope_theta = 10000},
                        embed, &L, ones, embed, NULL};
    kb_llama_cache c;
    CHECK(kb_llama_cache_init(&c, &m.cfg, 4) == 0);
    const int ids[2] = {0, 1};
    float all[2 * V];
    CHECK(kb_llama_forward(&m, &c, ids, 2, NULL, all) == 0);
    const double want[2 * V] = {4, 2, 3, 10 / sqrt(13), 14 / sqrt(13), 3 / sqrt(13)};
    for (int i = 0; i < 2 * V; ++i)
        CHECK_NEAR(all[i], want[i], 1e-6);
    CHECK(kb_llama_argmax(all + V, V) == 1 && kb_llama_argmax(all, V) == 0);
    kb_llama_cache_free(&c);
}

/* ---- an independent forward --------------------------------------------------------------- */

/* Straight from the formulas, the whole sequence at once, no cache: the
 * logits of every position (T x vocab), in double. */
static void plain_forward(const kb_llama_model *m, const int *ids, int T, double *logits)
{
    const kb_llama_config *c = &m->cfg;
    const int d = c->d_model, hd = c->head_dim, H = c->heads, KV = c->kv_heads, F = c->d_ff;
    double *x = calloc((size_t)T * d, 8), *n = calloc((size_t)T * d, 8), *q = calloc((size_t)T * H * hd, 8);
    double *k = calloc((size_t)T * KV * hd, 8), *v = calloc((size_t)T * KV * hd, 8), *o = calloc((size_t)T * H * hd, 8);
    double *p = calloc((size_t)T, 8), *a = calloc((size_t)F, 8);
    for (int t = 0; t < T; ++t)
        for (int j = 0; j < d; ++j)
            x[t * d + j] = m->embed[ids[t] * d + j];
#define NORM(w)                                                                                    \
    for (int t = 0; t < T; ++t) {                                                                  \
        double ms = 0;                                                                             \
        for (int j = 0; j < d; ++j)                                                                \
            ms += x[t * d + j] * x[t * d + j] / d;                                                 \
        for (int j = 0; j < d; ++j)                                                                \
            n[t * d + j] = x[t * d + j] / sqrt(ms + c->eps) * (w)[j];                              \
    }
    for (int l = 0; l < c->layers; ++l) {
        const kb_llama_layer *L = &m->layers[l];
        NORM(L->attn_norm);
        for (int t = 0; t < T; ++t) {
            for (int r = 0; r < H * hd; ++r) {
                q[t * H * hd + r] = 0;
                for (int j = 0; j < d; ++j)
                    q[t * H * hd + r] += L->wq[r * d + j] * n[t * d + j];
            }
            for (int r = 0; r < KV * hd; ++r) {
                k[t * KV * hd + r] = v[t * KV * hd + r] = 0;
                for (int j = 0; j < d; ++j) {
                    k[t * KV * hd + r] += L->wk[r * d + j] * n[t * d + j];
                    v[t * KV * hd + r] += L->wv[r * d + j] * n[t * d + j];
                }
            }
            /* rotate_half: the pair (i, i + hd/2) of every head. */
            for (int h = 0; h < H + KV; ++h) {
                double *vec = h < H ? &q[t * H * hd + h * hd] : &k[t * KV * hd + (h - H) * hd];
                for (int i = 0; i < hd / 2; ++i) {
                    const double ang = t * pow(c->rope_theta, -(2.0 * i) / hd), x1 = vec[i], x2 = vec[i + hd / 2];
                    vec[i] = x1 * cos(ang) - x2 * sin(ang);
                    vec[i + hd / 2] = x2 * cos(ang) + x1 * sin(ang);
                }
            }
        }
        for (int h = 0; h < H; ++h) {
            const int g = h * KV / H; /* repeat_kv: head h reads K/V head h / (H / KV) */
            for (int t = 0; t < T; ++t) {
                double mx = -1e300, sum = 0;
                for (int s = 0; s <= t; ++s) {
                    p[s] = 0;
                    for (int i = 0; i < hd; ++i)
                        p[s] += q[t * H * hd + h * hd + i] * k[s * KV * hd + g * hd + i];
                    p[s] /= sqrt(hd);
                    mx = p[s] > mx ? p[s] : mx;
                }
                for (int s = 0; s <= t; ++s)
                    sum += p[s] = exp(p[s] - mx);
                for (int i = 0; i < hd; ++i) {
                    o[t * H * hd + h * hd + i] = 0;
                    for (int s = 0; s <= t; ++s)
                        o[t * H * hd + h * hd + i] += p[s] / sum * v[s * KV * hd + g * hd + i];
                }
            }
        }
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < d; ++j)
                for (int r = 0; r < H * hd; ++r)
                    x[t * d + j] += L->wo[j * H * hd + r] * o[t * H * hd + r];
        NORM(L->mlp_norm);
        for (int t = 0; t < T; ++t) {
            for (int f = 0; f < F; ++f) {
                double g = 0, u = 0;
                for (int j = 0; j < d; ++j) {
                    g += L->w_gate[f * d + j] * n[t * d + j];
                    u += L->w_up[f * d + j] * n[t * d + j];
                }
                a[f] = g / (1 + exp(-g)) * u;
            }
            for (int j = 0; j < d; ++j)
                for (int f = 0; f < F; ++f)
                    x[t * d + j] += L->w_down[j * F + f] * a[f];
        }
    }
    NORM(m->norm);
#undef NORM
    for (int t = 0; t < T; ++t)
        for (int w = 0; w < c->vocab; ++w) {
            logits[t * c->vocab + w] = 0;
            for (int j = 0; j < d; ++j)
                logits[t * c->vocab + w] += m->lm_head[w * d + j] * n[t * d + j];
        }
    free(x), free(n), free(q), free(k), free(v), free(o), free(p), free(a);
}

static const kb_llama_config small = {.d_model = 16, .d_ff = 24, .layers = 2, .heads = 4, .kv_heads = 2,
                                      .head_dim = 4, .vocab = 11, .max_pos = 64, .tied = 0, .eps = 1e-5,
                                      .rope_theta = 500};

static void test_against_plain(int tied)
{
    enum { T = 7 };
    kb_llama_config cfg = small;
    cfg.tied = tied;
    kb_llama_model m;
    CHECK(kb_llama_init_random(&m, &cfg, 3) == 0);
    CHECK(m.cfg.tied == tied && (m.lm_head == m.embed) == tied);
    const int ids[T] = {3, 1, 4, 1, 5, 9, 2};
    double want[T * 11];
    float got[T * 11], wantf[T * 11], last[11];
    plain_forward(&m, ids, T, want);
    for (int i = 0; i < T * 11; ++i)
        wantf[i] = (float)want[i];
    kb_llama_cache c;
    CHECK(kb_llama_cache_init(&c, &m.cfg, T) == 0);
    CHECK(kb_llama_forward(&m, &c, ids, T, last, got) == 0);
    CHECK(c.len == T);
    const double e = rel_l2(got, wantf, T * 11);
    if (!(e < 1e-7))
        fprintf(stderr, "tied %d: reference vs plain forward: rel L2 %.3e\n", tied, e);
    CHECK(e < 1e-7);
    CHECK(memcmp(last, got + (T - 1) * 11, sizeof last) == 0);
    kb_llama_cache_free(&c);
    kb_llama_free(&m);
}

/* ---- the KV cache ------------------------------------------------------------------------- */

/* Prefill over a prompt, then greedy decode steps; at each step the last
 * position's logits must equal those of a fresh forward over the whole
 * sequence so far. */
static void test_cache(void)
{
    enum { T = 5, STEPS = 8, V = 11 };
    kb_llama_model m;
    CHECK(kb_llama_init_random(&m, &small, 5) == 0);
    int seq[T + STEPS] = {7, 0, 10, 2, 2};
    float step[V], full[V];
    kb_llama_cache c, f;
    CHECK(kb_llama_cache_init(&c, &m.cfg, T + STEPS) == 0);
    CHECK(kb_llama_forward(&m, &c, seq, T, step, NULL) == 0);
    double worst = 0;
    for (int s = 0; s < STEPS; ++s) {
        const int n = T + s;
        CHECK(kb_llama_cache_init(&f, &m.cfg, n) == 0);
        CHECK(kb_llama_forward(&m, &f, seq, n, full, NULL) == 0);
        const double e = rel_l2(step, full, V);
        worst = e > worst ? e : worst;
        kb_llama_cache_free(&f);
        seq[n] = kb_llama_argmax(step, V);
        CHECK(kb_llama_forward(&m, &c, &seq[n], 1, step, NULL) == 0);
        CHECK(c.len == n + 1);
    }
    if (!(worst <= 1e-12))
        fprintf(stderr, "KV cache vs full recompute: rel L2 %.3e\n", worst);
    CHECK(worst <= 1e-12);
    /* A full cache refuses more, and an id outside the vocabulary is
     * refused; neither changes the cache. */
    CHECK(kb_llama_forward(&m, &c, seq, 1, step, NULL) != 0 && c.len == T + STEPS);
    kb_llama_cache_free(&c);
    CHECK(kb_llama_cache_init(&c, &m.cfg, 4) == 0);
    const int bad[2] = {1, V};
    CHECK(kb_llama_forward(&m, &c, bad, 2, step, NULL) != 0 && c.len == 0);
    CHECK(kb_llama_forward(&m, &c, seq, 0, step, NULL) != 0 && c.len == 0);
    /* Chunks: 3 tokens, then 1, then 0..., equal one prefill of 4. */
    CHECK(kb_llama_forward(&m, &c, seq, 3, NULL, NULL) == 0);
    CHECK(kb_llama_forward(&m, &c, seq + 3, 1, step, NULL) == 0);
    CHECK(kb_llama_cache_init(&f, &m.cfg, 4) == 0);
    CHECK(kb_llama_forward(&m, &f, seq, 4, full, NULL) == 0);
    CHECK(rel_l2(step, full, V) <= 1e-12);
    kb_llama_cache_free(&f);
    kb_llama_cache_free(&c);
    /* A cache longer than max_position_embeddings is refused. */
    CHECK(kb_llama_cache_init(&c, &m.cfg, m.cfg.max_pos + 1) != 0);
    kb_llama_free(&m);
}

/* ---- GQA ---------------------------------------------------------------------------------- */

/* A GQA model equals the MHA model (kv_heads = heads) whose K and V heads
 * are the GQA ones repeated, as HF's repeat_kv repeats them. */
static void test_gqa(void)
{
    enum { T = 6, V = 11 };
    kb_llama_model g, h;
    kb_llama_config mha = small;
    mha.kv_heads = mha.heads;
    CHECK(kb_llama_init_random(&g, &small, 9) == 0);
    CHECK(kb_llama_init_random(&h, &mha, 9) == 0);
    const int d = small.d_model, hd = small.head_dim, rep = small.heads / small.kv_heads;
    /* Copy every weight over, then K and V head by head. */
    memcpy((float *)h.embed, g.embed, sizeof(float) * (size_t)V * d);
    memcpy((float *)h.lm_head, g.lm_head, sizeof(float) * (size_t)V * d);
    memcpy((float *)h.norm, g.norm, sizeof(float) * (size_t)d);
    for (int l = 0; l < small.layers; ++l) {
        const kb_llama_layer *a = &g.layers[l], *b = &h.layers[l];
        memcpy((float *)b->attn_norm, a->attn_norm, sizeof(float) * d);
        memcpy((float *)b->mlp_norm, a->mlp_norm, sizeof(float) * d);
        memcpy((float *)b->wq, a->wq, sizeof(float) * small.heads * hd * d);
        memcpy((float *)b->wo, a->wo, sizeof(float) * small.heads * hd * d);
        memcpy((float *)b->w_gate, a->w_gate, sizeof(float) * small.d_ff * d);
        memcpy((float *)b->w_up, a->w_up, sizeof(float) * small.d_ff * d);
        memcpy((float *)b->w_down, a->w_down, sizeof(float) * small.d_ff * d);
        for (int head = 0; head < small.heads; ++head) {
            memcpy((float *)b->wk + head * hd * d, a->wk + head / rep * hd * d, sizeof(float) * hd * d);
            memcpy((float *)b->wv + head * hd * d, a->wv + head / rep * hd * d, sizeof(float) * hd * d);
        }
    }
    const int ids[T] = {1, 2, 3, 5, 8, 10};
    float lg[T * V], lh[T * V];
    kb_llama_cache cg, ch;
    CHECK(kb_llama_cache_init(&cg, &g.cfg, T) == 0 && kb_llama_cache_init(&ch, &h.cfg, T) == 0);
    CHECK(kb_llama_forward(&g, &cg, ids, T, NULL, lg) == 0 && kb_llama_forward(&h, &ch, ids, T, NULL, lh) == 0);
    CHECK(memcmp(lg, lh, sizeof lg) == 0);
    kb_llama_cache_free(&cg);
    kb_llama_cache_free(&ch);
    kb_llama_free(&g);
    kb_llama_free(&h);
}

/* ---- threads -------------------------------------------------------------------------------- */

/* Large enough that the products and attention go parallel: the same bits
 * on one thread and on several. */
static void test_threads(void)
{
    enum { T = 40 };
    const kb_llama_config cfg = {.d_model = 128, .d_ff = 352, .layers = 1, .heads = 8, .kv_heads = 2,
                                 .head_dim = 16, .vocab = 3000, .max_pos = 64, .eps = 1e-6, .rope_theta = 10000};
    kb_llama_model m;
    CHECK(kb_llama_init_random(&m, &cfg, 1) == 0);
    int ids[T];
    for (int i = 0; i < T; ++i)
        ids[i] = (i * 977) % cfg.vocab;
    float *a = malloc(sizeof(float) * cfg.vocab), *b = malloc(sizeof(float) * cfg.vocab);
    const int threads = omp_get_max_threads();
    for (int k = 0; k < 2; ++k) {
        kb_llama_cache c;
        omp_set_num_threads(k ? (threads > 1 ? threads : 4) : 1);
        CHECK(kb_llama_cache_init(&c, &m.cfg, T) == 0);
        CHECK(kb_llama_forward(&m, &c, ids, T - 1, NULL, NULL) == 0);
        CHECK(kb_llama_forward(&m, &c, ids + T - 1, 1, k ? b : a, NULL) == 0);
        kb_llama_cache_free(&c);
    }
    omp_set_num_threads(threads);
    CHECK(memcmp(a, b, sizeof(float) * cfg.vocab) == 0);
    free(a);
    free(b);
    kb_llama_free(&m);
}

int main(void)
{
    test_rope();
    test_rope_scaling();
    test_by_hand();
    test_against_plain(0);
    test_against_plain(1);
    test_cache();
    test_gqa();
    test_threads();
    return CHECK_DONE();
}
