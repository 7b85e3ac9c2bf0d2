/* The backward ops' references against finite differences of their
 * forwards, once, on small shapes: each gradient is the derivative of the
 * loss sum(dy * forward(x)) with respect to the forward's input or
 * parameter (central differences in double, h = 1e-4): layernorm_backward's
 * dx, dgamma and dbeta, rmsnorm_backward's dx and dgamma, softmax_backward's
 * dx, swiglu_backward's dgate and dup; cross_entropy's dz is the
 * derivative of its mean loss over the rows not ignored; embedding_backward's
 * dE that of sum(dx * E[ids]).  A reference that drops a term (the xhat mean_j(dy gamma xhat) of dx,
 * say) is off by far more than the difference's 1e-7 error. */
#include <math.h>
#include <stdlib.h>
#include "ops/layernorm.h"
#include "ops/layernorm_backward.h"
#include "ops/rmsnorm.h"
#include "ops/rmsnorm_backward.h"
#include "ops/softmax_backward.h"
#include "ops/swiglu_backward.h"
#include "ops/cross_entropy.h"
#include "ops/embedding_backward.h"
#include "tests/check.h"

enum { R = 4, C = 9 };
static const double H = 1e-4;

/* sum over the matrix of dy * layernorm(x; gamma, beta), in double. */
static double loss(const double *x, const double *gamma, const double *beta, const float *dy)
{
    double l = 0;
    for (int r = 0; r < R; ++r) {
        double m = 0, v = 0;
        for (int j = 0; j < C; ++j)
            m += x[r * C + j];
        m /= C;
        for (int j = 0; j < C; ++j)
            v += (x[r * C + j] - m) * (x[r * C + j] - m);
        const double rstd = 1 / sqrt(v / C + KB_LAYERNORM_EPS);
        for (int j = 0; j < C; ++j)
            l += dy[r * C + j] * ((x[r * C + j] - m) * rstd * gamma[j] + beta[j]);
    }
    return l;
}

/* The central difference of the loss along p[i]. */
static double derivative(double *p, int i, const double *x, const double *gamma, const double *beta,
                         const float *dy)
{
    const double keep = p[i];
    p[i] = keep + H;
    const double up = loss(x, gamma, beta, dy);
    p[i] = keep - H;
    const double down = loss(x, gamma, beta, dy);
    p[i] = keep;
    return (up - down) / (2 * H);
}

