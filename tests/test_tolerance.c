/* The tolerance policy: what passes, what fails, and how it scales. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "ops/matmul.h"
#include "tests/check.h"

static kb_check compare(const float *out, const double *ref, int n, kb_math m, int64_t L)
{
    kb_check c;
    kb_compare_rows(out, KB_F32, ref, n, m, L, &c);
    return c;
}

/* A bf16 matmul of `rows` x N x K as the harness runs it: inputs uniform in
 * [-1, 1] rounded to bf16, the reference in double from those, and a GPU-like
 * output, accumulated in fp32 in k order and rounded to bf16, skipping k in
 * [drop_from, drop_to).  Returns the largest |out - ref| / tolerance; c
 * receives kb_compare_rows's verdict. */
enum { BF_ROWS = 8, BF_N = 256, K_TILE = 32 };

static double bf16_matmul_ratio(int K, int drop_from, int drop_to, kb_check *c)
{
    uint16_t *A = malloc((size_t)BF_ROWS * K * sizeof *A), *B = malloc((size_t)K * BF_N * sizeof *B);
    float *tmp = malloc((size_t)K * BF_N * sizeof *tmp);
    static uint16_t C[BF_ROWS * BF_N];
    static double ref[BF_ROWS * BF_N];
    int64_t rows[BF_ROWS];
    kb_fill_uniform(tmp, (int64_t)BF_ROWS * K, 11u + (uint64_t)K);
    for (int64_t i = 0; i < (int64_t)BF_ROWS * K; ++i)
        A[i] = kb_float_to_bf16(tmp[i]);
    kb_fill_uniform(tmp, (int64_t)K * BF_N, 12u + (uint64_t)K);
    for (int64_t i = 0; i < (int64_t)K * BF_N; ++i)
        B[i] = kb_float_to_bf16(tmp[i]);
    for (int r = 0; r < BF_ROWS; ++r)
        rows[r] = r;
    matmul_reference_rows(BF_ROWS, BF_N, K, KB_BF16, A, B, rows, BF_ROWS, ref);
    for (int r = 0; r < BF_ROWS; ++r)
        for (int j = 0; j < BF_N; ++j) {
            float acc = 0;
            for (int k = 0; k < K; ++k)
                if (k < drop_from || k >= drop_to)
                    acc += kb_bf16_to_float(A[(size_t)r * K + k]) * kb_bf16_to_float(B[(size_t)k * BF_N + j]);
            C[r * BF_N + j] = kb_float_to_bf16(acc);
        }
    double worst = 0;
    for (int i = 0; i < BF_ROWS * BF_N; ++i)
        worst = fmax(worst, fabs(kb_bf16_to_float(C[i]) - ref[i]) / kb_tolerance(KB_MATH_BF16, K, ref[i]));
    kb_compare_rows(C, KB_BF16, ref, BF_ROWS * BF_N, KB_MATH_BF16, K, c);
    free(A);
    free(B);
    free(tmp);
    return worst;
}

/* The bf16 bound is loose enough for fp32 accumulation and bf16 output
 * rounding, yet a matmul that misses one K-tile of 32 fails at every K:
 * the missing terms are ~sqrt(32/9) = 1.9 against ~|ref|/32 with |ref| ~
 * sqrt(K/9), so even at K = 8192 most elements are over.  Prints the
 * margins: the worst correct ratio, and for the broken outputs the smallest
 * worst ratio and the smallest share of elements over. */
static void bf16_matmul_catches_a_dropped_tile(void)
{
    double worst_ok = 0, least_broken = INFINITY, least_share = 1;
    kb_check c;
    for (int K = 64; K <= 8192; K *= 2) {
        for (int odd = 0; odd < 2; ++odd) {
            int k = K + odd * 33, tile = k / 2 / K_TILE * K_TILE;
            double ok = bf16_matmul_ratio(k, k, k, &c);
            CHECK(c.pass && ok < 1);
            worst_ok = fmax(worst_ok, ok);
            double broken = bf16_matmul_ratio(k, tile, tile + K_TILE, &c);
            CHECK(!c.pass && broken > 1);
            least_broken = fmin(least_broken, broken);
            least_share = fmin(least_share, (double)c.bad_elems / (BF_ROWS * BF_N));
        }
    }
    printf("bf16 matmul, K 64..8225: correct max err/tol %.3f; a dropped K-tile of %d: max err/tol >= %.1f, "
           ">= %.0f%% of elements over\n", worst_ok, K_TILE, least_broken, 100 * least_share);
}

/* An fp8 matmul's row as Hopper's tensor cores would sum it: e4m3 inputs
 * uniform in [-1, 1], products exact, summed by an accumulator that
 * truncates to 14 significant bits, its partial sums added into fp32
 * every `promote` of K (0: never), skipping k in [drop, drop + 128), the
 * result in fp32.  Returns the largest |out - ref| / tolerance over the
 * row's N outputs; c receives kb_compare_rows's verdict. */
enum { F8_N = 512, F8_BLOCK = 128 };

