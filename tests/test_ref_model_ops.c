/* The references of the ops the models' kernels became, through each op's
 * contract (its tensors per dtype, bind and reference), on small
 * hand-computed cases: the storage dtypes of every tensor, the layouts,
 * and the conventions each op's header promises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/add.h"
#include "ops/argmax.h"
#include "ops/decode.h"
#include "ops/bias.h"
#include "ops/embed_t.h"
#include "ops/gather.h"
#include "ops/heads.h"
#include "ops/linear.h"
#include "ops/mask.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/split_tf32.h"
#include "ops/swiglu.h"
#include "ops/transpose.h"
#include "tests/check.h"

static const int64_t row0[] = {0}, row1[] = {1};

/* Reference rows of output tensor `out`, from host inputs `in`. */
static void ref(const kb_op *op, const char *shape, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                int nrows, double *y)
{
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(op, shape, &s, err, sizeof err) == 0);
    op->reference(&s, t, in, out, rows, nrows, y);
}

/* The bf16 form reads x and gamma as fp32 (the residual stream); y alone is bf16. */
static void rmsnorm_bf16(void)
{
    kb_shape s = {2, {1, 2}, 0};
    CHECK(kb_op_rmsnorm.tensor(&s, KB_BF16, 0).dtype == KB_F32);
    CHECK(kb_op_rmsnorm.tensor(&s, KB_BF16, 1).dtype == KB_F32);
    CHECK(kb_op_rmsnorm.tensor(&s, KB_BF16, 2).dtype == KB_BF16);
    const float x[] = {3, 4}, g[] = {1, 2};
    const void *in[] = {x, g, NULL};
    double y[2];
    ref(&kb_op_rmsnorm, "1x2", KB_BF16, in, 2, row0, 1, y);
    const double r = 1 / sqrt(12.5 + KB_RMSNORM_EPS);
    CHECK_NEAR(y[0], 3 * r, 1e-12);
    CHECK_NEAR(y[1], 8 * r, 1e-12);
}

/* Row 1 of a 2 x 2 gu | up: gates 0 and -2, ups 3 and 5, in bf16 storage. */
static void swiglu_rows(void)
{
    const float gu[] = {9, 9, 9, 9, 0, -2, 3, 5};
    uint16_t gu16[8];
    for (int i = 0; i < 8; ++i)
        gu16[i] = kb_float_to_bf16(gu[i]);
    const void *in[] = {gu16, NULL};
    double h[2];
    ref(&kb_op_swiglu, "2x2", KB_BF16, in, 1, row1, 1, h);
    CHECK(h[0] == 0); /* silu(0) = 0 */
    CHECK_NEAR(h[1], -2 / (1 + exp(2.0)) * 5, 1e-12);
    const void *f32[] = {gu, NULL};
    ref(&kb_op_swiglu, "2x2", KB_F32, f32, 1, row0, 1, h);
    CHECK_NEAR(h[0], 9 / (1 + exp(-9.0)) * 9, 1e-12);
}

/* Eight values 0..7 (or 0..11): every element names where it came from. */
static void heads_layout(void)
{
    float x[12];
    for (int i = 0; i < 12; ++i)
        x[i] = (float)i;
    const void *in[] = {x, NULL, NULL, NULL};
    double y[4];
    /* merge 1x2x2x2: token 1 is head 0's row 1 (2, 3), then head 1's (6, 7) */
    ref(&kb_op_merge_heads, "1x2x2x2", KB_F32, in, 1, row1, 1, y);
    CHECK(y[0] == 2 && y[1] == 3 && y[2] == 6 && y[3] == 7);
    /* split 1x2x3x1x2: part 2 (v) of token 1 is x[10], x[11] */
    ref(&kb_op_split_heads, "1x2x3x1x2", KB_F32, in, 3, row1, 1, y);
    CHECK(y[0] == 10 && y[1] == 11);
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(&kb_op_split_heads, "1x2x3x1x2", &s, err, sizeof err) == 0 &&
          kb_op_split_heads.ntensors(&s) == 4);
    CHECK(kb_parse_shape(&kb_op_split_heads, "1x2x4x1x2", &s, err, sizeof err) != 0); /* at most q | k | v */
}

