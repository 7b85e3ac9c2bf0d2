/* attention_backward reference: plain C11 in double.  The forward (for
 * prepare) runs one query row at a time over its KV head's keys, widened
 * to double once per head; a dq row walks its keys, a dk or dv row the
 * query rows of the heads that read its KV head.  P comes from the saved
 * lse and D_i from the saved o, as the contract defines the gradients. */
#include <math.h>
#include <stdlib.h>
#include "ops/attention.h"
#include "ops/attention_backward.h"

static int64_t keys_of(const kb_attention_backward_args *a, int64_t i)
{
    const kb_attention_args f = {.Tq = a->Tq, .Tk = a->Tk, .causal = a->causal};
    return kb_attention_keys(&f, i);
}

static double dot(const double *x, const double *y, int n)
{
    double s = 0;
    for (int d = 0; d < n; ++d)
        s += x[d] * y[d];
    return s;
}

/* Row `row` (of D elements) of a host tensor, as doubles. */
static void row_of(const void *x, int64_t row, int D, kb_dtype t, double *out)
{
    kb_widen(x, row * D, D, t, out);
}

/* One query row's forward over the widened K and V: o (D doubles) and lse. */
static double forward_row(const kb_attention_backward_args *a, const double *q, const double *K, const double *V,
                          int64_t keys, double *p, double *o)
{
    const int D = a->D;
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < keys; ++j) {
        p[j] = a->scale * dot(q, K + j * D, D);
        max = fmax(max, p[j]);
    }
    for (int d = 0; d < D; ++d)
        o[d] = 0;
    for (int64_t j = 0; j < keys; ++j) {
        sum += p[j] = exp(p[j] - max);
        for (int d = 0; d < D; ++d)
            o[d] += p[j] * V[j * D + d];
    }
    for (int d = 0; d < D; ++d)
        o[d] = keys ? o[d] / sum : 0;
    return keys ? max + log(sum) : INFINITY;
}

void attention_backward_forward(const kb_attention_backward_args *a, kb_dtype t, void *o, float *lse)
{
    const int D = a->D, group = a->H / a->Hkv;
    const int64_t heads = (int64_t)a->B * a->H;
#pragma omp parallel for schedule(dynamic)
    for (int64_t bh = 0; bh < heads; ++bh) {
        const int64_t kv = bh / group;
        double *K = malloc((size_t)a->Tk * D * sizeof *K), *V = malloc((size_t)a->Tk * D * sizeof *V);
        double *p = malloc((size_t)a->Tk * sizeof *p), *q = malloc(2 * (size_t)D * sizeof *q), *out = q + D;
        float *of = malloc((size_t)D * sizeof *of);
        kb_widen(a->k, kv * a->Tk * D, (int64_t)a->Tk * D, t, K);
        kb_widen(a->v, kv * a->Tk * D, (int64_t)a->Tk * D, t, V);
        for (int64_t i = 0; i < a->Tq; ++i) {
            const int64_t r = bh * a->Tq + i;
            row_of(a->q, r, D, t, q);
            lse[r] = (float)forward_row(a, q, K, V, keys_of(a, i), p, out);
            for (int d = 0; d < D; ++d)
                of[d] = (float)out[d];
            kb_store_floats(t, of, (char *)o + r * D * kb_dtypes[t].bytes, D);
        }
        free(of);
        free(q);
        free(p);
        free(V);
        free(K);
    }
}

/* dq_i = scale sum_j P_ij (do_i . v_j - do_i . o_i) k_j. */
static void dq_row(const kb_attention_backward_args *a, kb_dtype t, int64_t r, double *w, double *dq)
{
    const int D = a->D;
    double *q = w, *dout = w + D, *o = w + 2 * D, *k = w + 3 * D, *v = w + 4 * D;
    const int64_t kv = r / a->Tq / (a->H / a->Hkv) * a->Tk, keys = keys_of(a, r % a->Tq);
    row_of(a->q, r, D, t, q);
    row_of(a->dout, r, D, t, dout);
    row_of(a->o, r, D, t, o);
    const double Di = dot(dout, o, D), lse = a->lse[r];
    for (int d = 0; d < D; ++d)
        dq[d] = 0;
    for (int64_t j = 0; j < keys; ++j) {
        row_of(a->k, kv + j, D, t, k);
        row_of(a->v, kv + j, D, t, v);
        const double P = exp(a->scale * dot(q, k, D) - lse), dS = P * (dot(dout, v, D) - Di);
        for (int d = 0; d < D; ++d)
            dq[d] += a->scale * dS * k[d];
    }
}

/* dk_j and dv_j of KV row r = (b, kv head, j): over the group's heads and
 * their query rows that see key j. */
static void dkv_row(const kb_attention_backward_args *a, kb_dtype t, int out, int64_t r, double *w, double *g)
{
    const int D = a->D, group = a->H / a->Hkv;
    double *q = w, *dout = w + D, *o = w + 2 * D, *k = w + 3 * D, *v = w + 4 * D;
    const int64_t j = r % a->Tk, kvh = r / a->Tk;
    row_of(a->k, r, D, t, k);
    row_of(a->v, r, D, t, v);
    for (int d = 0; d < D; ++d)
        g[d] = 0;
    for (int64_t bh = kvh * group; bh < (kvh + 1) * group; ++bh)
        for (int64_t i = 0; i < a->Tq; ++i) {
            if (j >= keys_of(a, i))
                continue;
            const int64_t qr = bh * a->Tq + i;
            row_of(a->q, qr, D, t, q);
            row_of(a->dout, qr, D, t, dout);
            const double P = exp(a->scale * dot(q, k, D) - a->lse[qr]);
            if (out == KB_ATB_DV) {
                for (int d = 0; d < D; ++d)
                    g[d] += P * dout[d];
                continue;
            }
            row_of(a->o, qr, D, t, o);
            const double dS = P * (dot(dout, v, D) - dot(dout, o, D));
            for (int d = 0; d < D; ++d)
                g[d] += a->scale * dS * q[d];
        }
}

void attention_backward_reference(const kb_attention_backward_args *a, kb_dtype t, int out, const int64_t *rows,
                                  int nrows, double *ref)
{
    double *w = malloc(5 * (size_t)a->D * sizeof *w);
    for (int n = 0; n < nrows; ++n) {
        if (out == KB_ATB_DQ)
            dq_row(a, t, rows[n], w, ref + (int64_t)n * a->D);
        else
            dkv_row(a, t, out, rows[n], w, ref + (int64_t)n * a->D);
    }
    free(w);
}
