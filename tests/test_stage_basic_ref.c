/* The `basic` stage's C reference (reference/basic.h): a case worked by
 * hand (n = 2, one head, two tokens, one layer), agreement with a naive
 * token-by-token formulation written here from the document, causality,
 * and that each head's dE and the mask matter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "reference/basic.h"
#include "tests/check.h"

/* ---- the hand-worked case ---------------------------------------------------------- */

/* E = I (token 0 = e0, token 1 = e1), W_q = W_k = W_v_down = I, W_v_up = 2I:
 *   A = K^T Q = I; column 0 sees key 0 only: [1, 0]; column 1 sees keys
 *   0, 1 with scores 0, 1: [s, 1 - s], s = 1/(1 + e).
 *   E + V A_norm: column 0 = (3, 0), column 1 = (2s, 3 - 2s).
 *   H = ReLU(W_up E + b_up), W_up = [[1, -1], [-1, 0]], b_up = (0, 1):
 *     column 0: (3, -2) -> (3, 0); column 1: (4s - 3, 1 - 2s) -> (0, 1 - 2s).
 *   E' = W_down H + b_down, W_down = diag(1, 2), b_down = (0.5, -0.5):
 *     column 0: (3.5, -0.5); column 1: (0.5, 1.5 - 4s).
 *   Tied: logits of position p are E'[:, p] against the rows e0, e1. */
static void hand_worked(void)
{
    static const float embed[] = {1, 0, 0, 1}, eye[] = {1, 0, 0, 1}, up2[] = {2, 0, 0, 2};
    static const float w_up[] = {1, -1, -1, 0}, b_up[] = {0, 1}, w_down[] = {1, 0, 0, 2}, b_down[] = {0.5f, -0.5f};
    kb_basic_layer L = {eye, eye, eye, up2, w_up, b_up, w_down, b_down};
    kb_basic_model m = {{1, 2, 1, 2, 2, 1}, embed, embed, &L, NULL};
    const int ids[] = {0, 1};
    double logits[4];
    CHECK(kb_basic_forward(&m, ids, 2, logits) == 0);
    const double s = 1 / (1 + exp(1.0)), want[] = {3.5, -0.5, 0.5, 1.5 - 4 * s};
    for (int i = 0; i < 4; ++i)
        CHECK_NEAR(logits[i], want[i], 1e-12);
}

/* ---- a naive formulation: one token, one head at a time ------------------------------ */

/* y[r] = sum_k W[r][k] x[k], W [rows, inner]. */
static void matvec(const float *W, int rows, int inner, const double *x, double *y)
{
    for (int r = 0; r < rows; ++r) {
        y[r] = 0;
        for (int k = 0; k < inner; ++k)
            y[r] += W[r * inner + k] * x[k];
    }
}

/* One layer's attention over token vectors e[t][n] into out[t][n]: for each
 * query i, the keys it may see (j <= i, or all without the mask), their
 * softmax-weighted values; each head's part added onto e[i]. */
static void naive_attention(const kb_basic_config *c, const kb_basic_layer *L, double (*e)[64], int t, int masked,
                            double (*out)[64])
{
    const int n = c->d_model, l = n / c->heads;
    for (int i = 0; i < t; ++i) {
        memcpy(out[i], e[i], sizeof out[i]);
        for (int h = 0; h < c->heads; ++h) {
            double q[64], k[64], low[64], v[64], w[64], top = -INFINITY, sum = 0;
            const int seen = masked ? i + 1 : t;
            matvec(L->wq + h * l * n, l, n, e[i], q);
            for (int j = 0; j < seen; ++j) {
                matvec(L->wk + h * l * n, l, n, e[j], k);
                w[j] = 0;
                for (int a = 0; a < l; ++a)
                    w[j] += k[a] * q[a];
                top = fmax(top, w[j]);
            }
            for (int j = 0; j < seen; ++j)
                sum += w[j] = exp(w[j] - top);
            for (int j = 0; j < seen; ++j) {
                matvec(L->wv_down + h * l * n, l, n, e[j], low);
                matvec(L->wv_up + h * n * l, n, l, low, v);
                for (int r = 0; r < n; ++r)
                    out[i][r] += w[j] / sum * v[r];
            }
        }
    }
}

static void naive_mlp(const kb_basic_config *c, const kb_basic_layer *L, const double *x, double *y)
{
    double h[64];
    matvec(L->w_up, c->d_ff, c->d_model, x, h);
    for (int r = 0; r < c->d_ff; ++r)
        h[r] = fmax(h[r] + L->b_up[r], 0.0);
    matvec(L->w_down, c->d_model, c->d_ff, h, y);
    for (int r = 0; r < c->d_model; ++r)
        y[r] += L->b_down[r];
}

