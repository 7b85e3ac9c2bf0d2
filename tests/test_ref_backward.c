/* The backward ops' references against finite differences of their
 * forwards, once, on small shapes: layernorm_backward's dx, dgamma and
 * dbeta are the derivatives of the loss sum(dy * layernorm(x)) with
 * respect to x, gamma and beta (central differences in double, h = 1e-4).
 * A reference that drops a term (the xhat mean_j(dy gamma xhat) of dx, say)
 * is off by far more than the difference's 1e-7 error. */
#include <math.h>
#include <stdlib.h>
#include "ops/layernorm.h"
#include "ops/layernorm_backward.h"
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

int main(void)
{
    layernorm_backward_against_differences();
    return CHECK_DONE();
}
