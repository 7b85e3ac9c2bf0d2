/* The transpose op. */
#include "ops/transpose.h"

extern const kb_variant *const transpose_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    if (i == 0)
        return kb_tensor_of("x", kb_mul_dims(R, C), t, KB_IN, R, C, 0, 0);
    return kb_tensor_of("y", kb_mul_dims(R, C), t, KB_OUT, C, R, 1, (double)R);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_transpose_args *)args = (kb_transpose_args){(int)s->d[0], (int)s->d[1], dev[0], dev[1]};
}

/* Row c of y is column c of x. */
static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t R = s->d[0], C = s->d[1];
    for (int k = 0; k < nrows; ++k)
        for (int64_t r = 0; r < R; ++r)
            ref[k * R + r] = kb_tensor_value(in[0], r * C + rows[k], t);
}

const kb_op kb_op_transpose = {
    .name = "transpose",
    .summary = "y = x^T, fp32 (the basic stage's keys, K = (K^T)^T)",
    .shape_fields = "RxC",
    .nd = 2,
    /* the basic stage's keys (512 tokens of a 64-wide head), and two larger matrices */
    .families = (const kb_family[]){{"models", NULL, "512x64,16384x1024,4096x4096", 1},
                                    {"hostile", NULL, "1x1,3x5,33x1000,1000x33"},
                                    {NULL}},
    .test_sizes = "1x1,1x7,7x1,3x5,33x1000,1000x33,64x64,65x63,512x64,100x4097",
    .baseline = {[KB_F32] = "naive"},
    .variants = transpose_variants,
    KB_OP_CONTRACT(kb_transpose_args),
};