/* logits[p * vocab + v], sizes up to 64. */
static void naive_forward(const kb_basic_model *m, const int *ids, int t, int masked, double *logits)
{
    const kb_basic_config *c = &m->cfg;
    const int n = c->d_model;
    double e[64][64], mixed[64][64];
    for (int i = 0; i < t; ++i)
        for (int r = 0; r < n; ++r)
            e[i][r] = m->embed[ids[i] * n + r];
    for (int layer = 0; layer < c->layers; ++layer) {
        naive_attention(c, &m->layers[layer], e, t, masked, mixed);
        for (int i = 0; i < t; ++i)
            naive_mlp(c, &m->layers[layer], mixed[i], e[i]);
    }
    for (int i = 0; i < t; ++i)
        matvec(m->w_out, c->vocab, n, e[i], logits + i * c->vocab);
}

static double rel_diff(const double *a, const double *b, int n)
{
    double e = 0, r = 0;
    for (int i = 0; i < n; ++i)
        e += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
    return sqrt(e / r);
}

#define T 7

static const kb_basic_config small[] = {
    {2, 12, 3, 10, 17, 1},
    {3, 9, 1, 5, 11, 0},
    {1, 8, 4, 16, 9, 0},
};

static void against_naive(const kb_basic_config *c, const int *ids)
{
    kb_basic_model m;
    double ref[T * 17], naive[T * 17];
    CHECK(kb_basic_init_random(&m, c, 11) == 0);
    CHECK(kb_basic_forward(&m, ids, T, ref) == 0);
    naive_forward(&m, ids, T, 1, naive);
    CHECK(rel_diff(ref, naive, T * c->vocab) < 1e-12);
    /* Without the mask, earlier tokens see later ones: different logits. */
    naive_forward(&m, ids, T, 0, naive);
    CHECK(rel_diff(ref, naive, T * c->vocab) > 1e-6);
    kb_basic_free(&m);
}

/* Changing the last token leaves every earlier position's logits as they were. */
static void causal(const kb_basic_config *c, const int *ids)
{
    kb_basic_model m;
    int other[T];
    double a[T * 17], b[T * 17];
    memcpy(other, ids, sizeof other);
    other[T - 1] = (ids[T - 1] + 1) % c->vocab;
    CHECK(kb_basic_init_random(&m, c, 5) == 0);
    CHECK(kb_basic_forward(&m, ids, T, a) == 0);
    CHECK(kb_basic_forward(&m, other, T, b) == 0);
    CHECK(memcmp(a, b, sizeof(double) * (T - 1) * c->vocab) == 0);
    CHECK(rel_diff(a + (T - 1) * c->vocab, b + (T - 1) * c->vocab, c->vocab) > 1e-6);
    kb_basic_free(&m);
}

/* Zeroing one head's W_v_up drops its dE: the logits move. */
static void every_head_counts(const kb_basic_config *c, const int *ids)
{
    const int n = c->d_model, l = n / c->heads;
    for (int h = 0; h < c->heads; ++h) {
        kb_basic_model m;
        double a[T * 17], b[T * 17];
        CHECK(kb_basic_init_random(&m, c, 9) == 0);
        CHECK(kb_basic_forward(&m, ids, T, a) == 0);
        memset((float *)m.layers[0].wv_up + h * n * l, 0, sizeof(float) * n * l);
        CHECK(kb_basic_forward(&m, ids, T, b) == 0);
        CHECK(rel_diff(a, b, T * c->vocab) > 1e-6);
        kb_basic_free(&m);
    }
}

/* The same seed gives the same weights; the count covers every tensor. */
static void seeded(void)
{
    const kb_basic_config c = small[0];
    kb_basic_model a, b;
    CHECK(kb_basic_init_random(&a, &c, 3) == 0);
    CHECK(kb_basic_init_random(&b, &c, 3) == 0);
    const int64_t count = kb_basic_weight_count(&c);
    CHECK(memcmp(a.storage, b.storage, sizeof(float) * (size_t)count) == 0);
    CHECK(a.w_out == a.embed);
    CHECK(a.layers[c.layers - 1].b_down + c.d_model == a.storage + count);
    kb_basic_free(&a);
    kb_basic_free(&b);
}

int main(void)
{
    const int ids[T] = {3, 0, 8, 3, 1, 5, 2};
    hand_worked();
    seeded();
    for (size_t i = 0; i < sizeof small / sizeof small[0]; ++i) {
        against_naive(&small[i], ids);
        causal(&small[i], ids);
        every_head_counts(&small[i], ids);
    }
    return CHECK_DONE();
}
