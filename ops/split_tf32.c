/* The split_tf32 op: the 3xTF32 products' operand split. */
#include <math.h>
#include <string.h>
#include "ops/split_tf32.h"

extern const kb_variant *const split_tf32_variants[];

static double flops(const kb_shape *s) { return (double)s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t M = s->d[0], K = s->d[1];
    if (i == 0)
        return kb_tensor_of("x", kb_mul_dims(M, K), t, KB_IN, M, K, 0, 0);
    return kb_tensor_of("y", kb_mul_dims(M, 3 * K), t, KB_OUT, M, 3 * K, 1, 3.0 * K);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_split_tf32_args *)args = (kb_split_tf32_args){s->d[0], (int)s->d[1], dev[0], dev[1]};
}

/* Sign and magnitude: adding half of the dropped bits' unit to the
 * pattern rounds the magnitude half away from zero. */
float kb_tf32_rna(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u) /* Inf and NaN stay */
        u = (u + 0x1000u) & ~0x1fffu;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)out;
    const int64_t K = s->d[1];
    const float *x = in[0];
    for (int r = 0; r < nrows; ++r)
        for (int64_t k = 0; k < K; ++k) {
            const float v = x[rows[r] * K + k], h = kb_tf32_rna(v);
            double *y = ref + r * 3 * K + k;
            y[0] = y[K] = h;
            y[2 * K] = (double)v - h;
        }
}

/* Row 0: ties, halfway between two tf32 numbers near 1 and near 2^-6. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)i, (void)quirks;
    static const float ties[4] = {1.0f + 0x1p-11f, -(1.0f + 0x1p-11f), 0x1p-6f + 0x1p-17f, -(0x1p-6f + 0x1p-17f)};
    kb_fill_uniform(x, n, seed);
    for (int64_t k = 0; s->d[0] >= 2 && k < s->d[1]; ++k)
        x[k] = ties[k % 4];
}

const kb_op kb_op_split_tf32 = {
    .name = "split_tf32",
    .summary = "y = [h h l] per row, h = tf32(x), l = x - h: the 3xtf32 products' operand split, fp32",
    .shape_fields = "MxK",
    .nd = 2,
    /* the fp32 transformer's linear inputs at 32 x 128 tokens: d 512 and the FFN's 2048 */
    .families = (const kb_family[]){{"transformer", "K", "4096x512,4096x2048", 1},
                                    {"hostile", NULL, "1x1,3x5,1000x1001"},
                                    {NULL}},
    .test_sizes = "1x1,2x3,3x5,33x1000,4096x512,7x2049",
    .baseline = {[KB_F32] = "naive"},
    .variants = split_tf32_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_split_tf32_args),
};
