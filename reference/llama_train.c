/* The Llama-style model's loss and gradients in double (reference/
 * llama_train.h): one forward over B sequences that keeps every
 * activation, the loss and its logits' gradient row by row, then the
 * blocks' backward in reverse.  Plain C11, one thread: the configs it
 * checks are small, and a fixed order keeps it exact to itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/llama.h"
#include "model/transformer.h"
#include "reference/llama_train.h"

/* ---- the gradients' storage, laid out as the model's weights ------------------------- */

int kb_llama_grads_init(kb_llama_grads *g, const kb_llama_config *c)
{
    memset(g, 0, sizeof *g);
    const int64_t n = kb_llama_weight_count(c);
    if (n < 0)
        return -1;
    g->storage = calloc((size_t)n, sizeof(double));
    g->layers = calloc((size_t)c->layers, sizeof *g->layers);
    if (!g->storage || !g->layers) {
        kb_llama_grads_free(g);
        return -1;
    }
    const int64_t d = c->d_model, qd = (int64_t)c->heads * c->head_dim, kvd = (int64_t)c->kv_heads * c->head_dim;
    double *p = g->storage;
    g->cfg = *c;
    g->embed = p, p += (int64_t)c->vocab * d;
    for (int l = 0; l < c->layers; ++l) {
        kb_llama_layer_grad *L = &g->layers[l];
        L->attn_norm = p, p += d;
        L->wq = p, p += qd * d;
        L->wk = p, p += kvd * d;
        L->wv = p, p += kvd * d;
        L->wo = p, p += d * qd;
        L->mlp_norm = p, p += d;
        L->w_gate = p, p += (int64_t)c->d_ff * d;
        L->w_up = p, p += (int64_t)c->d_ff * d;
        L->w_down = p, p += d * c->d_ff;
    }
    g->norm = p, p += d;
    g->lm_head = c->tied ? g->embed : p;
    return 0;
}

void kb_llama_grads_free(kb_llama_grads *g)
{
    free(g->storage);
    free(g->layers);
    memset(g, 0, sizeof *g);
}

/* ---- the forward, keeping what the backward reads ------------------------------------ */

/* One layer's activations over the N = B T rows: its input x, the two
 * norms' 1/rms and outputs, q and k after RoPE, v, the attention
 * probabilities (B heads T T, zero above the diagonal), the heads' output
 * o, the residual between the blocks xm, and the MLP's gate and up. */
typedef struct {
    double *x, *r1, *h1, *q, *k, *v, *p, *o, *xm, *r2, *h2, *gate, *up;
} saved_layer;

typedef struct {
    int B, T, N, d, qd, kvd, ff;
    saved_layer *layers;
    double *xf, *rf, *hf; /* the final norm's input, 1/rms and output */
    double *act;          /* scratch: one layer's silu(gate) * up */
    double *mem;
} saved;

/* Doubles a layer keeps, or -1 on overflow. */
static int64_t layer_doubles(const kb_llama_config *c, int B, int T)
{
    const int64_t N = (int64_t)B * T, d = c->d_model, qd = (int64_t)c->heads * c->head_dim;
    const int64_t kvd = (int64_t)c->kv_heads * c->head_dim;
    const int64_t rows = kb_size_muladd(N, kb_size_muladd(4, d, kb_size_muladd(2, qd, 2 * (kvd + c->d_ff))), 2 * N);
    const int64_t probs = kb_size_muladd(kb_size_muladd(B, c->heads, 0), kb_size_muladd(T, T, 0), 0);
    return rows < 0 || probs < 0 ? -1 : kb_size_muladd(1, rows, probs);
}

