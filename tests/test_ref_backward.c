/* The backward ops' references against finite differences of their
 * forwards, once, on small shapes: each gradient is the derivative of a
 * loss with respect to the forward's input or parameter (central
 * differences in double): sum(dy * forward(x)) for layernorm_backward's dx,
 * dgamma and dbeta, rmsnorm_backward's dx and dgamma, softmax_backward's
 * dx and swiglu_backward's dgate and dup; cross_entropy's dz is that of its
 * mean loss over the rows not ignored, and linear_cross_entropy's dh and dW
 * that of the same loss of h W^T; embedding_backward's dE that of
 * sum(dx * E[ids]); rope_backward's dqkv that of sum(dq * q + dk * k +
 * dv * v) over the rope op's own reference forward; matmul_backward's dA
 * and dB that of sum(dC * A B).  A reference that
 * drops a term (the xhat mean_j(dy gamma xhat) of dx, say) is off by far
 * more than the difference's 1e-7 error.  The bf16 references of the
 * norms and softmax_backward, reading bf16 storage, match their f32 ones
 * on the same values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cross_entropy.h"
#include "ops/embedding_backward.h"
#include "ops/layernorm.h"
#include "ops/layernorm_backward.h"
#include "ops/linear_cross_entropy.h"
#include "ops/matmul_backward.h"
#include "ops/rmsnorm.h"
#include "ops/rmsnorm_backward.h"
#include "ops/rope.h"
#include "ops/rope_backward.h"
#include "ops/softmax_backward.h"
#include "ops/swiglu_backward.h"
#include "tests/check.h"

enum { R = 4, C = 9 };
static const double H = 1e-4;

typedef double (*loss_fn)(const void *inputs);

/* The largest |grad[i] - dloss/dp[i]| over p's n values, by central
 * differences of step h. */
static double largest_gap(const double *grad, double *p, int n, double h, loss_fn loss, const void *inputs)
{
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        const double keep = p[i];
        p[i] = keep + h;
        const double up = loss(inputs);
        p[i] = keep - h;
        const double down = loss(inputs);
        p[i] = keep;
        worst = fmax(worst, fabs(grad[i] - (up - down) / (2 * h)));
    }
    return worst;
}

static void indices(int64_t *idx, int n)
{
    for (int i = 0; i < n; ++i)
        idx[i] = i;
}

/* A row-wise op's inputs in double, as the loss sees them. */
typedef struct {
    double x[R * C], gamma[C], beta[C];
    float dy[R * C];
} norm_inputs;

/* sum over the matrix of dy * layernorm(x; gamma, beta), in double. */
static double layernorm_loss(const void *inputs)
{
    const norm_inputs *in = inputs;
    double l = 0;
    for (int r = 0; r < R; ++r) {
        const double *x = in->x + r * C;
        double m = 0, v = 0;
        for (int j = 0; j < C; ++j)
            m += x[j];
        m /= C;
        for (int j = 0; j < C; ++j)
            v += (x[j] - m) * (x[j] - m);
        const double rstd = 1 / sqrt(v / C + KB_LAYERNORM_EPS);
        for (int j = 0; j < C; ++j)
            l += in->dy[r * C + j] * ((x[j] - m) * rstd * in->gamma[j] + in->beta[j]);
    }
    return l;
}

/* sum over the matrix of dy * rmsnorm(x; gamma), in double. */
static double rmsnorm_loss(const void *inputs)
{
    const norm_inputs *in = inputs;
    double l = 0;
    for (int r = 0; r < R; ++r) {
        const double *x = in->x + r * C;
        double sq = 0;
        for (int j = 0; j < C; ++j)
            sq += x[j] * x[j];
        const double rstd = 1 / sqrt(sq / C + KB_RMSNORM_EPS);
        for (int j = 0; j < C; ++j)
            l += in->dy[r * C + j] * x[j] * rstd * in->gamma[j];
    }
    return l;
}

