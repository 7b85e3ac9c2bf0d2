/* The matmul reference on hand-computed products, and row sampling. */
#include <math.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "kernels/matmul.h"
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
    row_sampling();
    fill_is_seeded_and_bounded();
    bf16_rounding();
    return CHECK_DONE();
}