/* One token at position 1 (P = 1), one head of each kind, D = 2: the angle is 1. */
static void rope_rows(void)
{
    const float qkv[] = {1, 0, 0, 1, 5, 6}, k[] = {7, 8, -1, -1}, v[] = {9, 10, -1, -1};
    const void *in[] = {qkv, NULL, NULL, NULL, k, v};
    double y[4];
    ref(&kb_op_rope, "1x1x1x2x1", KB_F32, in, 3, row0, 1, y); /* q */
    CHECK_NEAR(y[0], cos(1.0), 1e-15);
    CHECK_NEAR(y[1], sin(1.0), 1e-15);
    const int64_t both[] = {0, 1};
    ref(&kb_op_rope, "1x1x1x2x1", KB_F32, in, 4, both, 2, y); /* k: row 0 kept, row 1 the turned key */
    CHECK(y[0] == 7 && y[1] == 8);
    CHECK_NEAR(y[2], -sin(1.0), 1e-15);
    CHECK_NEAR(y[3], cos(1.0), 1e-15);
    ref(&kb_op_rope, "1x1x1x2x1", KB_F32, in, 5, both, 2, y); /* v: copied, not turned */
    CHECK(y[0] == 9 && y[1] == 10 && y[2] == 5 && y[3] == 6);
    /* The derived tables at D = 4: theta^(-2i/D) = 1, 1/100; position 2's (cos, sin). */
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(&kb_op_rope, "1x1x1x4x2", &s, err, sizeof err) == 0);
    CHECK(kb_parse_shape(&kb_op_rope, "1x1x1x3", &s, err, sizeof err) != 0); /* D odd */
    CHECK(kb_parse_shape(&kb_op_rope, "1x1x1x4x2", &s, err, sizeof err) == 0);
    float inv_freq[2], cs[3 * 4];
    void *host[] = {NULL, inv_freq, cs, NULL, NULL, NULL};
    kb_op_rope.prepare(&s, KB_F32, host);
    CHECK(inv_freq[0] == 1.0f && inv_freq[1] == 0.01f);
    CHECK(cs[2 * 2 * 2 + 2] == (float)cos(0.02) && cs[2 * 2 * 2 + 3] == (float)sin(0.02));
}

/* Two tokens of a 3 x 2 table: rows by id, widened from bf16; the
 * transposed table's columns, scaled by sqrt(D), plus pe. */
static void embeddings(void)
{
    const int ids[] = {2, 0};
    const float table[] = {1, 2, 3, 4, 5.5f, -6}, table_t[] = {1, 3, 5.5f, 2, 4, -6}, pe[] = {0, 0, 10, 20};
    uint16_t table16[6];
    for (int i = 0; i < 6; ++i)
        table16[i] = kb_float_to_bf16(table[i]);
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(&kb_op_gather, "2x3x2", &s, err, sizeof err) == 0);
    CHECK(kb_op_gather.tensor(&s, KB_BF16, 2).dtype == KB_F32 && kb_op_gather.tensor(&s, KB_BF16, 0).dtype == KB_I32);
    const void *in[] = {ids, table16, NULL};
    double x[2];
    ref(&kb_op_gather, "2x3x2", KB_BF16, in, 2, row0, 1, x);
    CHECK(x[0] == 5.5 && x[1] == -6);
    const void *in_t[] = {ids, table_t, pe, NULL};
    ref(&kb_op_embed_t, "2x3x2", KB_F32, in_t, 3, row1, 1, x);
    CHECK_NEAR(x[0], sqrt(2.0) * 1 + 10, 1e-6);
    CHECK_NEAR(x[1], sqrt(2.0) * 2 + 20, 1e-6);
}

/* The first largest wins; the planted rows are what the header says. */
static void argmax_rows(void)
{
    const float x[] = {1, 3, 3, -5, 0.25f, 0.5f, 0.5f, -1};
    const void *in[] = {x, NULL};
    const int64_t both[] = {0, 1};
    double y[2];
    ref(&kb_op_argmax, "2x4", KB_F32, in, 1, both, 2, y);
    CHECK(y[0] == 1 && y[1] == 1);
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(&kb_op_argmax, "2x7", &s, err, sizeof err) == 0);
    float f[14];
    kb_op_argmax.fill(&s, 0, f, 14, 5, 0);
    ref(&kb_op_argmax, "2x7", KB_F32, (const void *[]){f, NULL}, 1, both, 2, y);
    CHECK(y[0] == 0 && y[1] == 3);
}