static int saved_init(saved *s, const kb_llama_config *c, int B, int T)
{
    memset(s, 0, sizeof *s);
    const int64_t per = layer_doubles(c, B, T), N = (int64_t)B * T;
    const int64_t tail = kb_size_muladd(N, kb_size_muladd(2, c->d_model, 1 + (int64_t)c->d_ff), 0);
    const int64_t total = tail < 0 ? -1 : kb_size_muladd(c->layers, per, tail);
    if (per < 0 || total < 0 || (uint64_t)total > SIZE_MAX / sizeof(double))
        return -1;
    s->mem = calloc((size_t)total, sizeof(double));
    s->layers = calloc((size_t)c->layers, sizeof *s->layers);
    if (!s->mem || !s->layers) {
        free(s->mem);
        free(s->layers);
        return -1;
    }
    *s = (saved){B, T, (int)N, c->d_model, c->heads * c->head_dim, c->kv_heads * c->head_dim, c->d_ff,
                 s->layers, NULL, NULL, NULL, NULL, s->mem};
    double *p = s->mem;
    for (int l = 0; l < c->layers; ++l) {
        saved_layer *L = &s->layers[l];
        L->x = p, p += N * s->d;
        L->r1 = p, p += N;
        L->h1 = p, p += N * s->d;
        L->q = p, p += N * s->qd;
        L->k = p, p += N * s->kvd;
        L->v = p, p += N * s->kvd;
        L->p = p, p += (int64_t)B * c->heads * T * T;
        L->o = p, p += N * s->qd;
        L->xm = p, p += N * s->d;
        L->r2 = p, p += N;
        L->h2 = p, p += N * s->d;
        L->gate = p, p += N * s->ff;
        L->up = p, p += N * s->ff;
    }
    s->xf = p, p += N * s->d;
    s->rf = p, p += N;
    s->hf = p, p += N * s->d;
    s->act = p;
    return 0;
}

static void saved_free(saved *s)
{
    free(s->mem);
    free(s->layers);
}

/* kb_llama_rmsnorm that also keeps each row's 1/rms. */
static void norm_rows(const double *x, int n, int d, const float *w, double eps, double *r, double *y)
{
    for (int i = 0; i < n; ++i) {
        double ss = 0;
        for (int c = 0; c < d; ++c)
            ss += x[(int64_t)i * d + c] * x[(int64_t)i * d + c];
        r[i] = 1.0 / sqrt(ss / d + eps);
    }
    kb_llama_rmsnorm(x, n, d, w, eps, y);
}

static double silu(double g) { return g / (1.0 + exp(-g)); }

/* Causal attention within each sequence: probabilities into L->p, the
 * heads' output into L->o. */
static void attend(const kb_llama_config *c, const saved *s, saved_layer *L)
{
    const int T = s->T, hd = c->head_dim, rep = c->heads / c->kv_heads;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < s->B; ++b)
        for (int h = 0; h < c->heads; ++h)
            for (int i = 0; i < T; ++i) {
                const double *q = L->q + (int64_t)(b * T + i) * s->qd + h * hd;
                double *p = L->p + (((int64_t)b * c->heads + h) * T + i) * T, max = -INFINITY, sum = 0;
                for (int j = 0; j <= i; ++j) {
                    const double *k = L->k + (int64_t)(b * T + j) * s->kvd + (h / rep) * hd;
                    double dot = 0;
                    for (int e = 0; e < hd; ++e)
                        dot += q[e] * k[e];
                    p[j] = dot * scale;
                    max = fmax(max, p[j]);
                }
                for (int j = 0; j <= i; ++j)
                    sum += p[j] = exp(p[j] - max);
                double *o = L->o + (int64_t)(b * T + i) * s->qd + h * hd;
                for (int e = 0; e < hd; ++e)
                    o[e] = 0;
                for (int j = 0; j <= i; ++j) {
                    const double *v = L->v + (int64_t)(b * T + j) * s->kvd + (h / rep) * hd;
                    p[j] /= sum;
                    for (int e = 0; e < hd; ++e)
                        o[e] += p[j] * v[e];
                }
            }
}

