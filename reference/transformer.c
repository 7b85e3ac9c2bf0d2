/* The transformer's C reference forward: plain C11, every activation in
 * double, one sequence (batch element) at a time, so a check can run a
 * sample of the batch.  Layouts follow PyTorch (see
 * model/transformer.h): a linear layer is y = x W^T + b. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "model/transformer.h"
#include "reference/attend_row.h"

/* y[n x out] = x[n x in] W^T + b, W is [out x in].  Four partial sums
 * break the add's latency chain; rows go to OpenMP threads, which change
 * nothing in the arithmetic of any one output. */
static void linear(const double *x, int n, int in, const float *W, const float *b, int out, double *y)
{
#pragma omp parallel for schedule(static) if ((int64_t)n * out * in > (1 << 18))
    for (int i = 0; i < n; ++i) {
        const double *xi = x + (int64_t)i * in;
        for (int o = 0; o < out; ++o) {
            const float *w = W + (int64_t)o * in;
            double acc[4] = {0, 0, 0, 0};
            int k = 0;
            for (; k + 4 <= in; k += 4)
                for (int u = 0; u < 4; ++u)
                    acc[u] += xi[k + u] * w[k + u];
            for (; k < in; ++k)
                acc[0] += xi[k] * w[k];
            y[(int64_t)i * out + o] = (b ? b[o] : 0.0) + (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
    }
}

/* The scratch of one forward, allocated once and checked: delta and hidden
 * serve both stacks; attention's q, k, v and o rows; a row of
 * probabilities for each thread. */
typedef struct {
    double *delta, *hidden, *qkvo, *probs;
    int keys; /* each thread's row of probs */
} scratch;

/* Multi-head attention of nq query rows over nk key rows; out is nq x d. */
static void attention(const kb_tf_attn *a, int heads, int d, const double *xq, int nq, const double *xkv,
                      int nk, int causal, const scratch *s, double *out)
{
    const int dh = d / heads;
    double *q = s->qkvo;
    double *k = q + (size_t)nq * d, *v = k + (size_t)nk * d, *o = v + (size_t)nk * d;
    linear(xq, nq, d, a->in_w, a->in_b, d, q);
    linear(xkv, nk, d, a->in_w + (int64_t)d * d, a->in_b + d, d, k);
    linear(xkv, nk, d, a->in_w + 2 * (int64_t)d * d, a->in_b + 2 * d, d, v);
#pragma omp parallel if ((int64_t)nq * nk * d > (1 << 18))
    {
        double *p = s->probs + (size_t)omp_get_thread_num() * s->keys;
#pragma omp for schedule(static) collapse(2)
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < nq; ++i)
                kb_ref_attend_row(q + (int64_t)i * d + h * dh, k + h * dh, v + h * dh, causal ? i + 1 : nk, d, dh,
                           1.0 / sqrt((double)dh), p, o + (int64_t)i * d + h * dh);
    }
    linear(o, nq, d, a->out_w, a->out_b, d, out);
}

/* x = LayerNorm(x + delta), row by row (biased variance). */
static void add_norm(double *x, const double *delta, int n, int d, const kb_tf_norm *norm, double eps)
{
    for (int i = 0; i < n; ++i) {
        double *row = x + (int64_t)i * d, mean = 0, var = 0;
        for (int c = 0; c < d; ++c)
            mean += row[c] += delta ? delta[(int64_t)i * d + c] : 0.0;
        mean /= d;
        for (int c = 0; c < d; ++c)
            var += (row[c] - mean) * (row[c] - mean);
        double rstd = 1.0 / sqrt(var / d + eps);
        for (int c = 0; c < d; ++c)
            row[c] = (row[c] - mean) * rstd * norm->w[c] + norm->b[c];
    }
}

static void ffn(const kb_tf_layer *l, int n, int d, int ff, const double *x, double *hidden, double *out)
{
    linear(x, n, d, l->w1, l->b1, ff, hidden);
    for (int64_t i = 0; i < (int64_t)n * ff; ++i)
        hidden[i] = fmax(hidden[i], 0.0);
    linear(hidden, n, ff, l->w2, l->b2, d, out);
}

/* The encoder stack on one sequence, in place: x is Ts x d. */
static void encode(const kb_tf_model *m, int Ts, double *x, const scratch *s)
{
    const kb_tf_config *c = &m->cfg;
    const int d = c->d_model;
    for (int l = 0; l < c->enc_layers; ++l) {
        const kb_tf_layer *L = &m->enc[l];
        attention(&L->self_attn, c->heads, d, x, Ts, x, Ts, c->enc_causal, s, s->delta);
        add_norm(x, s->delta, Ts, d, &L->norm1, c->eps);
        ffn(L, Ts, d, c->d_ff, x, s->hidden, s->delta);
        add_norm(x, s->delta, Ts, d, &L->norm2, c->eps);
    }
}

/* The decoder stack on one sequence, in place: y is Tt x d, mem Ts x d. */
static void decode(const kb_tf_model *m, int Ts, int Tt, const double *mem, double *y, const scratch *s)
{
    const kb_tf_config *c = &m->cfg;
    const int d = c->d_model;
    for (int l = 0; l < c->dec_layers; ++l) {
        const kb_tf_layer *L = &m->dec[l];
        attention(&L->self_attn, c->heads, d, y, Tt, y, Tt, c->causal, s, s->delta);
        add_norm(y, s->delta, Tt, d, &L->norm1, c->eps);
        attention(&L->cross_attn, c->heads, d, y, Tt, mem, Ts, 0, s, s->delta);
        add_norm(y, s->delta, Tt, d, &L->norm2, c->eps);
        ffn(L, Tt, d, c->d_ff, y, s->hidden, s->delta);
        add_norm(y, s->delta, Tt, d, &L->norm3, c->eps);
    }
}

static void widen(const float *src, int64_t n, double *dst)
{
    for (int64_t i = 0; i < n; ++i)
        dst[i] = src[i];
}

/* Doubles for mem (Ts rows), y (Tt rows), delta (T rows), hidden (T x ff),
 * attention's q, k, v and o (4T rows) and the probability rows; -1 when the
 * count overflows. */
static int64_t scratch_doubles(const kb_tf_config *c, int Ts, int Tt, int threads)
{
    const int64_t T = Ts > Tt ? Ts : Tt, rows = (int64_t)Ts + Tt + 5 * T;
    return kb_size_muladd(rows, c->d_model, kb_size_muladd(T, c->d_ff, kb_size_muladd(threads, T, 0)));
}

int kb_tf_reference_seq(const kb_tf_model *m, kb_tf_mode mode, int Ts, int Tt, const float *src,
                        const float *tgt, float *out)
{
    const kb_tf_config *c = &m->cfg;
    const int d = c->d_model, T = Ts > Tt ? Ts : Tt, threads = omp_get_max_threads();
    const int64_t n = scratch_doubles(c, Ts, Tt, threads);
    double *mem = n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double) ? NULL : malloc(sizeof(double) * (size_t)n);
    if (!mem)
        return -1;
    double *y = mem + (size_t)Ts * d;
    scratch s = {.delta = y + (size_t)Tt * d, .keys = T};
    s.hidden = s.delta + (size_t)T * d;
    s.qkvo = s.hidden + (size_t)T * c->d_ff;
    s.probs = s.qkvo + 4 * (size_t)T * d;
    widen(src, (int64_t)Ts * d, mem);
    if (mode != KB_TF_DECODER)
        encode(m, Ts, mem, &s);
    if (mode == KB_TF_SEQ2SEQ)
        add_norm(mem, NULL, Ts, d, &m->enc_norm, c->eps);
    if (mode != KB_TF_ENCODER) {
        widen(tgt, (int64_t)Tt * d, y);
        decode(m, Ts, Tt, mem, y, &s);
    }
    if (mode == KB_TF_SEQ2SEQ)
        add_norm(y, NULL, Tt, d, &m->dec_norm, c->eps);
    const double *result = mode == KB_TF_ENCODER ? mem : y;
    for (int64_t i = 0; i < (int64_t)(mode == KB_TF_ENCODER ? Ts : Tt) * d; ++i)
        out[i] = (float)result[i];
    free(mem);
    return 0;
}

int kb_tf_reference(const kb_tf_model *m, int B, int Ts, int Tt, const float *src, const float *tgt,
                    float *out)
{
    const int64_t d = m->cfg.d_model;
    for (int64_t b = 0; b < B; ++b)
        if (kb_tf_reference_seq(m, KB_TF_SEQ2SEQ, Ts, Tt, src + b * Ts * d, tgt + b * Tt * d, out + b * Tt * d) != 0)
            return -1;
    return 0;
}