/* Seeded x, gamma and dy as fp32 (what the references read) and double. */
static void norm_draw(norm_inputs *in, float *xf, float *gf, uint64_t seed)
{
    kb_fill_uniform(xf, R * C, seed);
    kb_fill_uniform(gf, C, seed + 1);
    kb_fill_uniform(in->dy, R * C, seed + 2);
    for (int i = 0; i < R * C; ++i)
        in->x[i] = xf[i];
    for (int j = 0; j < C; ++j)
        in->gamma[j] = gf[j], in->beta[j] = 0.5 - 0.1 * j;
}

static void layernorm_backward_against_differences(void)
{
    static norm_inputs in;
    float xf[R * C], gf[C], mean[R], rstd[R];
    int64_t rows[R], cols[C];
    double dx[R * C], dgamma[C], dbeta[C];
    norm_draw(&in, xf, gf, 11);
    indices(rows, R), indices(cols, C);
    layernorm_backward_stats(R, C, KB_LAYERNORM_EPS, KB_F32, xf, mean, rstd);
    layernorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, mean, rstd, KB_LNB_DX, rows, R, dx);
    layernorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, mean, rstd, KB_LNB_DGAMMA, cols, C, dgamma);
    layernorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, mean, rstd, KB_LNB_DBETA, cols, C, dbeta);
    /* mean and rstd are fp32 as the forward saves them: a relative 1e-7
     * there is the error the comparison allows, with the difference's. */
    double worst = largest_gap(dx, in.x, R * C, H, layernorm_loss, &in);
    worst = fmax(worst, largest_gap(dgamma, in.gamma, C, H, layernorm_loss, &in));
    worst = fmax(worst, largest_gap(dbeta, in.beta, C, H, layernorm_loss, &in));
    printf("layernorm_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-5);
    /* The sums over rows see every row: the last one's dy changes dbeta. */
    in.dy[(R - 1) * C] += 1;
    double moved[C];
    layernorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, mean, rstd, KB_LNB_DBETA, cols, C, moved);
    CHECK_NEAR(moved[0], dbeta[0] + 1, 1e-12);
}

static void rmsnorm_backward_against_differences(void)
{
    static norm_inputs in;
    float xf[R * C], gf[C], rstd[R];
    int64_t rows[R], cols[C];
    double dx[R * C], dgamma[C];
    norm_draw(&in, xf, gf, 21);
    indices(rows, R), indices(cols, C);
    rmsnorm_backward_stats(R, C, KB_RMSNORM_EPS, KB_F32, xf, rstd);
    rmsnorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, rstd, KB_RMB_DX, rows, R, dx);
    rmsnorm_backward_reference(R, C, KB_F32, xf, gf, in.dy, rstd, KB_RMB_DGAMMA, cols, C, dgamma);
    double worst = largest_gap(dx, in.x, R * C, H, rmsnorm_loss, &in);
    worst = fmax(worst, largest_gap(dgamma, in.gamma, C, H, rmsnorm_loss, &in));
    printf("rmsnorm_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-5);
}

/* The bf16 forms' references (the norms', softmax_backward's) read bf16
 * storage: on values bf16 holds exactly, they give the f32 references'
 * results bit for bit. */