/* The basic stage's small ops on a 2 x 3 matrix 0..5. */
static void basic_ops(void)
{
    const float x[] = {0, 1, 2, 3, 4, 5}, b[] = {-4, 0, 1};
    const void *in[] = {x, NULL};
    double y[6];
    ref(&kb_op_transpose, "2x3", KB_F32, in, 1, (const int64_t[]){2}, 1, y); /* row 2 of x^T: x's column 2 */
    CHECK(y[0] == 2 && y[1] == 5);
    /* 2 x 3, bottom right: query 0 sees keys 0, 1; query 1 all three */
    ref(&kb_op_mask, "2x3", KB_F32, in, 0, (const int64_t[]){0, 1}, 2, y);
    CHECK(y[0] == 0 && y[1] == 1 && y[2] == KB_MASK_CHECKED_VALUE && y[3] == 3 && y[5] == 5);
    ref(&kb_op_mask, "3x2", KB_F32, in, 0, (const int64_t[]){0}, 1, y); /* more queries than keys: none seen */
    CHECK(y[0] == KB_MASK_CHECKED_VALUE && y[1] == KB_MASK_CHECKED_VALUE);
    kb_shape s;
    char err[256];
    CHECK(kb_parse_shape(&kb_op_mask, "4x4", &s, err, sizeof err) == 0 && kb_op_mask.bytes(&s, KB_F32) == 4 * 6);
    CHECK(kb_parse_shape(&kb_op_mask, "5x2", &s, err, sizeof err) == 0 && kb_op_mask.bytes(&s, KB_F32) == 4 * 7);
    const void *sum[] = {x, x + 3, NULL};
    ref(&kb_op_add, "3", KB_F32, sum, 2, row0, 1, y);
    CHECK(y[0] == 3 && y[1] == 5 && y[2] == 7);
    const void *biased[] = {b, x};
    ref(&kb_op_bias, "2x3r", KB_F32, biased, 1, row1, 1, y); /* relu(3 - 4, 4 + 0, 5 + 1) */
    CHECK(y[0] == 0 && y[1] == 4 && y[2] == 6);
    ref(&kb_op_bias, "2x3", KB_F32, biased, 1, row0, 1, y);
    CHECK(y[0] == -4 && y[1] == 1 && y[2] == 3);
}

