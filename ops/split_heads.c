/* The split_heads op (ops/heads.h): a fused product's parts into heads. */
#include "ops/heads.h"

extern const kb_variant *const split_heads_variants[];

static int64_t part_elems(const kb_shape *s)
{
    return kb_mul_dims(kb_mul_dims(s->d[0], s->d[1]), kb_mul_dims(s->d[3], s->d[4]));
}
static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { return 1 + (int)s->d[2]; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    static const char *const names[KB_SPLIT_MAX_PARTS] = {"out0", "out1", "out2"};
    const int64_t B = s->d[0], T = s->d[1], P = s->d[2], H = s->d[3], D = s->d[4];
    if (i == 0)
        return kb_tensor_of("x", kb_mul_dims(part_elems(s), P), t, KB_IN, kb_mul_dims(B, T), P * H * D, 0, 0);
    return kb_tensor_of(names[i - 1], part_elems(s), t, KB_OUT, kb_mul_dims(B * H, T), D, 1, (double)D);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    kb_split_heads_args *a = args;
    *a = (kb_split_heads_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], (int)s->d[4], dev[0], {NULL}};
    for (int p = 0; p < a->P; ++p)
        a->out[p] = dev[1 + p];
}

/* Row r of part p is (b, h, t) = (r / (H T), r / T % H, r % T). */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    const int64_t T = s->d[1], P = s->d[2], H = s->d[3], D = s->d[4], p = out - 1;
    for (int r = 0; r < nrows; ++r) {
        const int64_t b = rows[r] / (H * T), h = rows[r] / T % H, tok = rows[r] % T;
        kb_widen(in[0], ((b * T + tok) * P + p) * H * D + h * D, D, t, ref + r * D);
    }
}

static const char *validate(const kb_shape *s)
{
    return s->d[2] > KB_SPLIT_MAX_PARTS ? "P, the parts of a row, is 1, 2 or 3 (q | k | v at most)" : NULL;
}

const kb_op kb_op_split_heads = {
    .name = "split_heads",
    .summary = "P parts (B, H, T, D) of x (B, T, P*H*D): a fused product's q | k | v into heads; f32 and bf16",
    .shape_fields = "BxTxPxHxD",
    .nd = 5,
    /* the transformer's self-attention (q | k | v) and cross-attention (k | v) at 32 x 128 tokens, d 512 */
    .families = (const kb_family[]){{"models", NULL, "32x128x3x8x64,32x128x2x8x64,1x2048x3x32x64", 1},
                                    {"hostile", NULL, "1x1x1x1x1,2x5x3x3x7,3x77x2x5x24"},
                                    {NULL}},
    .test_sizes = "1x1x1x1x1,2x5x3x3x7,3x77x2x5x24,1x33x1x9x64,2x17x3x4x16,1x129x3x2x128",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = split_heads_variants,
    .validate = validate,
    KB_OP_CONTRACT(kb_split_heads_args),
};
