/* The `basic` stage's model: seeded weights and the C reference forward
 * (reference/basic.h), in the document's column-vector maths: every
 * activation is a row-major [rows, t] matrix in double whose column i
 * belongs to token i. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kbench.h"
#include "reference/basic.h"

/* ---- weights -------------------------------------------------------------------- */

static int64_t layer_count(const kb_basic_config *c)
{
    const int64_t n = c->d_model, ff = c->d_ff;
    return 4 * n * n /* four [l, n] or [n, l] maps per head, l = n / heads */ + 2 * n * ff + ff + n;
}

int64_t kb_basic_weight_count(const kb_basic_config *c)
{
    const int64_t table = (int64_t)c->vocab * c->d_model;
    return table * (c->tied ? 1 : 2) + c->layers * layer_count(c);
}

typedef struct {
    float *next;
    uint64_t seed, k;
} filler;

/* The next n weights: seeded uniform in +-gain/sqrt(fan_in), each tensor
 * from its own stream of the seed. */
static const float *take(filler *f, int64_t n, int fan_in, double gain)
{
    float *p = f->next;
    kb_fill_uniform(p, n, f->seed * 1000003u + f->k++);
    const float scale = (float)(gain / sqrt((double)fan_in));
    for (int64_t i = 0; i < n; ++i)
        p[i] *= scale;
    f->next += n;
    return p;
}

/* Gains: reference/basic.h says why each. */
static void fill_layer(filler *f, const kb_basic_config *c, kb_basic_layer *L)
{
    const int n = c->d_model, l = n / c->heads, ff = c->d_ff;
    const int64_t per_head = (int64_t)c->heads * l * n;
    L->wq = take(f, per_head, n, 1.0);
    L->wk = take(f, per_head, n, 1.0);
    L->wv_down = take(f, per_head, n, 0.5);
    L->wv_up = take(f, per_head, l, 0.5);
    L->w_up = take(f, (int64_t)ff * n, n, sqrt(6.0));
    L->b_up = take(f, ff, n, 1.0);
    L->w_down = take(f, (int64_t)n * ff, ff, sqrt(3.0));
    L->b_down = take(f, n, ff, 1.0);
}

int kb_basic_init_random(kb_basic_model *m, const kb_basic_config *c, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    const int64_t count = kb_basic_weight_count(c);
    m->storage = (uint64_t)count > SIZE_MAX / sizeof(float) ? NULL : malloc(sizeof(float) * (size_t)count);
    m->layers = calloc((size_t)c->layers, sizeof *m->layers);
    if (!m->storage || !m->layers) {
        kb_basic_free(m);
        return -1;
    }
    filler f = {m->storage, seed, 0};
    const int64_t table = (int64_t)c->vocab * c->d_model;
    m->embed = take(&f, table, 1, 1.0); /* uniform in [-1, 1] */
    m->w_out = c->tied ? m->embed : take(&f, table, c->d_model, 1.0);
    for (int i = 0; i < c->layers; ++i)
        fill_layer(&f, c, &m->layers[i]);
    return 0;
}

void kb_basic_free(kb_basic_model *m)
{
    free(m->storage);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

/* ---- the forward -------------------------------------------------------------------- */

/* A thread team only where the work pays for its start and barrier (tests'
 * tiny models run many such loops). */
#define WORTH_THREADS(macs) ((macs) > (1 << 16))

/* Y [rows, t] = W [rows, inner] X [inner, t]. */
static void times(const float *W, int rows, int inner, const double *X, int t, double *Y)
{
#pragma omp parallel for schedule(static) if (WORTH_THREADS((int64_t)rows * inner * t))
    for (int r = 0; r < rows; ++r) {
        double *y = Y + (int64_t)r * t;
        memset(y, 0, sizeof(double) * (size_t)t);
        for (int k = 0; k < inner; ++k) {
            const double w = W[(int64_t)r * inner + k];
            for (int i = 0; i < t; ++i)
                y[i] += w * X[(int64_t)k * t + i];
        }
    }
}

/* A_norm [t, t] = colwise_softmax(mask(K^T Q)), factor 1: column i is
 * query i's distribution over keys j <= i; masked keys get 0. */
static void attention_weights(const double *K, const double *Q, int l, int t, double *A)
{
#pragma omp parallel for schedule(static) if (WORTH_THREADS((int64_t)t * t * l))
    for (int i = 0; i < t; ++i) {
        double top = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) {
            double s = 0;
            for (int c = 0; c < l; ++c)
                s += K[(int64_t)c * t + j] * Q[(int64_t)c * t + i];
            A[(int64_t)j * t + i] = s;
            top = fmax(top, s);
        }
        for (int j = 0; j <= i; ++j)
            sum += A[(int64_t)j * t + i] = exp(A[(int64_t)j * t + i] - top);
        for (int j = 0; j < t; ++j)
            A[(int64_t)j * t + i] = j <= i ? A[(int64_t)j * t + i] / sum : 0.0;
    }
}