static double truncate14(double x)
{
    int e;
    const double m = frexp(x, &e);
    return ldexp(trunc(ldexp(m, 14)), e - 14);
}

static double fp8_row_ratio(int K, int promote, int drop, kb_check *c)
{
    float *a = malloc((size_t)K * sizeof *a), *b = malloc((size_t)K * F8_N * sizeof *b);
    uint8_t *q = malloc((size_t)K * F8_N);
    static float out[F8_N];
    static double ref[F8_N];
    kb_fill_uniform(a, K, 21u + (uint64_t)K);
    kb_fill_uniform(b, (int64_t)K * F8_N, 22u + (uint64_t)K);
    kb_store_floats(KB_E4M3, a, q, K); /* the inputs as e4m3 holds them */
    for (int k = 0; k < K; ++k)
        a[k] = (float)kb_tensor_value(q, k, KB_E4M3);
    kb_store_floats(KB_E4M3, b, q, (int64_t)K * F8_N);
    for (int64_t i = 0; i < (int64_t)K * F8_N; ++i)
        b[i] = (float)kb_tensor_value(q, i, KB_E4M3);
    double worst = 0;
    for (int j = 0; j < F8_N; ++j) {
        double exact = 0, part = 0;
        float total = 0;
        for (int k = 0; k < K; ++k) {
            const double p = (double)a[k] * b[(size_t)k * F8_N + j];
            exact += p;
            if (k < drop || k >= drop + F8_BLOCK)
                part = truncate14(part + p);
            if (promote && (k + 1) % promote == 0)
                total += (float)part, part = 0;
        }
        out[j] = total + (float)part;
        ref[j] = exact;
        worst = fmax(worst, fabs(out[j] - ref[j]) / kb_tolerance(KB_MATH_FP8, K, ref[j]));
    }
    kb_compare_rows(out, KB_F32, ref, F8_N, KB_MATH_FP8, K, c);
    free(a);
    free(b);
    free(q);
    return worst;
}

/* The fp8 bound: a kernel that promotes every 128 passes at every K; one
 * that never promotes fails from K = 4096, and one that drops a block of
 * 128 fails at every K.  Prints the margins. */
static void fp8_matmul_bound(void)
{
    double worst_ok = 0, least_unpromoted = INFINITY, least_dropped = INFINITY;
    kb_check c;
    for (int K = 256; K <= 16384; K *= 2)
        for (int odd = 0; odd < 2; ++odd) {
            const int k = K + odd * 77;
            const double ok = fp8_row_ratio(k, F8_BLOCK, -F8_BLOCK, &c);
            CHECK(c.pass && ok < 1);
            worst_ok = fmax(worst_ok, ok);
            const double dropped = fp8_row_ratio(k, F8_BLOCK, k / 2 / F8_BLOCK * F8_BLOCK, &c);
            CHECK(!c.pass && dropped > 1);
            least_dropped = fmin(least_dropped, dropped);
            if (K >= 4096) {
                const double unpromoted = fp8_row_ratio(k, 0, -F8_BLOCK, &c);
                CHECK(!c.pass && unpromoted > 1);
                least_unpromoted = fmin(least_unpromoted, unpromoted);
            }
        }
    printf("fp8 matmul, K 256..16461, 14-bit truncating accumulator: promoted every %d max err/tol %.3f; "
           "never promoted (K >= 4096) >= %.1f; a dropped block of %d >= %.1f\n", F8_BLOCK, worst_ok,
           least_unpromoted, F8_BLOCK, least_dropped);
}