static void forward(const kb_llama_model *m, const int *ids, saved *s)
{
    const kb_llama_config *c = &m->cfg;
    const int N = s->N, d = s->d, T = s->T;
    double *x = s->layers[0].x;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < d; ++j)
            x[(int64_t)i * d + j] = m->embed[(int64_t)ids[i] * d + j];
    for (int l = 0; l < c->layers; ++l) {
        const kb_llama_layer *W = &m->layers[l];
        saved_layer *L = &s->layers[l];
        norm_rows(L->x, N, d, W->attn_norm, c->eps, L->r1, L->h1);
        kb_llama_linear(L->h1, N, d, W->wq, s->qd, L->q);
        kb_llama_linear(L->h1, N, d, W->wk, s->kvd, L->k);
        kb_llama_linear(L->h1, N, d, W->wv, s->kvd, L->v);
        for (int i = 0; i < N; ++i) {
            for (int h = 0; h < c->heads; ++h)
                kb_llama_rope(L->q + (int64_t)i * s->qd + h * c->head_dim, c, i % T);
            for (int h = 0; h < c->kv_heads; ++h)
                kb_llama_rope(L->k + (int64_t)i * s->kvd + h * c->head_dim, c, i % T);
        }
        attend(c, s, L);
        kb_llama_linear(L->o, N, s->qd, W->wo, d, L->xm);
        for (int64_t i = 0; i < (int64_t)N * d; ++i)
            L->xm[i] += L->x[i];
        norm_rows(L->xm, N, d, W->mlp_norm, c->eps, L->r2, L->h2);
        kb_llama_linear(L->h2, N, d, W->w_gate, s->ff, L->gate);
        kb_llama_linear(L->h2, N, d, W->w_up, s->ff, L->up);
        double *next = l + 1 < c->layers ? s->layers[l + 1].x : s->xf;
        for (int64_t i = 0; i < (int64_t)N * s->ff; ++i)
            s->act[i] = silu(L->gate[i]) * L->up[i];
        kb_llama_linear(s->act, N, s->ff, W->w_down, d, next);
        for (int64_t i = 0; i < (int64_t)N * d; ++i)
            next[i] += L->xm[i];
    }
    norm_rows(s->xf, N, d, m->norm, c->eps, s->rf, s->hf);
}

/* ---- the backward ------------------------------------------------------------------------ */

/* For y = x W^T over n rows (W [out x in]): dW += dy^T x, and dx = dy W
 * (added into dx when add, else written; dx may be NULL). */
static void back_linear(const double *dy, const double *x, int n, int in, const float *W, int out, double *dW,
                        double *dx, int add)
{
    for (int o = 0; o < out; ++o)
        for (int i = 0; i < n; ++i) {
            const double g = dy[(int64_t)i * out + o];
            for (int k = 0; k < in; ++k)
                dW[(int64_t)o * in + k] += g * x[(int64_t)i * in + k];
        }
    for (int i = 0; dx && i < n; ++i)
        for (int k = 0; k < in; ++k) {
            double acc = add ? dx[(int64_t)i * in + k] : 0;
            for (int o = 0; o < out; ++o)
                acc += dy[(int64_t)i * out + o] * W[(int64_t)o * in + k];
            dx[(int64_t)i * in + k] = acc;
        }
}

/* For y = x r w (r = 1 / rms of the row): dw += dy x r, and
 * dx += r w dy - x r^3 / d * sum_j dy_j w_j x_j. */
static void back_norm(const double *dy, const double *x, const double *r, int n, int d, const float *w, double *dw,
                      double *dx)
{
    for (int i = 0; i < n; ++i) {
        const double *xi = x + (int64_t)i * d, *gi = dy + (int64_t)i * d;
        double dot = 0;
        for (int c = 0; c < d; ++c) {
            dw[c] += gi[c] * xi[c] * r[i];
            dot += gi[c] * w[c] * xi[c];
        }
        for (int c = 0; c < d; ++c)
            dx[(int64_t)i * d + c] += r[i] * w[c] * gi[c] - xi[c] * r[i] * r[i] * r[i] / d * dot;
    }
}

/* From do (the heads' output's gradient) to dq, dk and dv, before RoPE's
 * inverse: per query row, dP_j = do . v_j, dS_j = P_j (dP_j - sum P dP);
 * a K/V head collects the gradients of every query head that reads it. */
static void back_attend(const kb_llama_config *c, const saved *s, const saved_layer *L, const double *d_o,
                        double *dq, double *dk, double *dv, double *dp)
{
    const int T = s->T, hd = c->head_dim, rep = c->heads / c->kv_heads;
    const double scale = 1.0 / sqrt((double)hd);
    for (int b = 0; b < s->B; ++b)
        for (int h = 0; h < c->heads; ++h)
            for (int i = 0; i < T; ++i) {
                const int64_t qi = (int64_t)(b * T + i) * s->qd + h * hd;
                const double *p = L->p + (((int64_t)b * c->heads + h) * T + i) * T;
                double sum = 0; /* dp: T doubles of scratch */
                for (int j = 0; j <= i; ++j) {
                    const int64_t kj = (int64_t)(b * T + j) * s->kvd + (h / rep) * hd;
                    dp[j] = 0;
                    for (int e = 0; e < hd; ++e) {
                        dp[j] += d_o[qi + e] * L->v[kj + e];
                        dv[kj + e] += p[j] * d_o[qi + e];
                    }
                    sum += p[j] * dp[j];
                }
                for (int j = 0; j <= i; ++j) {
                    const int64_t kj = (int64_t)(b * T + j) * s->kvd + (h / rep) * hd;
                    const double ds = p[j] * (dp[j] - sum) * scale;
                    for (int e = 0; e < hd; ++e) {
                        dq[qi + e] += ds * L->k[kj + e];
                        dk[kj + e] += ds * L->q[qi + e];
                    }
                }
            }
}

