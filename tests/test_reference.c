/* The matmul, matmul_fp8 and ffn references on hand-computed products, the
 * bf16 ffn against its tolerance, and row sampling. */
#include <math.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "ops/ffn.h"
#include "ops/matmul.h"
#include "ops/matmul_fp8.h"
#include "tests/check.h"

static void hand_computed(void)
{
    /* A (2x3) = [1 2 3; 4 5 6], B (3x2) = [7 8; 9 10; 11 12] -> [58 64; 139 154] */
    const float A[] = {1, 2, 3, 4, 5, 6}, B[] = {7, 8, 9, 10, 11, 12};
    const int64_t rows[] = {0, 1};
    double C[4];
    matmul_reference_rows(2, 2, 3, KB_F32, A, B, rows, 2, C);
    CHECK(C[0] == 58 && C[1] == 64 && C[2] == 139 && C[3] == 154);

    /* Only the second row requested. */
    const int64_t second[] = {1};
    matmul_reference_rows(2, 2, 3, KB_F32, A, B, second, 1, C);
    CHECK(C[0] == 139 && C[1] == 154);
}

static void accumulates_in_double(void)
{
    /* 1e8 + 1 - 1e8 in float loses the 1; the reference must not. */
    const float A[] = {1e8f, 1.0f, -1e8f}, B[] = {1, 1, 1};
    const int64_t row0[] = {0};
    double C;
    matmul_reference_rows(1, 1, 3, KB_F32, A, B, row0, 1, &C);
    CHECK(C == 1.0);
}

/* bf16: the reference reads the stored bf16 values, exactly what the GPU
 * reads, and sums them in double; more rows than one block of the loop. */
static void bf16_from_stored_values(void)
{
    enum { R = 20, K = 3 };
    uint16_t A[R * K], B[K];
    int64_t rows[R];
    double C[R];
    for (int i = 0; i < R * K; ++i)
        A[i] = kb_float_to_bf16(i % K == 0 ? 1.0f + 0x1p-8f + 0x1p-12f : 1.0f);
    for (int k = 0; k < K; ++k)
        B[k] = kb_float_to_bf16(k == 2 ? -1.0f : 0.5f);
    for (int r = 0; r < R; ++r)
        rows[r] = R - 1 - r;
    /* (1 + 2^-7) * 0.5 + 1 * 0.5 - 1 * 1 = 2^-8: the rounded first column counts. */
    matmul_reference_rows(R, 1, K, KB_BF16, A, B, rows, R, C);
    for (int r = 0; r < R; ++r)
        CHECK(C[r] == 0x1p-8);
}

/* matmul_fp8 by hand: A (2x3) and B (2x3), both K-major, in e4m3, which
 * rounds 1.1 to 1.125 and saturates 1000 at 448; C = sa sb A B^T with the
 * op's scales 2 and 0.75 (their product 1.5):
 *   A = [1.125 -2 0.5; 448 0 1], B = [1 1 1; 0.25 -0.5 2]
 *   A B^T = [-0.375 2.28125; 449 114], times 1.5. */
static void fp8_hand_computed(void)
{
    const float af[] = {1.1f, -2, 0.5f, 1000, 0, 1}, bf[] = {1, 1, 1, 0.25f, -0.5f, 2};
    uint8_t A[6], B[6];
    kb_store_floats(KB_E4M3, af, A, 6);
    kb_store_floats(KB_E4M3, bf, B, 6);
    const int64_t rows[] = {1, 0};
    double C[4];
    matmul_fp8_reference_rows(2, 3, KB_E4M3, A, B, KB_MATMUL_FP8_SCALE_A, KB_MATMUL_FP8_SCALE_B, rows, 2, C);
    CHECK(C[0] == 1.5 * 449 && C[1] == 1.5 * 114 && C[2] == 1.5 * -0.375 && C[3] == 1.5 * 2.28125);
}

/* ffn by hand, in f32 and bf16, two tokens asked for in reverse order.
 * x0 = [1 + 2^-8 + 2^-12, 2] (bf16 stores 1 + 2^-7), x1 = [-1, 0],
 * W1 = [1 -1; 0.5 0.25], b1 = [0.5 -1], W2 = [2 -1; 3 4], b2 = [0.25 0]:
 * token 0: h = relu([2.5 + e, -1.5 - e]) = [2.5 + e, 0] with e the part of
 * x00 above 1, y = [0.25 + 2 (2.5 + e), -(2.5 + e)];
 * token 1: h = relu([-0.5, 0]) = 0 (the ReLU at exactly 0), y = b2. */
