/* The bias op: a bias along each row, and a ReLU. */
#include "ops/bias.h"

extern const kb_variant *const bias_variants[];

static double flops(const kb_shape *s) { return (s->flags ? 2.0 : 1.0) * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    if (i == 0)
        return kb_tensor_of("b", C, t, KB_IN, 1, C, 0, 0);
    return kb_tensor_of("y", kb_mul_dims(R, C), t, KB_INOUT, R, C, 1, (double)C);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_bias_args *)args = (kb_bias_args){(int)s->d[0], (int)s->d[1], (int)s->flags, dev[0], dev[1]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t C = s->d[1];
    for (int k = 0; k < nrows; ++k)
        for (int64_t j = 0; j < C; ++j) {
            const double v = kb_tensor_value(in[1], rows[k] * C + j, t) + kb_tensor_value(in[0], j, t);
            ref[k * C + j] = s->flags && v < 0 ? 0.0 : v;
        }
}

const kb_op kb_op_bias = {
    .name = "bias",
    .summary = "y += b along each row, then ReLU with the r suffix, fp32 (the basic stage's MLP)",
    .shape_fields = "RxC",
    .nd = 2,
    .flag_suffix = "r",
    /* the basic stage's MLP at 512 tokens (up with ReLU, down), and 16384 tokens of a 3072-wide one */
    .families = (const kb_family[]){{"mlp", NULL, "512x1536r,512x576,16384x3072r", 1},
                                    {"hostile", NULL, "1x1,1x1r,3x5r,77x1000"},
                                    {NULL}},
    .test_sizes = "1x1,1x1r,3x5,3x5r,77x1000r,512x1536r,512x576,1000x33,7x4097r",
    .baseline = {[KB_F32] = "naive"},
    .variants = bias_variants,
    KB_OP_CONTRACT(kb_bias_args),
};