/* One layer's backward: dx holds the gradient of its output on entry and
 * of its input on return; g is the layer's gradients, work N (2 (qd + kvd
 * + ff) + d) + T doubles. */
static void back_layer(const kb_llama_config *c, const kb_llama_layer *W, const saved *s, const saved_layer *L,
                       kb_llama_layer_grad *g, double *dx, double *work)
{
    const int N = s->N, d = s->d, ff = s->ff, T = s->T;
    double *dq = work, *dk = dq + (int64_t)N * s->qd, *dv = dk + (int64_t)N * s->kvd, *d_o = dv + (int64_t)N * s->kvd;
    double *dg = d_o + (int64_t)N * s->qd, *du = dg + (int64_t)N * ff, *dh = du + (int64_t)N * ff;
    double *dp = dh + (int64_t)N * d;
    /* The MLP: x_out = xm + (silu(gate) up) Wd^T. */
    for (int64_t i = 0; i < (int64_t)N * ff; ++i)
        s->act[i] = silu(L->gate[i]) * L->up[i];
    back_linear(dx, s->act, N, ff, W->w_down, d, g->w_down, dg, 0); /* dg holds d act */
    for (int64_t i = 0; i < (int64_t)N * ff; ++i) {
        const double gt = L->gate[i], sg = 1.0 / (1.0 + exp(-gt)), da = dg[i];
        du[i] = da * gt * sg;
        dg[i] = da * L->up[i] * sg * (1 + gt * (1 - sg));
    }
    back_linear(dg, L->h2, N, d, W->w_gate, ff, g->w_gate, dh, 0);
    back_linear(du, L->h2, N, d, W->w_up, ff, g->w_up, dh, 1);
    back_norm(dh, L->xm, L->r2, N, d, W->mlp_norm, g->mlp_norm, dx); /* dx is now d xm */
    /* Attention: xm = x + o Wo^T. */
    back_linear(dx, L->o, N, s->qd, W->wo, d, g->wo, d_o, 0);
    memset(dq, 0, sizeof(double) * (size_t)N * (s->qd + 2 * s->kvd));
    back_attend(c, s, L, d_o, dq, dk, dv, dp);
    for (int i = 0; i < N; ++i) { /* RoPE's inverse: the rotation back */
        for (int h = 0; h < c->heads; ++h)
            kb_llama_rope(dq + (int64_t)i * s->qd + h * c->head_dim, c, -(i % T));
        for (int h = 0; h < c->kv_heads; ++h)
            kb_llama_rope(dk + (int64_t)i * s->kvd + h * c->head_dim, c, -(i % T));
    }
    back_linear(dq, L->h1, N, d, W->wq, s->qd, g->wq, dh, 0);
    back_linear(dk, L->h1, N, d, W->wk, s->kvd, g->wk, dh, 1);
    back_linear(dv, L->h1, N, d, W->wv, s->kvd, g->wv, dh, 1);
    back_norm(dh, L->x, L->r1, N, d, W->attn_norm, g->attn_norm, dx); /* dx is now d x */
}

/* The loss over the counted rows and d loss / d hf into dh; the LM head's
 * gradient into g.  -1 when no row counts. */