static void ffn_hand_computed(void)
{
    const float x[] = {1.0f + 0x1p-8f + 0x1p-12f, 2, -1, 0}, w1[] = {1, -1, 0.5f, 0.25f}, b1[] = {0.5f, -1},
                w2[] = {2, -1, 3, 4}, b2[] = {0.25f, 0};
    const float *f32[] = {x, w1, b1, w2, b2};
    const int n[] = {4, 4, 2, 4, 2};
    uint16_t bf[5][4];
    const int64_t rows[] = {1, 0};
    double y[4];
    for (int t = 0; t < 5; ++t)
        for (int i = 0; i < n[t]; ++i)
            bf[t][i] = kb_float_to_bf16(f32[t][i]);

    kb_ffn_args a = {.M = 2, .D = 2, .F = 2, .x = x, .w1 = w1, .b1 = b1, .w2 = w2, .b2 = b2};
    double e = 0x1p-8 + 0x1p-12;
    ffn_reference_rows(&a, KB_F32, rows, 2, y);
    CHECK(y[0] == 0.25 && y[1] == 0 && y[2] == 0.25 + 2 * (2.5 + e) && y[3] == -(2.5 + e));

    a = (kb_ffn_args){.M = 2, .D = 2, .F = 2, .x16 = bf[0], .w1_16 = bf[1], .b1_16 = bf[2], .w2_16 = bf[3],
                      .b2_16 = bf[4]};
    e = 0x1p-7; /* the stored bf16 value counts, not the float it came from */
    ffn_reference_rows(&a, KB_BF16, rows, 2, y);
    CHECK(y[0] == 0.25 && y[1] == 0 && y[2] == 0.25 + 2 * (2.5 + e) && y[3] == -(2.5 + e));
}

enum { FM = 24, FD = 256, FF = 1024 };

static double bf16_round(double v) { return kb_bf16_to_float(kb_float_to_bf16((float)v)); }

/* How an emulated bf16 layer runs: on `ranks` GPUs (1: one GPU), summing
 * the partials of the first `summed`, rounding h and y to bf16 or not, with
 * b2 or without. */
typedef struct {
    int ranks, summed, round_h, round_y, b2;
} layer;

/* y of token m as a bf16 layer computes it: fp32 sums, h rounded, each
 * GPU's partial y rounded (rank 0's with b2) and the partials summed in
 * fp32 and rounded, in rank order, as a ring of two does. */
static void emulate_token(const float *const *in, int m, layer l, double *y)
{
    float h[FF], part[FD];
    for (int f = 0; f < FF; ++f) {
        float acc = in[2][f];
        for (int d = 0; d < FD; ++d)
            acc += in[0][m * FD + d] * in[1][d * FF + f];
        h[f] = acc > 0 ? (l.round_h ? (float)bf16_round(acc) : acc) : 0;
    }
    for (int d = 0; d < FD; ++d)
        y[d] = 0;
    for (int r = 0; r < l.summed; ++r) {
        for (int d = 0; d < FD; ++d)
            part[d] = r == 0 && l.b2 ? in[4][d] : 0;
        for (int f = r * FF / l.ranks; f < (r + 1) * FF / l.ranks; ++f)
            for (int d = 0; d < FD; ++d)
                part[d] += h[f] * in[3][f * FD + d];
        for (int d = 0; d < FD; ++d)
            y[d] = l.round_y ? bf16_round((float)y[d] + (float)bf16_round(part[d])) : y[d] + part[d];
    }
}

/* Every token of an emulated layer. */
static void emulate(const float *const *in, layer l, double *y)
{
    for (int m = 0; m < FM; ++m)
        emulate_token(in, m, l, y + m * FD);
}

/* Worst |y - ref| over the bound for every token; sets the relative L2 error. */
static double worst_ratio(const double *y, const double *ref, double *rel_l2)
{
    double worst = 0, err2 = 0, ref2 = 0;
    for (int k = 0; k < FM * FD; ++k) {
        const double err = fabs(y[k] - ref[k]);
        worst = fmax(worst, err / kb_tolerance(KB_MATH_BF16, FD + FF, ref[k]));
        err2 += err * err;
        ref2 += ref[k] * ref[k];
    }
    *rel_l2 = sqrt(err2 / ref2);
    return worst;
}

/* The bf16 layer's inputs as the harness makes them (ffn's fill, rounded
 * to bf16), their reference, and emulated layers checked against it. */
