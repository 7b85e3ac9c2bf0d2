/* The merge_heads op (ops/heads.h): attention's heads back to tokens. */
#include "ops/heads.h"

extern const kb_variant *const merge_heads_variants[];

static int64_t elems(const kb_shape *s) { return kb_mul_dims(kb_mul_dims(s->d[0], s->d[1]), kb_mul_dims(s->d[2], s->d[3])); }
static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t B = s->d[0], H = s->d[1], T = s->d[2], D = s->d[3];
    if (i == 0)
        return kb_tensor_of("o", elems(s), t, KB_IN, kb_mul_dims(B * H, T), D, 0, 0);
    return kb_tensor_of("y", elems(s), t, KB_OUT, kb_mul_dims(B, T), kb_mul_dims(H, D), 1, (double)H * D);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_merge_heads_args *)args =
        (kb_merge_heads_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], (int)s->d[3], dev[0], dev[1]};
}

/* Row r of y is token (b, t) = (r / T, r % T): head h's D values of o in turn. */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t H = s->d[1], T = s->d[2], D = s->d[3];
    for (int r = 0; r < nrows; ++r) {
        const int64_t b = rows[r] / T, tok = rows[r] % T;
        for (int64_t h = 0; h < H; ++h)
            kb_widen(in[0], ((b * H + h) * T + tok) * D, D, t, ref + (r * H + h) * D);
    }
}

const kb_op kb_op_merge_heads = {
    .name = "merge_heads",
    .summary = "y (B, T, H*D) = o (B, H, T, D): attention's heads back to tokens; f32 and bf16",
    .shape_fields = "BxHxTxD",
    .nd = 4,
    /* SmolLM2-135M and Llama-3.2-1B prefills of 512 and 2048 tokens; the transformer's 32 x 128 tokens */
    .families = (const kb_family[]){{"models", NULL, "1x9x512x64,1x32x2048x64,32x8x128x64", 1},
                                    {"hostile", NULL, "1x1x1x1,2x3x5x7,1x5x77x24"},
                                    {NULL}},
    .test_sizes = "1x1x1x1,2x3x5x7,1x9x33x64,2x4x17x16,3x2x100x128,1x32x129x8,1x5x77x12",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = merge_heads_variants,
    KB_OP_CONTRACT(kb_merge_heads_args),
};
