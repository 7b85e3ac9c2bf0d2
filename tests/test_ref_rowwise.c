/* The row-wise references on hand-computed rows, including the numerics
 * each op's header promises. */
#include <math.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "ops/add_layernorm.h"
#include "ops/add_relu.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/posenc.h"
#include "ops/rmsnorm.h"
#include "ops/softmax.h"
#include "tests/check.h"

static const int64_t row0[] = {0};

static void softmax_rows(void)
{
    double y[4];
    /* Shift-invariant: [1000, 1001] -> [1/(1+e), e/(1+e)] = [0.269, 0.731]. */
    const float big[] = {1000, 1001};
    softmax_reference_rows(2, KB_F32, big, row0, 1, y);
    CHECK_NEAR(y[0], 1 / (1 + exp(1.0)), 1e-15);
    CHECK_NEAR(y[1], exp(1.0) / (1 + exp(1.0)), 1e-15);

    /* -inf (masked) entries give 0; the rest renormalize: [0, -inf, 0] -> [0.5, 0, 0.5]. */
    const float masked[] = {0, -INFINITY, 0};
    softmax_reference_rows(3, KB_F32, masked, row0, 1, y);
    CHECK(y[0] == 0.5 && y[1] == 0 && y[2] == 0.5);

    /* An all -inf row gives zeros, by convention, not NaN. */
    const float all_masked[] = {-INFINITY, -INFINITY, -INFINITY};
    softmax_reference_rows(3, KB_F32, all_masked, row0, 1, y);
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 0);

    /* C = 1 gives 1; rows are picked by index. */
    const float two_rows[] = {3, -7};
    const int64_t second[] = {1};
    softmax_reference_rows(1, KB_F32, two_rows, second, 1, y);
    CHECK(y[0] == 1);
}

static void layernorm_rows(void)
{
    double y[4];
    /* x = [1 2 3 4]: mean 2.5, biased variance 1.25. */
    const float x[] = {1, 2, 3, 4}, g[] = {1, 1, 2, 1}, b[] = {0, 0, 0, 10};
    layernorm_reference_rows(4, 0.0, KB_F32, x, g, b, row0, 1, y);
    double s = sqrt(1.25);
    CHECK_NEAR(y[0], -1.5 / s, 1e-12);
    CHECK_NEAR(y[1], -0.5 / s, 1e-12);
    CHECK_NEAR(y[2], 2 * 0.5 / s, 1e-12);
    CHECK_NEAR(y[3], 1.5 / s + 10, 1e-12);

    /* Constant rows and C = 1 give beta, finite. */
    const float flat[] = {7, 7, 7, 7}, g1[] = {1, 1, 1, 1}, b1[] = {0.5f, 0.5f, 0.5f, 0.5f};
    layernorm_reference_rows(4, KB_LAYERNORM_EPS, KB_F32, flat, g1, b1, row0, 1, y);
    CHECK(y[0] == 0.5 && y[3] == 0.5);
    layernorm_reference_rows(1, KB_LAYERNORM_EPS, KB_F32, flat, g1, b1, row0, 1, y);
    CHECK(y[0] == 0.5);

    /* Mean 1e4, variance 1e-2: [1e4 - 0.1, 1e4 + 0.1] normalizes to about -1, +1. */
    const float offset[] = {9999.9f, 10000.1f};
    layernorm_reference_rows(2, 0.0, KB_F32, offset, g1, b1 /* beta 0.5 */, row0, 1, y);
    CHECK_NEAR(y[0], -0.5, 1e-9);
    CHECK_NEAR(y[1], 1.5, 1e-9);

    /* The planted rows: mean 1e4 with variance 1e-2, a constant row, a scaled row. */
    float planted[4 * 8];
    kb_fill_uniform(planted, 32, 3);
    layernorm_plant_rows(4, 8, planted);
    double mean = 0;
    for (int j = 0; j < 8; ++j)
        mean += planted[j] / 8.0;
    CHECK(fabs(mean - 1e4) < 1.0 && planted[8] == 0.5f && planted[15] == 0.5f);
}

static void rmsnorm_rows(void)
{
    double y[2];
    /* x = [3, 4]: mean square 12.5. */
    const float x[] = {3, 4}, g[] = {1, 2};
    rmsnorm_reference_rows(2, 0.0, KB_F32, x, g, row0, 1, y);
    CHECK_NEAR(y[0], 3 / sqrt(12.5), 1e-12);
    CHECK_NEAR(y[1], 8 / sqrt(12.5), 1e-12);
    /* Zeros stay finite thanks to eps. */
    const float z[] = {0, 0};
    rmsnorm_reference_rows(2, KB_RMSNORM_EPS, KB_F32, z, g, row0, 1, y);
    CHECK(y[0] == 0 && y[1] == 0);
}