static void ffn_bf16_within_tolerance(void)
{
    const kb_shape s = {.nd = 3, .d = {FM, FD, FF}};
    const int64_t n[] = {FM * FD, FD * FF, FF, FF * FD, FD};
    float *f32[5];
    uint16_t *bf[5];
    int64_t rows[FM];
    double *ref = malloc(sizeof(double) * FM * FD), *y = malloc(sizeof(double) * FM * FD), rel;
    for (int t = 0; t < 5; ++t) {
        f32[t] = malloc(sizeof(float) * n[t]);
        bf[t] = malloc(sizeof(uint16_t) * n[t]);
        kb_op_ffn.fill(&s, t, f32[t], n[t], 1000 + t, 0);
        for (int64_t i = 0; i < n[t]; ++i) { /* the emulation reads the stored values */
            bf[t][i] = kb_float_to_bf16(f32[t][i]);
            f32[t][i] = kb_bf16_to_float(bf[t][i]);
        }
    }
    for (int m = 0; m < FM; ++m)
        rows[m] = m;
    kb_op_ffn.reference(&s, KB_BF16, (const void *const[]){bf[0], bf[1], bf[2], bf[3], bf[4]}, 5, rows, FM, ref);
    const float *const *in = (const float *const *)f32;

    /* h's rounding alone: under 2^-8 rms(h) / 3 in rms (ops/ffn.h). */
    double *exact = malloc(sizeof(double) * FM * FD), err2 = 0, h2 = 0;
    emulate(in, (layer){1, 1, 0, 0, 1}, exact);
    emulate(in, (layer){1, 1, 1, 0, 1}, y);
    for (int k = 0; k < FM * FD; ++k)
        err2 += (y[k] - exact[k]) * (y[k] - exact[k]);
    for (int m = 0; m < FM; ++m)
        for (int f = 0; f < FF; ++f) {
            double acc = f32[2][f];
            for (int d = 0; d < FD; ++d)
                acc += (double)f32[0][m * FD + d] * f32[1][d * FF + f];
            h2 += acc > 0 ? acc * acc : 0;
        }
    CHECK(sqrt(err2 / (FM * FD)) < 0x1p-8 * sqrt(h2 / (FM * FF)) / 3);
    free(exact);

    /* One GPU, and two-way tensor parallel: well inside the bound. */
    for (int R = 1; R <= 2; ++R) {
        emulate(in, (layer){R, R, 1, 1, 1}, y);
        CHECK(worst_ratio(y, ref, &rel) < 0.25);
        CHECK(rel < kb_rel_l2_tolerance(KB_MATH_BF16, FD + FF) / 8);
    }
    /* A layer that misses one rank's partial, or b2, fails. */
    emulate(in, (layer){2, 1, 1, 1, 1}, y);
    CHECK(worst_ratio(y, ref, &rel) > 1 && rel > kb_rel_l2_tolerance(KB_MATH_BF16, FD + FF));
    emulate(in, (layer){2, 2, 1, 1, 0}, y);
    CHECK(worst_ratio(y, ref, &rel) > 1 && rel > kb_rel_l2_tolerance(KB_MATH_BF16, FD + FF));

    for (int t = 0; t < 5; ++t) {
        free(f32[t]);
        free(bf[t]);
    }
    free(ref);
    free(y);
}

static void row_sampling(void)
{
    int64_t *rows;
    int n = kb_pick_rows(10, 1.0, 1e9, 7, &rows);
    CHECK(n == 10);
    for (int i = 0; i < n; ++i)
        CHECK(rows[i] == i);
    free(rows);

    /* Budget for 20 rows of 8192: first, last, and distinct sorted samples. */
    n = kb_pick_rows(8192, 1000.0, 20000.0, 7, &rows);
    CHECK(n == 20);
    CHECK(rows[0] == 0 && rows[n - 1] == 8191);
    for (int i = 1; i < n; ++i)
        CHECK(rows[i] > rows[i - 1]);
    free(rows);

    /* A budget too small for even one row still checks the first and last. */
    n = kb_pick_rows(8192, 1e12, 1.0, 7, &rows);
    CHECK(n == 2 && rows[0] == 0 && rows[1] == 8191);
    free(rows);
}

static void fill_is_seeded_and_bounded(void)
{
    float a[1000], b[1000];
    kb_fill_uniform(a, 1000, 42);
    kb_fill_uniform(b, 1000, 42);
    int same = 1, zeros = 0;
    double lo = 1, hi = -1;
    for (int i = 0; i < 1000; ++i) {
        same &= a[i] == b[i];
        zeros += a[i] == 0;
        lo = fmin(lo, a[i]);
        hi = fmax(hi, a[i]);
    }
    CHECK(same);
    CHECK(zeros < 5);
    CHECK(lo >= -1 && hi <= 1 && lo < -0.9 && hi > 0.9);
    kb_fill_uniform(b, 1000, 43);
    CHECK(a[0] != b[0] || a[1] != b[1]);
}

static void bf16_rounding(void)
{
    CHECK(kb_bf16_to_float(kb_float_to_bf16(1.0f)) == 1.0f);
    /* 1 + 2^-8 is halfway between bf16 neighbours 1 and 1+2^-7: ties to even -> 1. */
    CHECK(kb_bf16_to_float(kb_float_to_bf16(1.0f + 0x1p-8f)) == 1.0f);
    CHECK(kb_bf16_to_float(kb_float_to_bf16(1.0f + 0x1p-8f + 0x1p-12f)) == 1.0f + 0x1p-7f);
    CHECK(isnan(kb_bf16_to_float(kb_float_to_bf16(NAN))));
}

int main(void)
{
    hand_computed();
    accumulates_in_double();
    bf16_from_stored_values();
    fp8_hand_computed();
    ffn_hand_computed();
    ffn_bf16_within_tolerance();
    row_sampling();
    fill_is_seeded_and_bounded();
    bf16_rounding();
    return CHECK_DONE();
}
