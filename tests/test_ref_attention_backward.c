/* attention_backward's reference against finite differences of the
 * attention forward, once, on small shapes: dq, dk and dv are the
 * derivatives of sum(do * attention(q, k, v)) (central differences in
 * double over reference/attend_row.h's forward), with o and lse from the
 * op's own prepare.  Shapes: multi-head, GQA (4 query heads over 2 KV
 * heads, whose dk and dv sum over their group), the causal mask with
 * Tq < Tk and with Tq > Tk (rows that see no key: lse +inf, zero dq, and
 * keys they would see get nothing from them).  Then the saved statistics
 * on one key, and the op's FLOPs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/attention.h"
#include "ops/attention_backward.h"
#include "reference/attend_row.h"
#include "tests/check.h"

enum { MAXQ = 4 * 7 * 8, MAXKV = 2 * 7 * 8 };

typedef struct {
    kb_attention_backward_args a;
    double q[MAXQ], k[MAXKV], v[MAXKV];
    float dout[MAXQ];
} inputs;

/* sum over every query row of do . attention(q, k, v), in double. */
static double loss(const inputs *in)
{
    const kb_attention_backward_args *a = &in->a;
    const kb_attention_args f = {.Tq = a->Tq, .Tk = a->Tk, .causal = a->causal};
    double p[16], o[8], l = 0;
    for (int bh = 0; bh < a->B * a->H; ++bh)
        for (int i = 0; i < a->Tq; ++i) {
            const int keys = (int)kb_attention_keys(&f, i), r = bh * a->Tq + i;
            const int kv = bh / (a->H / a->Hkv) * a->Tk * a->D;
            if (!keys)
                continue; /* a row that sees no key is zeros */
            kb_ref_attend_row(in->q + r * a->D, in->k + kv, in->v + kv, keys, a->D, a->D, a->scale, p, o);
            for (int d = 0; d < a->D; ++d)
                l += in->dout[r * a->D + d] * o[d];
        }
    return l;
}

/* The largest |grad - dloss/dx| over x's n values. */
static double gap(const double *grad, double *x, int n, inputs *in)
{
    const double h = 1e-4;
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        const double keep = x[i];
        x[i] = keep + h;
        const double up = loss(in);
        x[i] = keep - h;
        const double down = loss(in);
        x[i] = keep;
        worst = fmax(worst, fabs(grad[i] - (up - down) / (2 * h)));
    }
    return worst;
}

static void to_double(const float *x, int n, double *y)
{
    for (int i = 0; i < n; ++i)
        y[i] = x[i];
}

static void against_differences(int H, int Hkv, int Tq, int Tk, int causal)
{
    static inputs in;
    const int D = 8, nq = H * Tq * D, nkv = Hkv * Tk * D;
    static float q[MAXQ], k[MAXKV], v[MAXKV], o[MAXQ], lse[4 * 7];
    kb_fill_uniform(q, nq, 11);
    kb_fill_uniform(k, nkv, 12);
    kb_fill_uniform(v, nkv, 13);
    kb_fill_uniform(in.dout, nq, 14);
    to_double(q, nq, in.q);
    to_double(k, nkv, in.k);
    to_double(v, nkv, in.v);
    in.a = (kb_attention_backward_args){1, H, Tq, Tk, D, causal, (float)(1 / sqrt(D)), Hkv, q, k, v, o, in.dout,
                                        lse, NULL, NULL, NULL};
    attention_backward_forward(&in.a, KB_F32, o, lse);
    int64_t rows[4 * 7];
    for (int r = 0; r < 4 * 7; ++r)
        rows[r] = r;
    static double dq[MAXQ], dk[MAXKV], dv[MAXKV];
    attention_backward_reference(&in.a, KB_F32, KB_ATB_DQ, rows, H * Tq, dq);
    attention_backward_reference(&in.a, KB_F32, KB_ATB_DK, rows, Hkv * Tk, dk);
    attention_backward_reference(&in.a, KB_F32, KB_ATB_DV, rows, Hkv * Tk, dv);
    /* o and lse are stored in fp32 (rounding ~6e-8): far under a dropped
     * term, which moves a gradient by ~1e-2. */
    const double wq = gap(dq, in.q, nq, &in), wk = gap(dk, in.k, nkv, &in), wv = gap(dv, in.v, nkv, &in);
    printf("attention_backward %dx%dx%dx%d%s: largest |reference - finite difference| dq %.1e dk %.1e dv %.1e\n",
           H, Tq, Tk, Hkv, causal ? "c" : "", wq, wk, wv);
    CHECK(wq < 1e-6 && wk < 1e-6 && wv < 1e-6);
    if (causal && Tq > Tk) /* the first Tq - Tk rows of each head see no key */
        for (int h = 0; h < H; ++h) {
            CHECK(isinf(lse[h * Tq]) && lse[h * Tq] > 0);
            for (int d = 0; d < D; ++d)
                CHECK(dq[h * Tq * D + d] == 0 && o[h * Tq * D + d] == 0);
        }
}

/* One key: lse is its scaled score and P = 1, so dv = do and dq = dk = 0
 * (a softmax over one key does not move). */
static void one_key(void)
{
    const float q[2] = {1, 2}, k[2] = {3, -1}, v[2] = {0.5f, 0.25f}, dout[2] = {0.75f, -1};
    float o[2], lse;
    kb_attention_backward_args a = {1, 1, 1, 1, 2, 0, (float)(1 / sqrt(2.0)), 1, q, k, v, o, dout, &lse};
    attention_backward_forward(&a, KB_F32, o, &lse);
    CHECK_NEAR(lse, 1 / sqrt(2.0), 1e-7);
    CHECK(o[0] == 0.5f && o[1] == 0.25f);
    const int64_t row0[1] = {0};
    double g[2];
    attention_backward_reference(&a, KB_F32, KB_ATB_DV, row0, 1, g);
    CHECK_NEAR(g[0], 0.75, 1e-7);
    CHECK_NEAR(g[1], -1, 1e-7);
    attention_backward_reference(&a, KB_F32, KB_ATB_DQ, row0, 1, g);
    CHECK_NEAR(g[0], 0, 1e-7);
    CHECK_NEAR(g[1], 0, 1e-7);
}

/* 2.5 times the forward's FLOPs, causal or not. */
static void flops(void)
{
    kb_shape s = {5, {2, 16, 4096, 4096, 128}};
    CHECK(kb_op_attention_backward.flops(&s) == 2.5 * kb_op_attention.flops(&s));
    s.flags = 1;
    CHECK(kb_op_attention_backward.flops(&s) == 2.5 * kb_op_attention.flops(&s));
}

int main(void)
{
    against_differences(2, 2, 5, 7, 0);
    against_differences(4, 2, 5, 7, 1);
    against_differences(4, 2, 7, 5, 1);
    against_differences(2, 1, 6, 6, 1);
    one_key();
    flops();
    return CHECK_DONE();
}
