/* linear_cross_entropy reference: plain C11 in double from the stored bf16
 * h and W (products of bf16 values are exact in double).  A row of the
 * loss or of dh makes its row of logits; a row of dW, a column of them,
 * with each row's log-sum-exp from lse. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cross_entropy.h"
#include "ops/linear_cross_entropy.h"

#define BLOCK 16 /* token rows a thread carries through the vocabulary at once: four vectors */

static double bf16(uint16_t b)
{
    union { uint32_t u; float f; } v = {(uint32_t)b << 16};
    return v.f;
}

static double dot(int64_t D, const uint16_t *a, const uint16_t *b)
{
    double s = 0;
    for (int64_t k = 0; k < D; ++k)
        s += bf16(a[k]) * bf16(b[k]);
    return s;
}

/* z for BLOCK rows of h (hT: D x BLOCK, widened, 32-byte aligned) against
 * two rows of W (widened): four vectors of four independent sums a row of
 * W, written with the compiler's vector types because its own choice for
 * the plain loops (vectorizing over k, shuffling) ran 20 times slower; the
 * x86-64-v3 clone fuses their multiply-adds. */
typedef double v4 __attribute__((vector_size(32)));

__attribute__((target_clones("default", "arch=x86-64-v3")))
static void block_dots(int64_t D, const double *hT, const double *w0, const double *w1, double *z0, double *z1)
{
    v4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    for (int64_t k = 0; k < D; ++k) {
        const v4 *x = (const v4 *)(hT + k * BLOCK), p = {w0[k], w0[k], w0[k], w0[k]},
                 q = {w1[k], w1[k], w1[k], w1[k]};
        a0 += x[0] * p, a1 += x[1] * p, a2 += x[2] * p, a3 += x[3] * p;
        b0 += x[0] * q, b1 += x[1] * q, b2 += x[2] * q, b3 += x[3] * q;
    }
    const v4 a[4] = {a0, a1, a2, a3}, b[4] = {b0, b1, b2, b3};
    memcpy(z0, a, sizeof a);
    memcpy(z1, b, sizeof b);
}

/* Row j of W widened into wj, or zeros past the last row. */
static void widen_row(int64_t V, int64_t D, const uint16_t *w, int64_t j, double *wj)
{
    for (int64_t k = 0; k < D; ++k)
        wj[k] = j < V ? bf16(w[j * D + k]) : 0;
}

/* The online log-sum-exp of BLOCK rows, one more logit each. */
static void push(const double *z, double *m, double *s)
{
    for (int r = 0; r < BLOCK; ++r) {
        if (z[r] > m[r])
            s[r] = s[r] * exp(m[r] - z[r]) + 1, m[r] = z[r];
        else
            s[r] += exp(z[r] - m[r]);
    }
}

void linear_cross_entropy_lse(int64_t N, int64_t V, int64_t D, const uint16_t *h, const uint16_t *w, float *lse)
{
    const int64_t blocks = (N + BLOCK - 1) / BLOCK;
#pragma omp parallel
    {
        const size_t room = ((size_t)(D * BLOCK + 2 * D) * sizeof(double) + 31) / 32 * 32;
        double *hT = aligned_alloc(32, room), *w0 = hT + D * BLOCK, *w1 = w0 + D;
        if (!hT)
            abort(); /* D * 18 doubles a thread: the reference's own working memory */
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < blocks; ++b) {
            const int64_t r0 = b * BLOCK, n = N - r0 < BLOCK ? N - r0 : BLOCK;
            for (int64_t k = 0; k < D; ++k)
                for (int r = 0; r < BLOCK; ++r)
                    hT[k * BLOCK + r] = r < n ? bf16(h[(r0 + r) * D + k]) : 0;
            double m[BLOCK], s[BLOCK], z0[BLOCK], z1[BLOCK];
            for (int r = 0; r < BLOCK; ++r)
                m[r] = -INFINITY, s[r] = 0;
            for (int64_t j = 0; j < V; j += 2) {
                widen_row(V, D, w, j, w0);
                widen_row(V, D, w, j + 1, w1);
                block_dots(D, hT, w0, w1, z0, z1);
                push(z0, m, s);
                if (j + 1 < V)
                    push(z1, m, s);
            }
            for (int64_t r = 0; r < n; ++r)
                lse[r0 + r] = (float)(m[r] + log(s[r]));
        }
        free(hT);
    }
}

/* dz of one logit, given its row's log-sum-exp. */
static double dlogit(double z, double lse, int64_t j, int target, int64_t V, double inv_n)
{
    if (target == KB_CE_IGNORE)
        return 0;
    const double eps = KB_CE_SMOOTHING;
    return (exp(z - lse) - (1 - eps) * (j == target) - eps / (double)V) * inv_n;
}

/* Row r's loss, or with dh set its row of dh, from its logits. */
static double token_row(int64_t V, int64_t D, const uint16_t *hr, const uint16_t *w, int target, double inv_n,
                        double *z, double *dh)
{
    double max = -INFINITY, sum = 0, mean = 0;
    for (int64_t j = 0; j < V; ++j) {
        z[j] = dot(D, hr, w + j * D);
        max = fmax(max, z[j]);
        mean += z[j];
    }
    for (int64_t j = 0; j < V; ++j)
        sum += exp(z[j] - max);
    const double lse = max + log(sum), eps = KB_CE_SMOOTHING;
    for (int64_t c = 0; dh && c < D; ++c)
        dh[c] = 0;
    for (int64_t j = 0; dh && j < V; ++j) {
        const double g = dlogit(z[j], lse, j, target, V, inv_n);
        for (int64_t c = 0; c < D; ++c)
            dh[c] += g * bf16(w[j * D + c]);
    }
    return target == KB_CE_IGNORE ? 0 : (1 - eps) * (lse - z[target]) + eps * (lse - mean / (double)V);
}

/* Row j of dW: the column j of dz over every token against h. */
static void weight_row(int64_t N, int64_t V, int64_t D, const uint16_t *h, const uint16_t *wj, int64_t j,
                       const int *targets, const float *lse, double inv_n, double *dw)
{
    for (int64_t c = 0; c < D; ++c)
        dw[c] = 0;
    for (int64_t r = 0; r < N; ++r) {
        const double g = dlogit(dot(D, h + r * D, wj), lse[r], j, targets[r], V, inv_n);
        for (int64_t c = 0; g != 0 && c < D; ++c)
            dw[c] += g * bf16(h[r * D + c]);
    }
}

void linear_cross_entropy_reference(int64_t N, int64_t V, int64_t D, const uint16_t *h, const uint16_t *w,
                                    const int *targets, const float *lse, int which, const int64_t *rows,
                                    int nrows, double *ref)
{
    const double inv_n = 1.0 / (double)cross_entropy_counted(N);
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        if (which == KB_LCE_DW) {
            weight_row(N, V, D, h, w + r * D, r, targets, lse, inv_n, ref + k * D);
            continue;
        }
        double *z = malloc((size_t)V * sizeof *z);
        if (!z)
            abort(); /* a row of V doubles: the reference's own working memory */
        const double loss =
            token_row(V, D, h + r * D, w, targets[r], inv_n, z, which == KB_LCE_DH ? ref + k * D : NULL);
        if (which == KB_LCE_LOSS)
            ref[k] = loss;
        free(z);
    }
}