int main(void)
{
    /* Scales with the reduction length, and looser for lower precision. */
    CHECK(kb_tolerance(KB_MATH_F32, 4096, 0) > kb_tolerance(KB_MATH_F32, 64, 0));
    CHECK(kb_tolerance(KB_MATH_TF32, 4096, 0) > 100 * kb_tolerance(KB_MATH_F32, 4096, 0));
    CHECK(kb_tolerance(KB_MATH_BF16, 64, 1) > 100 * kb_tolerance(KB_MATH_F32, 64, 1));
    /* bf16 inputs reach the reference already rounded: its bound does not grow with sqrt(L). */
    CHECK(kb_tolerance(KB_MATH_BF16, 4096, 0) < 2 * kb_tolerance(KB_MATH_BF16, 1, 0));
    CHECK(kb_tolerance(KB_MATH_F32, 16, 100) > kb_tolerance(KB_MATH_F32, 16, 1));
    /* 3xtf32 promises fp32 accuracy and gets no slack for it. */
    CHECK(kb_tolerance(KB_MATH_3XTF32, 4096, 1) == kb_tolerance(KB_MATH_F32, 4096, 1));
    CHECK(kb_rel_l2_tolerance(KB_MATH_3XTF32, 64) == kb_rel_l2_tolerance(KB_MATH_F32, 64));

    /* Integers compare exactly, even under bf16's relative bound: a token
     * id off by one of 49152 fails (bf16's 8 * 2^-8 relative would pass it). */
    const int32_t ids[2] = {49151, 7}, off[2] = {49150, 7};
    const double want[2] = {49151, 7};
    kb_check ic;
    kb_compare_rows(ids, KB_I32, want, 2, KB_MATH_BF16, 1, &ic);
    CHECK(ic.pass && ic.max_abs_err == 0);
    kb_compare_rows(off, KB_I32, want, 2, KB_MATH_BF16, 1, &ic);
    CHECK(!ic.pass && ic.bad_elems == 1);
    double ia, ir;
    kb_tolerance_terms_for(KB_MATH_F32, KB_I32, 4096, &ia, &ir);
    CHECK(ia == 0 && ir == 0);

    /* fp32 arithmetic writing a bf16 copy (adamw's parameters): the copy is
     * checked at one bf16 rounding, the same value stored in fp32 at fp32's. */
    const double exact[2] = {1.0 + 0x1p-9 * 0.9, -0.3};
    const uint16_t rounded[2] = {kb_float_to_bf16((float)exact[0]), kb_float_to_bf16((float)exact[1])};
    const float widened[2] = {kb_bf16_to_float(rounded[0]), kb_bf16_to_float(rounded[1])};
    kb_check bc;
    kb_compare_rows(rounded, KB_BF16, exact, 2, KB_MATH_F32, 1, &bc);
    CHECK(bc.pass);
    kb_compare_rows(widened, KB_F32, exact, 2, KB_MATH_F32, 1, &bc);
    CHECK(!bc.pass);
    CHECK(kb_rel_l2_tolerance_for(KB_MATH_F32, KB_BF16, 1) >= kb_rel_l2_tolerance(KB_MATH_BF16, 1));
    /* Outputs as fine as the arithmetic's keep its bound. */
    CHECK(kb_rel_l2_tolerance_for(KB_MATH_BF16, KB_BF16, 64) == kb_rel_l2_tolerance(KB_MATH_BF16, 64));
    CHECK(kb_rel_l2_tolerance_for(KB_MATH_TF32, KB_F32, 64) == kb_rel_l2_tolerance(KB_MATH_TF32, 64));
    kb_tolerance_terms_for(KB_MATH_BF16, KB_F16, 64, &ia, &ir);
    double ba, br;
    kb_tolerance_terms(KB_MATH_BF16, 64, &ba, &br);
    CHECK(ia == ba && ir == br);

    /* f32, K = 4096: an fp32-rounding-sized error passes, a dropped term (~0.25) fails. */
    double ref[3] = {21.0, -3.5, 0.125};
    float ok[3] = {21.0f + 2e-4f, -3.5f, 0.125f};
    kb_check c = compare(ok, ref, 3, KB_MATH_F32, 4096);
    CHECK(c.pass && c.bad_elems == 0);
    CHECK_NEAR(c.max_abs_err, 2e-4, 1e-5);

    float dropped[3] = {21.0f - 0.25f, -3.5f, 0.125f};
    c = compare(dropped, ref, 3, KB_MATH_F32, 4096);
    CHECK(!c.pass && c.bad_elems == 1);

    /* The same error is within TF32's tolerance at that length. */
    float tf32_err[3] = {21.0f + 0.05f, -3.5f, 0.125f};
    CHECK(!compare(tf32_err, ref, 3, KB_MATH_F32, 4096).pass);
    CHECK(compare(tf32_err, ref, 3, KB_MATH_TF32, 4096).pass);

    /* NaN and Inf always fail, however loose the tolerance. */
    float nan_out[3] = {21.0f, NAN, 0.125f}, inf_out[3] = {INFINITY, -3.5f, 0.125f};
    c = compare(nan_out, ref, 3, KB_MATH_BF16, 1 << 20);
    CHECK(!c.pass && c.bad_elems == 1);
    CHECK(!compare(inf_out, ref, 3, KB_MATH_BF16, 1 << 20).pass);

    /* A softmax row of C = 1024 that misses one term of its sum: every element
     * is off by 1/C relative, within the per-element bound but not the L2 bound. */
    enum { C = 1024 };
    static double sm_ref[C];
    static float sm_out[C];
    for (int i = 0; i < C; ++i) {
        sm_ref[i] = 1.0 / C;
        sm_out[i] = (float)(sm_ref[i] * (1.0 + 1.0 / C));
    }
    c = compare(sm_out, sm_ref, C, KB_MATH_F32, C);
    CHECK(c.bad_elems == 0 && !c.pass);
    for (int i = 0; i < C; ++i)
        sm_out[i] = (float)sm_ref[i];
    CHECK(compare(sm_out, sm_ref, C, KB_MATH_F32, C).pass);
    CHECK(kb_rel_l2_tolerance(KB_MATH_TF32, 64) > kb_rel_l2_tolerance(KB_MATH_F32, 64));

    /* Relative L2 error: one element off by 1 of a reference with norm 5. */
    double r2[2] = {3, 4};
    float o2[2] = {3, 5};
    c = compare(o2, r2, 2, KB_MATH_BF16, 1);
    CHECK_NEAR(c.rel_l2_err, 0.2, 1e-12);
    CHECK(!c.pass);

    bf16_matmul_catches_a_dropped_tile();
    fp8_matmul_bound();
    return CHECK_DONE();
}