static void layernorm_backward_against_differences(void)
{
    float xf[R * C], gf[C], dy[R * C], mean[R], rstd[R];
    double x[R * C], gamma[C], beta[C];
    kb_fill_uniform(xf, R * C, 11);
    kb_fill_uniform(gf, C, 12);
    kb_fill_uniform(dy, R * C, 13);
    for (int i = 0; i < R * C; ++i)
        x[i] = xf[i];
    for (int j = 0; j < C; ++j)
        gamma[j] = gf[j], beta[j] = 0.5 - 0.1 * j;
    layernorm_backward_stats(R, C, KB_LAYERNORM_EPS, xf, mean, rstd);

    int64_t rows[R], cols[C];
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    for (int j = 0; j < C; ++j)
        cols[j] = j;
    double dx[R * C], dgamma[C], dbeta[C], worst = 0;
    layernorm_backward_reference(R, C, xf, gf, dy, mean, rstd, KB_LNB_DX, rows, R, dx);
    layernorm_backward_reference(R, C, xf, gf, dy, mean, rstd, KB_LNB_DGAMMA, cols, C, dgamma);
    layernorm_backward_reference(R, C, xf, gf, dy, mean, rstd, KB_LNB_DBETA, cols, C, dbeta);
    /* mean and rstd are fp32 as the forward saves them: a relative 1e-7
     * there is the error the comparison allows, with the difference's. */
    for (int i = 0; i < R * C; ++i)
        worst = fmax(worst, fabs(dx[i] - derivative(x, i, x, gamma, beta, dy)));
    for (int j = 0; j < C; ++j) {
        worst = fmax(worst, fabs(dgamma[j] - derivative(gamma, j, x, gamma, beta, dy)));
        worst = fmax(worst, fabs(dbeta[j] - derivative(beta, j, x, gamma, beta, dy)));
    }
    printf("layernorm_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-5);
    /* The sums over rows see every row: the last one's dy changes dbeta. */
    dy[(R - 1) * C] += 1;
    double moved[C];
    layernorm_backward_reference(R, C, xf, gf, dy, mean, rstd, KB_LNB_DBETA, cols, C, moved);
    CHECK_NEAR(moved[0], dbeta[0] + 1, 1e-12);
}

/* sum over the matrix of dy * rmsnorm(x; gamma), in double. */
static double rms_loss(const double *x, const double *gamma, const float *dy)
{
    double l = 0;
    for (int r = 0; r < R; ++r) {
        double sq = 0;
        for (int j = 0; j < C; ++j)
            sq += x[r * C + j] * x[r * C + j];
        const double rstd = 1 / sqrt(sq / C + KB_RMSNORM_EPS);
        for (int j = 0; j < C; ++j)
            l += dy[r * C + j] * x[r * C + j] * rstd * gamma[j];
    }
    return l;
}

static double rms_derivative(double *p, int i, const double *x, const double *gamma, const float *dy)
{
    const double keep = p[i];
    p[i] = keep + H;
    const double up = rms_loss(x, gamma, dy);
    p[i] = keep - H;
    const double down = rms_loss(x, gamma, dy);
    p[i] = keep;
    return (up - down) / (2 * H);
}

static void rmsnorm_backward_against_differences(void)
{
    float xf[R * C], gf[C], dy[R * C], rstd[R];
    double x[R * C], gamma[C];
    kb_fill_uniform(xf, R * C, 21);
    kb_fill_uniform(gf, C, 22);
    kb_fill_uniform(dy, R * C, 23);
    for (int i = 0; i < R * C; ++i)
        x[i] = xf[i];
    for (int j = 0; j < C; ++j)
        gamma[j] = gf[j];
    rmsnorm_backward_stats(R, C, KB_RMSNORM_EPS, xf, rstd);
    int64_t rows[R], cols[C];
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    for (int j = 0; j < C; ++j)
        cols[j] = j;
    double dx[R * C], dgamma[C], worst = 0;
    rmsnorm_backward_reference(R, C, xf, gf, dy, rstd, KB_RMB_DX, rows, R, dx);
    rmsnorm_backward_reference(R, C, xf, gf, dy, rstd, KB_RMB_DGAMMA, cols, C, dgamma);
    for (int i = 0; i < R * C; ++i)
        worst = fmax(worst, fabs(dx[i] - rms_derivative(x, i, x, gamma, dy)));
    for (int j = 0; j < C; ++j)
        worst = fmax(worst, fabs(dgamma[j] - rms_derivative(gamma, j, x, gamma, dy)));
    printf("rmsnorm_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-5);
}

/* sum over the matrix of dy * softmax(x), in double. */
static double softmax_loss(const double *x, const float *dy)
{
    double l = 0;
    for (int r = 0; r < R; ++r) {
        double max = -INFINITY, sum = 0;
        for (int j = 0; j < C; ++j)
            max = fmax(max, x[r * C + j]);
        for (int j = 0; j < C; ++j)
            sum += exp(x[r * C + j] - max);
        for (int j = 0; j < C; ++j)
            l += dy[r * C + j] * exp(x[r * C + j] - max) / sum;
    }
    return l;
}

static void softmax_backward_against_differences(void)
{
    float y[R * C], dy[R * C];
    double x[R * C], dx[R * C], worst = 0;
    kb_fill_uniform(y, R * C, 31);
    kb_fill_uniform(dy, R * C, 32);
    for (int i = 0; i < R * C; ++i)
        x[i] = y[i] *= 4.0f; /* the logits; y becomes their softmax */
    softmax_backward_probabilities(R, C, y);
    int64_t rows[R];
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    softmax_backward_reference(C, y, dy, rows, R, dx);
    for (int i = 0; i < R * C; ++i) {
        const double keep = x[i];
        x[i] = keep + H;
        const double up = softmax_loss(x, dy);
        x[i] = keep - H;
        const double down = softmax_loss(x, dy);
        x[i] = keep;
        worst = fmax(worst, fabs(dx[i] - (up - down) / (2 * H)));
    }
    /* y is stored in fp32: its rounding (2^-24 relative) bounds the error. */
    printf("softmax_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-6);
}

/* sum over the rows of dh * silu(gate) * up, gu = gate | up, in double. */
static double swiglu_loss(const double *gu, const float *dh)
{
    double l = 0;
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < C; ++j) {
            const double g = gu[r * 2 * C + j], u = gu[r * 2 * C + C + j];
            l += dh[r * C + j] * g / (1 + exp(-g)) * u;
        }
    return l;
}

static void swiglu_backward_against_differences(void)
{
    float guf[R * 2 * C], dh[R * C];
    double gu[R * 2 * C], dgu[R * 2 * C], worst = 0;
    kb_fill_uniform(guf, R * 2 * C, 41);
    kb_fill_uniform(dh, R * C, 42);
    for (int j = 0; j < C; ++j)
        guf[j] *= 16.0f; /* the op's wide gates in row 0 */
    for (int i = 0; i < R * 2 * C; ++i)
        gu[i] = guf[i];
    int64_t rows[R];
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    swiglu_backward_reference(C, KB_F32, guf, dh, rows, R, dgu);
    for (int i = 0; i < R * 2 * C; ++i) {
        const double keep = gu[i];
        gu[i] = keep + H;
        const double up = swiglu_loss(gu, dh);
        gu[i] = keep - H;
        const double down = swiglu_loss(gu, dh);
        gu[i] = keep;
        worst = fmax(worst, fabs(dgu[i] - (up - down) / (2 * H)));
    }
    printf("swiglu_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-7);
}

/* The mean over the counted rows of cross_entropy's loss, in double. */
static double ce_loss(const double *z, const int *targets)
{
    float zf[R * C];
    for (int i = 0; i < R * C; ++i)
        zf[i] = (float)z[i]; /* exact: z moves by h = 2^-13 from fp32 values */
    int64_t rows[R];
    double loss[R], l = 0;
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    cross_entropy_reference(R, C, KB_F32, zf, targets, KB_CE_LOSS, rows, R, loss);
    for (int r = 0; r < R; ++r)
        l += loss[r];
    return l / (double)cross_entropy_counted(R);
}

static void cross_entropy_against_differences(void)
{
    const double h = 0x1p-13; /* a power of two, so z +- h stays exact in fp32 */
    float zf[R * C];
    double z[R * C], dz[R * C], worst = 0;
    int targets[R] = {3, KB_CE_IGNORE, 0, C - 1};
    kb_fill_uniform(zf, R * C, 51);
    for (int i = 0; i < R * C; ++i)
        z[i] = zf[i] *= 4.0f;
    int64_t rows[R];
    for (int r = 0; r < R; ++r)
        rows[r] = r;
    CHECK(cross_entropy_ignored(1, R) && cross_entropy_counted(R) == R - 1);
    cross_entropy_reference(R, C, KB_F32, zf, targets, KB_CE_DZ, rows, R, dz);
    for (int i = 0; i < R * C; ++i) {
        const double keep = z[i];
        z[i] = keep + h;
        const double up = ce_loss(z, targets);
        z[i] = keep - h;
        const double down = ce_loss(z, targets);
        z[i] = keep;
        worst = fmax(worst, fabs(dz[i] - (up - down) / (2 * h)));
    }
    printf("cross_entropy: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-7);
    for (int j = 0; j < C; ++j)
        CHECK(dz[C + j] == 0); /* the ignored row */
}

/* sum over the tokens of dx[t] . E[ids[t]], in double. */
static double embedding_loss(const double *E, const int *ids, const float *dx)
{
    double l = 0;
    for (int t = 0; t < R; ++t)
        for (int j = 0; j < C; ++j)
            l += dx[t * C + j] * E[ids[t] * C + j];
    return l;
}

static void embedding_backward_against_differences(void)
{
    enum { V = 3 };
    const int ids[R] = {2, 0, 2, 2}; /* id 1 is never named: its row is 0 */
    float dx[R * C];
    double E[V * C], dE[V * C], worst = 0;
    kb_fill_uniform(dx, R * C, 61);
    for (int i = 0; i < V * C; ++i)
        E[i] = 0.01 * i;
    const int64_t rows[V] = {0, 1, 2};
    embedding_backward_reference(R, C, ids, dx, rows, V, dE);
    for (int i = 0; i < V * C; ++i) {
        const double keep = E[i];
        E[i] = keep + H;
        const double up = embedding_loss(E, ids, dx);
        E[i] = keep - H;
        const double down = embedding_loss(E, ids, dx);
        E[i] = keep;
        worst = fmax(worst, fabs(dE[i] - (up - down) / (2 * H)));
    }
    printf("embedding_backward: largest |reference - finite difference| %.2e\n", worst);
    CHECK(worst < 1e-9);
    CHECK(dE[C] == 0 && dE[2 * C] == (double)dx[0] + dx[2 * C] + dx[3 * C]);
}

int main(void)
{
    layernorm_backward_against_differences();
    rmsnorm_backward_against_differences();
    softmax_backward_against_differences();
    swiglu_backward_against_differences();
    cross_entropy_against_differences();
    embedding_backward_against_differences();
    return CHECK_DONE();
}