/* add_layernorm through its op: sum = x + r, then LayerNorm of the fp32 sum. */
static void add_layernorm_rows(void)
{
    const kb_op *op = &kb_op_add_layernorm;
    kb_shape s = {2, {1, 4}, 0};
    const float x[] = {1, 1, 1, 1}, r[] = {0, 1, 2, 3}, g[] = {1, 1, 1, 1}, b[] = {0, 0, 0, 0};
    const void *in[] = {x, r, g, b, NULL, NULL};
    double y[4], sum[4];
    op->reference(&s, KB_F32, in, 4, row0, 1, y);
    op->reference(&s, KB_F32, in, 5, row0, 1, sum);
    CHECK(sum[0] == 1 && sum[3] == 4);
    double sd = sqrt(1.25 + KB_LAYERNORM_EPS);
    CHECK_NEAR(y[0], -1.5 / sd, 1e-6);
    CHECK_NEAR(y[3], 1.5 / sd, 1e-6);
}

/* posenc: the double reference against hand values, and the fp32 table
 * (what `kbench pe` prints) within the op's tolerance of it. */
static void posenc_rows(void)
{
    const int64_t pos1[] = {1}, pos4[] = {4};
    double pe[5];
    posenc_reference_rows(5, KB_POSENC_SEED_SCALE, pos1, 1, pe);
    CHECK_NEAR(pe[0], sin(1.0), 1e-15);
    CHECK_NEAR(pe[2], sin(pow(10000, -0.2)), 1e-15);
    CHECK_NEAR(pe[3], cos(pow(10000, -0.2)), 1e-15);
    CHECK_NEAR(pe[4], sin(pow(10000, -0.4)), 1e-15);
    posenc_reference_rows(5, KB_POSENC_PAPER_SCALE, pos4, 1, pe);
    CHECK_NEAR(pe[2], sin(4 * pow(10000, -0.4)), 1e-15);

    enum { T = 300, D = 33 };
    static float f32[T * D];
    static double ref[T * D];
    int64_t rows[T];
    for (int i = 0; i < T; ++i)
        rows[i] = i;
    posenc_table_f32(T, D, KB_POSENC_SEED_SCALE, f32);
    posenc_reference_rows(D, KB_POSENC_SEED_SCALE, rows, T, ref);
    kb_check c;
    kb_compare_rows(f32, KB_F32, ref, T * D, KB_MATH_F32, kb_op_posenc.tensor(&(kb_shape){2, {T, D}, 0}, KB_F32, 0).reduction_len, &c);
    CHECK(c.pass);
}

/* embed: the table row of each id plus PE at the token's position;
 * add_relu: the clamp; both through their ops' reference hooks. */
static void embed_and_add_relu(void)
{
    const int ids[] = {2, 0};
    const float table[] = {10, 20, 30, 40, 50, 60}; /* V = 3, D = 2 */
    const void *in[] = {ids, table, NULL};
    kb_shape s = {4, {1, 2, 3, 2}, 0}; /* B = 1, T = 2 */
    const int64_t rows[] = {0, 1};
    double y[4];
    kb_op_embed.reference(&s, KB_F32, in, 2, rows, 2, y);
    CHECK(y[0] == 50 && y[1] == 61); /* table[2] + (sin 0, cos 0) */
    CHECK_NEAR(y[2], 10 + sin(1.0), 1e-15);
    CHECK_NEAR(y[3], 20 + cos(1.0), 1e-15);

    /* The ids the op draws are integral and inside [0, V). */
    float drawn[1000];
    kb_shape big = {4, {10, 100, 7, 8}, 0};
    kb_op_embed.fill(&big, 0, drawn, 1000, 5, 0);
    int ok = 1, seen_last = 0;
    for (int i = 0; i < 1000; ++i) {
        ok &= drawn[i] >= 0 && drawn[i] < 7 && drawn[i] == (int)drawn[i];
        seen_last |= drawn[i] == 6;
    }
    CHECK(ok && seen_last);

    const float x[] = {1, -2, 0.25f}, r[] = {0.5f, 1, -0.25f};
    const void *in2[] = {x, r, NULL};
    kb_shape s2 = {2, {1, 3}, 0};
    double z[3];
    kb_op_add_relu.reference(&s2, KB_F32, in2, 2, rows, 1, z);
    CHECK(z[0] == 1.5 && z[1] == 0 && z[2] == 0);
}

int main(void)
{
    posenc_rows();
    embed_and_add_relu();
    softmax_rows();
    layernorm_rows();
    rmsnorm_rows();
    add_layernorm_rows();
    return CHECK_DONE();
}
