/* The mask op: the causal mask on a score matrix. */
#include "ops/mask.h"

extern const kb_variant *const mask_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 1; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    (void)i;
    const int64_t R = s->d[0], C = s->d[1];
    return kb_tensor_of("s", kb_mul_dims(R, C), t, KB_INOUT, R, C, 1, (double)C);
}

/* Row i masks min(C, max(0, R - 1 - i)) entries: sum k = 0 .. R - 1 of min(C, k). */
static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    const double R = (double)s->d[0], C = (double)s->d[1];
    const double masked = R - 1 <= C ? R * (R - 1) / 2 : C * (C + 1) / 2 + (R - 1 - C) * C;
    return 4 * masked;
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_mask_args *)args = (kb_mask_args){(int)s->d[0], (int)s->d[1], KB_MASK_CHECKED_VALUE, dev[0]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t R = s->d[0], C = s->d[1];
    for (int k = 0; k < nrows; ++k) {
        const int64_t first = rows[k] + C - R + 1; /* the first key after query rows[k] */
        kb_widen(in[0], rows[k] * C, C, t, ref + k * C);
        for (int64_t j = first > 0 ? first : 0; j < C; ++j)
            ref[k * C + j] = KB_MASK_CHECKED_VALUE;
    }
}

const kb_op kb_op_mask = {
    .name = "mask",
    .summary = "s[i][j] = value past the causal diagonal (bottom-right aligned), in place, fp32",
    .shape_fields = "RxC",
    .nd = 2,
    /* the basic stage's scores (512 to 8192 tokens, square) */
    .families = (const kb_family[]){{"scores", "R", "512x512,2048x2048,8192x8192", 1},
                                    {"hostile", NULL, "1x1,3x5,5x3,77x1000"},
                                    {NULL}},
    .test_sizes = "1x1,1x5,5x1,3x5,5x3,77x1000,1000x77,512x512,129x129",
    .baseline = {[KB_F32] = "naive"},
    .variants = mask_variants,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_mask_args),
};