/* tf32 keeps 10 fraction bits; a tie rounds away from zero. */
static void tf32_split(void)
{
    CHECK(kb_tf32_rna(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);
    CHECK(kb_tf32_rna(-(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f));
    CHECK(kb_tf32_rna(1.0f + 0x1p-12f) == 1.0f);
    CHECK(kb_tf32_rna(1.0f + 3 * 0x1p-12f) == 1.0f + 0x1p-10f);
    const float x[] = {1.0f + 0x1p-12f, 0.1f};
    const void *in[] = {x, NULL};
    double y[6];
    ref(&kb_op_split_tf32, "1x2", KB_F32, in, 1, row0, 1, y);
    CHECK(y[0] == 1 && y[2] == 1 && y[4] == 0x1p-12);
    CHECK(y[1] == y[3] && y[1] + y[5] == (double)0.1f && y[5] != 0);
}

static void to_bf16(const float *f, uint16_t *b, int n)
{
    for (int i = 0; i < n; ++i)
        b[i] = kb_float_to_bf16(f[i]);
}

/* y += x W^T with W [out, in], y fp32. */
static void linear_rows(void)
{
    const float x[] = {1, 2}, w[] = {1, 0, 0.5f, -1}, y[] = {10, 20};
    uint16_t x16[2], w16[4];
    to_bf16(x, x16, 2);
    to_bf16(w, w16, 4);
    const void *in[] = {x16, w16, y};
    double out[2];
    ref(&kb_op_linear, "1x2x2", KB_BF16, in, 2, row0, 1, out);
    CHECK(out[0] == 11 && out[1] == 18.5);
}

/* x = (3, 4), g = 1: xn = bf16(3 r, 4 r), r = 1/sqrt(12.5 + eps), is
 * (217/256, 145/128): the decode ops' input, rounded as the contract says. */
static const float dx[] = {3, 4}, dg[] = {1, 1};
static const double xn0 = 217.0 / 256, xn1 = 145.0 / 128;

static double silu(double g) { return g / (1 + exp(-g)); }

static void decode_rows(void)
{
    double xn[2];
    kb_decode_norm(dx, dg, 2, KB_DECODE_EPS, xn);
    CHECK(xn[0] == xn0 && xn[1] == xn1);
    double y[8];
    /* gate_up 1x2: gate row (1, 0), up row (0, 1) */
    const float gu[] = {1, 0, 0, 1};
    uint16_t gu16[4];
    to_bf16(gu, gu16, 4);
    ref(&kb_op_gate_up, "1x2", KB_BF16, (const void *[]){dx, dg, gu16, NULL}, 3, row0, 1, y);
    CHECK_NEAR(y[0], silu(xn0) * xn1, 1e-15);

    /* lm_head 3x2: logits (xn0, xn1, xn0 + xn1), the pick 2; state (7, 3, 11)
     * becomes (8, 4, 2), out[3] = 2, keep's row 3 the logits */
    const float head[] = {1, 0, 0, 1, 1, 1};
    uint16_t head16[6];
    to_bf16(head, head16, 6);
    int state[] = {7, 3, 11}, out[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    float keep[8 * 3] = {0};
    keep[1] = 5;
    const void *in[] = {dx, dg, head16, NULL, state, out, keep};
    ref(&kb_op_lm_head, "3x2", KB_BF16, in, 3, (const int64_t[]){0, 1, 2}, 3, y);
    CHECK(y[0] == xn0 && y[1] == xn1 && y[2] == xn0 + xn1);
    ref(&kb_op_lm_head, "3x2", KB_BF16, in, 4, row0, 1, y);
    CHECK(y[0] == 8 && y[1] == 4 && y[2] == 2);
    ref(&kb_op_lm_head, "3x2", KB_BF16, in, 5, row0, 1, y);
    CHECK(y[3] == 2 && y[2] == 2 && y[4] == 4);
    ref(&kb_op_lm_head, "3x2", KB_BF16, in, 6, (const int64_t[]){1, 9, 11}, 3, y);
    CHECK(y[0] == 5 && y[1] == xn0 && y[2] == xn0 + xn1);

    /* qkv_rope 2x1x1x2x1: rows q (1, 0), (0, 1); k (1, 0), (0, 0); v (0, 1), (1, 1);
     * position 1, angle 1 */
    const float w[] = {1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1};
    uint16_t w16[12], kc[4], vc[4];
    to_bf16(w, w16, 12);
    to_bf16((const float[]){7, 8, 0, 0}, kc, 4);
    to_bf16((const float[]){9, 10, 0, 0}, vc, 4);
    const void *qin[] = {dx, dg, w16, NULL, NULL, NULL, kc, vc};
    const double c = cos(1.0), sn = sin(1.0);
    ref(&kb_op_qkv_rope, "2x1x1x2x1", KB_BF16, qin, 5, row0, 1, y);
    CHECK_NEAR(y[0], xn0 * c - xn1 * sn, 1e-15);
    CHECK_NEAR(y[1], xn1 * c + xn0 * sn, 1e-15);
    ref(&kb_op_qkv_rope, "2x1x1x2x1", KB_BF16, qin, 6, (const int64_t[]){0, 1}, 2, y);
    CHECK(y[0] == 7 && y[1] == 8);
    CHECK_NEAR(y[2], xn0 * c, 1e-15);
    CHECK_NEAR(y[3], xn0 * sn, 1e-15);
    ref(&kb_op_qkv_rope, "2x1x1x2x1", KB_BF16, qin, 7, row1, 1, y);
    CHECK(y[0] == xn1 && y[1] == xn0 + xn1);
}

int main(void)
{
    linear_rows();
    decode_rows();
    tf32_split();
    basic_ops();
    embeddings();
    argmax_rows();
    rope_rows();
    heads_layout();
    rmsnorm_bf16();
    swiglu_rows();
    return CHECK_DONE();
}
