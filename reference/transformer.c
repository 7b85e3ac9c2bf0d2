/* The transformer's C reference forward: plain C11, every activation in
 * double, one batch element at a time.  Layouts follow PyTorch (see
 * model/transformer.h): a linear layer is y = x W^T + b. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/transformer.h"

/* y[n x out] = x[n x in] W^T + b, W is [out x in]. */
static void linear(const double *x, int n, int in, const float *W, const float *b, int out, double *y)
{
    for (int i = 0; i < n; ++i)
        for (int o = 0; o < out; ++o) {
            double acc = b ? b[o] : 0.0;
            for (int k = 0; k < in; ++k)
                acc += x[(int64_t)i * in + k] * W[(int64_t)o * in + k];
            y[(int64_t)i * out + o] = acc;
        }
}

/* One head's softmax(q K^T * scale) V for query row i, into o (dh values);
 * q, K and V rows are strided by d (the heads are interleaved). */
static void attend_row(const double *q, const double *K, const double *V, int keys, int d, int dh,
                       double scale, double *p, double *o)
{
    double max = -INFINITY, sum = 0;
    for (int j = 0; j < keys; ++j) {
        double s = 0;
        for (int c = 0; c < dh; ++c)
            s += q[c] * K[(int64_t)j * d + c];
        p[j] = s * scale;
        max = fmax(max, p[j]);
    }
    for (int j = 0; j < keys; ++j)
        sum += p[j] = exp(p[j] - max);
    for (int c = 0; c < dh; ++c) {
        double acc = 0;
        for (int j = 0; j < keys; ++j)
            acc += p[j] * V[(int64_t)j * d + c];
        o[c] = acc / sum;
    }
}

/* Multi-head attention of nq query rows over nk key rows; out is nq x d. */
static void attention(const kb_tf_attn *a, int heads, int d, const double *xq, int nq, const double *xkv,
                      int nk, int causal, double *out)
{
    const int dh = d / heads;
    double *q = malloc(sizeof(double) * ((size_t)nq * d * 2 + (size_t)nk * d * 2 + nk));
    double *k = q + (size_t)nq * d, *v = k + (size_t)nk * d, *o = v + (size_t)nk * d, *p = o + (size_t)nq * d;
    linear(xq, nq, d, a->in_w, a->in_b, d, q);
    linear(xkv, nk, d, a->in_w + (int64_t)d * d, a->in_b + d, d, k);
    linear(xkv, nk, d, a->in_w + 2 * (int64_t)d * d, a->in_b + 2 * d, d, v);
    for (int h = 0; h < heads; ++h)
        for (int i = 0; i < nq; ++i)
            attend_row(q + (int64_t)i * d + h * dh, k + h * dh, v + h * dh, causal ? i + 1 : nk, d, dh,
                       1.0 / sqrt((double)dh), p, o + (int64_t)i * d + h * dh);
    linear(o, nq, d, a->out_w, a->out_b, d, out);
    free(q);
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

void kb_tf_reference(const kb_tf_model *m, int B, int Ts, int Tt, const float *src, const float *tgt,
                     float *out)
{
    const kb_tf_config *c = &m->cfg;
    const int d = c->d_model, T = Ts > Tt ? Ts : Tt;
    /* mem: Ts rows, y: Tt rows; delta and hidden serve both stacks: T rows. */
    double *mem = malloc(sizeof(double) * ((size_t)Ts * d + (size_t)Tt * d + (size_t)T * d + (size_t)T * c->d_ff));
    double *y = mem + (size_t)Ts * d, *delta = y + (size_t)Tt * d, *hidden = delta + (size_t)T * d;
    for (int b = 0; b < B; ++b) {
        for (int64_t i = 0; i < (int64_t)Ts * d; ++i)
            mem[i] = src[(int64_t)b * Ts * d + i];
        for (int64_t i = 0; i < (int64_t)Tt * d; ++i)
            y[i] = tgt[(int64_t)b * Tt * d + i];
        for (int l = 0; l < c->enc_layers; ++l) {
            const kb_tf_layer *L = &m->enc[l];
            attention(&L->self_attn, c->heads, d, mem, Ts, mem, Ts, 0, delta);
            add_norm(mem, delta, Ts, d, &L->norm1, c->eps);
            ffn(L, Ts, d, c->d_ff, mem, hidden, delta);
            add_norm(mem, delta, Ts, d, &L->norm2, c->eps);
        }
        add_norm(mem, NULL, Ts, d, &m->enc_norm, c->eps);
        for (int l = 0; l < c->dec_layers; ++l) {
            const kb_tf_layer *L = &m->dec[l];
            attention(&L->self_attn, c->heads, d, y, Tt, y, Tt, c->causal, delta);
            add_norm(y, delta, Tt, d, &L->norm1, c->eps);
            attention(&L->cross_attn, c->heads, d, y, Tt, mem, Ts, 0, delta);
            add_norm(y, delta, Tt, d, &L->norm2, c->eps);
            ffn(L, Tt, d, c->d_ff, y, hidden, delta);
            add_norm(y, delta, Tt, d, &L->norm3, c->eps);
        }
        add_norm(y, NULL, Tt, d, &m->dec_norm, c->eps);
        for (int64_t i = 0; i < (int64_t)Tt * d; ++i)
            out[(int64_t)b * Tt * d + i] = (float)y[i];
    }
    free(mem);
}