/* E += V A_norm, V [n, t]. */
static void add_values(const double *V, const double *A, int n, int t, double *E)
{
#pragma omp parallel for schedule(static) if (WORTH_THREADS((int64_t)n * t * t))
    for (int r = 0; r < n; ++r)
        for (int i = 0; i < t; ++i) {
            double s = 0;
            for (int j = 0; j <= i; ++j) /* A_norm[j][i] = 0 past i */
                s += V[(int64_t)r * t + j] * A[(int64_t)j * t + i];
            E[(int64_t)r * t + i] += s;
        }
}

typedef struct {
    double *q, *k, *vd, *v, *a, *h;
} scratch;

/* E = E0 + sum over heads of V_h A_norm_h, every head reading E0. */
static void attention(const kb_basic_config *c, const kb_basic_layer *L, const double *E0, int t, double *E,
                      const scratch *s)
{
    const int n = c->d_model, l = n / c->heads;
    const int64_t block = (int64_t)l * n;
    memcpy(E, E0, sizeof(double) * (size_t)n * (size_t)t);
    for (int h = 0; h < c->heads; ++h) {
        times(L->wq + h * block, l, n, E0, t, s->q);
        times(L->wk + h * block, l, n, E0, t, s->k);
        times(L->wv_down + h * block, l, n, E0, t, s->vd);
        times(L->wv_up + h * block, n, l, s->vd, t, s->v);
        attention_weights(s->k, s->q, l, t, s->a);
        add_values(s->v, s->a, n, t, E);
    }
}

/* Y [rows, t] += b, column by column, then ReLU when relu. */
static void bias(double *Y, const float *b, int rows, int t, int relu)
{
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < t; ++i) {
            const double y = Y[(int64_t)r * t + i] + b[r];
            Y[(int64_t)r * t + i] = relu && y < 0 ? 0.0 : y;
        }
}

/* E' = W_down ReLU(W_up E + b_up) + b_down. */
static void mlp(const kb_basic_config *c, const kb_basic_layer *L, const double *E, int t, double *out,
                const scratch *s)
{
    times(L->w_up, c->d_ff, c->d_model, E, t, s->h);
    bias(s->h, L->b_up, c->d_ff, t, 1);
    times(L->w_down, c->d_model, c->d_ff, s->h, t, out);
    bias(out, L->b_down, c->d_model, t, 0);
}

/* logits[p][v] = W_out[v] . E[:, p]: position-major, as the GPU writes them. */
static void lm_head(const kb_basic_model *m, const double *E, int t, double *logits)
{
    const int n = m->cfg.d_model, vocab = m->cfg.vocab;
#pragma omp parallel for schedule(static) if (WORTH_THREADS((int64_t)vocab * t * n))
    for (int v = 0; v < vocab; ++v)
        for (int p = 0; p < t; ++p) {
            double s = 0;
            for (int k = 0; k < n; ++k)
                s += (double)m->w_out[(int64_t)v * n + k] * E[(int64_t)k * t + p];
            logits[(int64_t)p * vocab + v] = s;
        }
}

int kb_basic_forward(const kb_basic_model *m, const int *ids, int t, double *logits)
{
    const kb_basic_config *c = &m->cfg;
    const int64_t n = c->d_model, l = n / c->heads, nt = n * t;
    const int64_t lt = l * t, tt = (int64_t)t * t, ht = (int64_t)c->d_ff * t;
    double *E = malloc(sizeof(double) * (size_t)(3 * nt + 3 * lt + tt + ht));
    if (!E)
        return -1;
    double *E2 = E + nt;
    scratch s = {.q = E2 + nt};
    s.k = s.q + lt, s.vd = s.k + lt, s.v = s.vd + lt, s.a = s.v + nt, s.h = s.a + tt;
    for (int i = 0; i < t; ++i)
        for (int k = 0; k < n; ++k)
            E[(int64_t)k * t + i] = m->embed[(int64_t)ids[i] * n + k];
    for (int i = 0; i < c->layers; ++i) {
        attention(c, &m->layers[i], E, t, E2, &s);
        mlp(c, &m->layers[i], E2, t, E, &s);
    }
    lm_head(m, E, t, logits);
    free(E);
    return 0;
}