static void bf16_storage(void)
{
    static norm_inputs in;
    float xf[R * C], gf[C], dyf[R * C], mean[R], rstd[R], mean16[R], rstd16[R];
    uint16_t x16[R * C], g16[C], dy16[R * C];
    int64_t rows[R], cols[C];
    double a[R * C], b[R * C];
    norm_draw(&in, xf, gf, 31);
    for (int i = 0; i < R * C; ++i)
        dyf[i] = in.dy[i];
    kb_store_floats(KB_BF16, xf, x16, R * C), kb_store_floats(KB_BF16, gf, g16, C);
    kb_store_floats(KB_BF16, dyf, dy16, R * C);
    for (int i = 0; i < R * C; ++i) /* the f32 copies: the same values */
        xf[i] = (float)kb_tensor_value(x16, i, KB_BF16), dyf[i] = (float)kb_tensor_value(dy16, i, KB_BF16);
    for (int j = 0; j < C; ++j)
        gf[j] = (float)kb_tensor_value(g16, j, KB_BF16);
    indices(rows, R), indices(cols, C);
    layernorm_backward_stats(R, C, KB_LAYERNORM_EPS, KB_F32, xf, mean, rstd);
    layernorm_backward_stats(R, C, KB_LAYERNORM_EPS, KB_BF16, x16, mean16, rstd16);
    CHECK(!memcmp(mean, mean16, sizeof mean) && !memcmp(rstd, rstd16, sizeof rstd));
    for (int which = KB_LNB_DX; which <= KB_LNB_DBETA; ++which) {
        const int n = which == KB_LNB_DX ? R : C;
        layernorm_backward_reference(R, C, KB_F32, xf, gf, dyf, mean, rstd, which, which == KB_LNB_DX ? rows : cols, n,
                                     a);
        layernorm_backward_reference(R, C, KB_BF16, x16, g16, dy16, mean, rstd, which,
                                     which == KB_LNB_DX ? rows : cols, n, b);
        CHECK(!memcmp(a, b, sizeof(double) * (which == KB_LNB_DX ? R * C : C)));
    }
    rmsnorm_backward_stats(R, C, KB_RMSNORM_EPS, KB_F32, xf, rstd);
    rmsnorm_backward_stats(R, C, KB_RMSNORM_EPS, KB_BF16, x16, rstd16);
    CHECK(!memcmp(rstd, rstd16, sizeof rstd));
    for (int which = KB_RMB_DX; which <= KB_RMB_DGAMMA; ++which) {
        const int n = which == KB_RMB_DX ? R : C;
        rmsnorm_backward_reference(R, C, KB_F32, xf, gf, dyf, rstd, which, which == KB_RMB_DX ? rows : cols, n, a);
        rmsnorm_backward_reference(R, C, KB_BF16, x16, g16, dy16, rstd, which, which == KB_RMB_DX ? rows : cols, n, b);
        CHECK(!memcmp(a, b, sizeof(double) * (which == KB_RMB_DX ? R * C : C)));
    }
    /* softmax_backward's, with x's values standing in for y. */
    softmax_backward_reference(C, KB_F32, xf, dyf, rows, R, a);
    softmax_backward_reference(C, KB_BF16, x16, dy16, rows, R, b);
    CHECK(!memcmp(a, b, sizeof(double) * R * C));
}

/* sum over the matrix of dy * softmax(x), in double. */
static double softmax_loss(const void *inputs)
{
    const norm_inputs *in = inputs;
    double l = 0;
    for (int r = 0; r < R; ++r) {
        const double *x = in->x + r * C;
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < C; ++j)
            max = fmax(max, x[j]);
        for (int j = 0; j < C; ++j)
            sum += exp(x[j] - max);
        for (int j = 0; j < C; ++j)
            l += in->dy[r * C + j] * exp(x[j] - max) / sum;
    }
    return l;
}

static void softmax_backward_against_differences(void)
{
    static norm_inputs in;
    float y[R * C], g[C];
    int64_t rows[R];
    double dx[R * C];
    norm_draw(&in, y, g, 31);
    for (int i = 0; i < R * C; ++i)
        in.x[i] = y[i] *= 4.0f; /* the logits; y becomes their softmax */
    softmax_backward_probabilities(R, C, y);
    indices(rows, R);
    softmax_backward_reference(C, KB_F32, y, in.dy, rows, R, dx);
    /* y is stored in fp32: its rounding (2^-24 relative) bounds the error. */
    const double worst = largest_gap(dx, in.x, R * C, H, softmax_loss, &in);
    printf("softmax_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-6);
}

typedef struct {
    double gu[R * 2 * C];
    float dh[R * C];
} swiglu_inputs;

/* sum over the rows of dh * silu(gate) * up, gu = gate | up, in double. */
static double swiglu_loss(const void *inputs)
{
    const swiglu_inputs *in = inputs;
    double l = 0;
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < C; ++j) {
            const double g = in->gu[r * 2 * C + j], u = in->gu[r * 2 * C + C + j];
            l += in->dh[r * C + j] * g / (1 + exp(-g)) * u;
        }
    return l;
}