static int loss_rows(const kb_llama_model *m, const saved *s, const int *targets, double *loss, double *dh,
                     kb_llama_grads *g)
{
    const int V = m->cfg.vocab, d = s->d;
    int counted = 0;
    for (int i = 0; i < s->N; ++i)
        counted += targets[i] != KB_LLAMA_IGNORE;
    if (!counted)
        return -1;
    double *row = malloc(sizeof(double) * (size_t)V);
    if (!row)
        return -1;
    *loss = 0;
    memset(dh, 0, sizeof(double) * (size_t)s->N * d);
    for (int i = 0; i < s->N; ++i) {
        if (targets[i] == KB_LLAMA_IGNORE)
            continue;
        const double *h = s->hf + (int64_t)i * d;
        kb_llama_linear(h, 1, d, m->lm_head, V, row);
        double max = -INFINITY, sum = 0;
        for (int v = 0; v < V; ++v)
            max = fmax(max, row[v]);
        for (int v = 0; v < V; ++v)
            sum += exp(row[v] - max);
        *loss += max + log(sum) - row[targets[i]];
        for (int v = 0; v < V; ++v) /* d loss / d logit: (softmax - onehot) / counted */
            row[v] = (exp(row[v] - max) / sum - (v == targets[i])) / counted;
        back_linear(row, h, 1, d, m->lm_head, V, g->lm_head, dh + (int64_t)i * d, 0);
    }
    *loss /= counted;
    free(row);
    return 0;
}

int kb_llama_loss_backward(const kb_llama_model *m, const int *ids, const int *targets, int B, int T, double *loss,
                           kb_llama_grads *g)
{
    const kb_llama_config *c = &m->cfg;
    if (B < 1 || T < 1 || T > c->max_pos || (int64_t)B * T > 1 << 30)
        return -1;
    for (int64_t i = 0; i < (int64_t)B * T; ++i)
        if (ids[i] < 0 || ids[i] >= c->vocab || (targets[i] != KB_LLAMA_IGNORE && (targets[i] < 0 ||
                                                                                     targets[i] >= c->vocab)))
            return -1;
    saved s;
    if (saved_init(&s, c, B, T) != 0)
        return -1;
    /* back_layer's work, then the gradient of the layers' output (dx) and
     * of the final norm's (dh). */
    const int64_t N = s.N, layer_work = kb_size_muladd(N, 2 * ((int64_t)s.qd + s.kvd + s.ff) + s.d, T);
    const int64_t count = layer_work < 0 ? -1 : kb_size_muladd(N, 2 * (int64_t)s.d, layer_work);
    double *work = count < 0 || (uint64_t)count > SIZE_MAX / sizeof(double) ? NULL
                                                                          : malloc(sizeof(double) * (size_t)count);
    int rc = work ? 0 : -1;
    if (!rc) {
        double *dx = work + layer_work, *dh = dx + N * s.d;
        forward(m, ids, &s);
        rc = loss_rows(m, &s, targets, loss, dh, g);
        if (!rc) {
            memset(dx, 0, sizeof(double) * (size_t)(N * s.d));
            back_norm(dh, s.xf, s.rf, s.N, s.d, m->norm, g->norm, dx);
            for (int l = c->layers - 1; l >= 0; --l)
                back_layer(c, &m->layers[l], &s, &s.layers[l], &g->layers[l], dx, work);
            for (int64_t i = 0; i < N; ++i)
                for (int j = 0; j < s.d; ++j)
                    g->embed[(int64_t)ids[i] * s.d + j] += dx[i * s.d + j];
        }
    }
    free(work);
    saved_free(&s);
    return rc;
}

/* ---- the optimizer ---------------------------------------------------------------------- */

int kb_llama_adam_init(kb_llama_adam_state *s, const kb_llama_config *c)
{
    memset(s, 0, sizeof *s);
    s->n = kb_llama_weight_count(c);
    if (s->n < 0)
        return -1;
    s->m = calloc((size_t)s->n, sizeof(double));
    s->v = calloc((size_t)s->n, sizeof(double));
    if (!s->m || !s->v) {
        kb_llama_adam_free(s);
        return -1;
    }
    return 0;
}

void kb_llama_adam_free(kb_llama_adam_state *s)
{
    free(s->m);
    free(s->v);
    memset(s, 0, sizeof *s);
}

double kb_llama_adamw_step(kb_llama_model *m, const kb_llama_grads *g, kb_llama_adam_state *s,
                           const kb_adamw_hyper *h)
{
    double sumsq = 0;
    for (int64_t i = 0; i < s->n; ++i)
        sumsq += g->storage[i] * g->storage[i];
    const double clip = adamw_clip_for(h, sumsq);
    s->t += 1;
    const double bc1 = 1 - pow(h->beta1, s->t), bc2 = 1 - pow(h->beta2, s->t);
    for (int64_t i = 0; i < s->n; ++i)
        m->storage[i] =
            (float)adamw_element_step(h, clip * g->storage[i], m->storage[i], &s->m[i], &s->v[i], bc1, bc2);
    return sqrt(sumsq);
}