static void swiglu_backward_against_differences(void)
{
    static swiglu_inputs in;
    float guf[R * 2 * C];
    int64_t rows[R];
    double dgu[R * 2 * C];
    kb_fill_uniform(guf, R * 2 * C, 41);
    kb_fill_uniform(in.dh, R * C, 42);
    for (int j = 0; j < C; ++j)
        guf[j] *= 16.0f; /* the op's wide gates in row 0 */
    for (int i = 0; i < R * 2 * C; ++i)
        in.gu[i] = guf[i];
    indices(rows, R);
    swiglu_backward_reference(C, KB_F32, guf, in.dh, rows, R, dgu);
    const double worst = largest_gap(dgu, in.gu, R * 2 * C, H, swiglu_loss, &in);
    printf("swiglu_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-7);
}

typedef struct {
    double z[R * C];
    int targets[R];
} ce_inputs;

/* The mean over the counted rows of cross_entropy's loss, in double. */
static double ce_loss(const void *inputs)
{
    const ce_inputs *in = inputs;
    float zf[R * C];
    for (int i = 0; i < R * C; ++i)
        zf[i] = (float)in->z[i]; /* exact: z moves by a power of two from fp32 values */
    int64_t rows[R];
    double loss[R], l = 0;
    indices(rows, R);
    cross_entropy_reference(R, C, KB_F32, zf, in->targets, KB_CE_LOSS, rows, R, loss);
    for (int r = 0; r < R; ++r)
        l += loss[r];
    return l / (double)cross_entropy_counted(R);
}

static void cross_entropy_against_differences(void)
{
    static ce_inputs in = {.targets = {3, KB_CE_IGNORE, 0, C - 1}};
    float zf[R * C];
    int64_t rows[R];
    double dz[R * C];
    kb_fill_uniform(zf, R * C, 51);
    for (int i = 0; i < R * C; ++i)
        in.z[i] = zf[i] *= 4.0f;
    indices(rows, R);
    CHECK(cross_entropy_ignored(1, R) && cross_entropy_counted(R) == R - 1);
    cross_entropy_reference(R, C, KB_F32, zf, in.targets, KB_CE_DZ, rows, R, dz);
    /* a step of 2^-13, so that z +- h stays exact in fp32 */
    const double worst = largest_gap(dz, in.z, R * C, 0x1p-13, ce_loss, &in);
    printf("cross_entropy: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-7);
    for (int j = 0; j < C; ++j)
        CHECK(dz[C + j] == 0); /* the ignored row */
}

enum { V = 3 };
typedef struct {
    double E[V * C];
    int ids[R];
    float dx[R * C];
} embedding_inputs;

/* sum over the tokens of dx[t] . E[ids[t]], in double. */
static double embedding_loss(const void *inputs)
{
    const embedding_inputs *in = inputs;
    double l = 0;
    for (int t = 0; t < R; ++t)
        for (int j = 0; j < C; ++j)
            l += in->dx[t * C + j] * in->E[in->ids[t] * C + j];
    return l;
}

static void embedding_backward_against_differences(void)
{
    static embedding_inputs in = {.ids = {2, 0, 2, 2}}; /* id 1 is never named: its row is 0 */
    int64_t rows[V];
    double dE[V * C];
    kb_fill_uniform(in.dx, R * C, 61);
    for (int i = 0; i < V * C; ++i)
        in.E[i] = 0.01 * i;
    indices(rows, V);
    embedding_backward_reference(R, C, in.ids, in.dx, rows, V, dE);
    const double worst = largest_gap(dE, in.E, V * C, H, embedding_loss, &in);
    printf("embedding_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-9);
    CHECK(dE[C] == 0 && dE[2 * C] == (double)in.dx[0] + in.dx[2 * C] + in.dx[3 * C]);
}

enum { LV = 5, LD = 3 };
typedef struct {
    double h[R * LD], w[LV * LD];
    int targets[R];
} lce_inputs;

/* Multiples of 2^-7 in [-1, 1] are bf16 values: the differences' steps
 * stay exact. */
static void to_bf16(const double *x, int n, uint16_t *out)
{
    for (int i = 0; i < n; ++i) {
        union { float f; uint32_t u; } v = {(float)x[i]};
        out[i] = (uint16_t)(v.u >> 16);
    }
}

/* linear_cross_entropy's mean loss over the counted rows, in double. */
static double lce_loss(const void *inputs)
{
    const lce_inputs *in = inputs;
    uint16_t h[R * LD], w[LV * LD];
    to_bf16(in->h, R * LD, h);
    to_bf16(in->w, LV * LD, w);
    int64_t rows[R];
    double loss[R], l = 0;
    indices(rows, R);
    linear_cross_entropy_reference(R, LV, LD, h, w, in->targets, NULL, KB_LCE_LOSS, rows, R, loss);
    for (int r = 0; r < R; ++r)
        l += loss[r];
    return l / (double)cross_entropy_counted(R);
}

static void linear_cross_entropy_against_differences(void)
{
    static lce_inputs in = {.targets = {3, KB_CE_IGNORE, 0, LV - 1}};
    float x[(R + LV) * LD];
    kb_fill_uniform(x, (R + LV) * LD, 71);
    for (int i = 0; i < R * LD; ++i)
        in.h[i] = round(x[i] * 96) / 128;
    for (int i = 0; i < LV * LD; ++i)
        in.w[i] = round(x[R * LD + i] * 96) / 128;
    uint16_t h[R * LD], w[LV * LD];
    to_bf16(in.h, R * LD, h);
    to_bf16(in.w, LV * LD, w);
    float lse[R];
    linear_cross_entropy_lse(R, LV, LD, h, w, lse);
    int64_t rows[LV];
    double dh[R * LD], dw[LV * LD];
    indices(rows, LV);
    linear_cross_entropy_reference(R, LV, LD, h, w, in.targets, lse, KB_LCE_DH, rows, R, dh);
    linear_cross_entropy_reference(R, LV, LD, h, w, in.targets, lse, KB_LCE_DW, rows, LV, dw);
    /* A step of 2^-7, the finest the bf16 inputs allow: the differences are
     * off by about h^2 / 6 of the loss's third derivative. */
    const double worst = fmax(largest_gap(dh, in.h, R * LD, 0x1p-7, lce_loss, &in),
                              largest_gap(dw, in.w, LV * LD, 0x1p-7, lce_loss, &in));
    printf("linear_cross_entropy: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 2e-5);
    for (int j = 0; j < LD; ++j)
        CHECK(dh[LD + j] == 0); /* the ignored row */
}

enum { RT = 5, RH = 2, RKV = 1, RD = 6, RHEADS = RH + 2 * RKV, RQKV = RT * RHEADS * RD };
typedef struct {
    double qkv[RQKV];
    float dy[3][RH * RT * RD]; /* dq (H, T, D), dk and dv (KV, T, D) */
} rope_inputs;

/* The index of rope's tensor `name`, found by name so that the test reads
 * the forward's contract rather than copying its order. */
static int rope_tensor(const kb_shape *s, const char *name)
{
    for (int i = 0; i < kb_op_rope.ntensors(s); ++i)
        if (!strcmp(kb_op_rope.tensor(s, KB_F32, i).name, name))
            return i;
    return -1;
}

/* sum(dq * q + dk * k + dv * v) of the rope op's reference forward at
 * P = 0, in double. */
static double rope_loss(const void *inputs)
{
    const rope_inputs *in = inputs;
    const kb_shape s = {4, {RT, RH, RKV, RD}};
    static const char *const outputs[3] = {"q", "k", "v"};
    const int64_t heads[3] = {RH, RKV, RKV};
    float qkv[RQKV];
    for (int i = 0; i < RQKV; ++i)
        qkv[i] = (float)in->qkv[i]; /* exact: qkv moves by a power of two from fp32 values */
    const void *tensors[KB_MAX_TENSORS] = {0};
    tensors[rope_tensor(&s, "qkv")] = qkv;
    int64_t rows[RH * RT];
    double y[RH * RT * RD], l = 0;
    indices(rows, RH * RT);
    for (int o = 0; o < 3; ++o) {
        kb_op_rope.reference(&s, KB_F32, tensors, rope_tensor(&s, outputs[o]), rows, (int)(heads[o] * RT), y);
        for (int64_t j = 0; j < heads[o] * RT * RD; ++j)
            l += in->dy[o][j] * y[j];
    }
    return l;
}

static void rope_backward_against_differences(void)
{
    static rope_inputs in;
    float qkvf[RQKV];
    int64_t rows[RT];
    double dqkv[RQKV];
    kb_fill_uniform(qkvf, RQKV, 71);
    for (int i = 0; i < RQKV; ++i)
        in.qkv[i] = qkvf[i];
    for (int o = 0; o < 3; ++o)
        kb_fill_uniform(in.dy[o], RH * RT * RD, 72 + (uint64_t)o);
    indices(rows, RT);
    rope_backward_reference(RT, RH, RKV, RD, KB_F32, in.dy[0], in.dy[1], in.dy[2], rows, RT, dqkv);
    /* rope is linear in qkv: the differences are exact but for rounding. */
    const double worst = largest_gap(dqkv, in.qkv, RQKV, 0x1p-13, rope_loss, &in);
    printf("rope_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-9);
    /* Token 0's angles are 0: its query pairs pass unturned; value heads copy. */
    for (int j = 0; j < RD; ++j)
        CHECK(dqkv[j] == in.dy[0][j] && dqkv[(RH + RKV) * RD + j] == in.dy[2][j]);
}

enum { MM = 3, MN = 5, MK = 4 };
typedef struct {
    double a[MM * MK], b[MK * MN];
    float dc[MM * MN];
} matmul_inputs;

/* sum(dC * A B), in double. */
static double matmul_loss(const void *inputs)
{
    const matmul_inputs *in = inputs;
    double l = 0;
    for (int m = 0; m < MM; ++m)
        for (int n = 0; n < MN; ++n) {
            double c = 0;
            for (int k = 0; k < MK; ++k)
                c += in->a[m * MK + k] * in->b[k * MN + n];
            l += in->dc[m * MN + n] * c;
        }
    return l;
}

static void matmul_backward_against_differences(void)
{
    static matmul_inputs in;
    float af[MM * MK], bf[MK * MN];
    kb_fill_uniform(af, MM * MK, 81);
    kb_fill_uniform(bf, MK * MN, 82);
    kb_fill_uniform(in.dc, MM * MN, 83);
    for (int i = 0; i < MM * MK; ++i)
        in.a[i] = af[i];
    for (int i = 0; i < MK * MN; ++i)
        in.b[i] = bf[i];
    /* Rows out of order, so that a reference that ignores the list fails. */
    const int64_t da_rows[MM] = {2, 0, 1}, db_rows[MK] = {3, 1, 0, 2};
    double da[MM * MK], db[MK * MN], da_in_order[MM * MK], db_in_order[MK * MN];
    matmul_backward_reference(MM, MN, MK, KB_F32, af, bf, in.dc, KB_MMB_DA, da_rows, MM, da);
    matmul_backward_reference(MM, MN, MK, KB_F32, af, bf, in.dc, KB_MMB_DB, db_rows, MK, db);
    for (int r = 0; r < MM; ++r)
        memcpy(da_in_order + da_rows[r] * MK, da + r * MK, MK * sizeof *da);
    for (int r = 0; r < MK; ++r)
        memcpy(db_in_order + db_rows[r] * MN, db + r * MN, MN * sizeof *db);
    /* The loss is linear in each operand: the differences are exact but for rounding. */
    const double worst = fmax(largest_gap(da_in_order, in.a, MM * MK, 0x1p-10, matmul_loss, &in),
                              largest_gap(db_in_order, in.b, MK * MN, 0x1p-10, matmul_loss, &in));
    printf("matmul_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-9);
}

int main(void)
{
    layernorm_backward_against_differences();
    rmsnorm_backward_against_differences();
    bf16_storage();
    softmax_backward_against_differences();
    swiglu_backward_against_differences();
    cross_entropy_against_differences();
    embedding_backward_against_differences();
    linear_cross_entropy_against_differences();
    rope_backward_against_differences();
    matmul_backward_against_differences();
    return CHECK_DONE();
}
