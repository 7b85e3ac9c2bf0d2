/* The posenc op: the sinusoidal positional-encoding table. */
#include "ops/posenc.h"

extern const kb_variant *const posenc_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }
static int ntensors(const kb_shape *s) { (void)s; return 1; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    (void)i;
    /* sin(pos * freq): the argument grows to T, its error with it (T^2 as a length) */
    return kb_tensor_of("pe", kb_mul_dims(s->d[0], s->d[1]), t, KB_OUT, s->d[0], s->d[1],
                        kb_mul_dims(s->d[0], s->d[0]), 20.0 * s->d[1]);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_posenc_args *)args = (kb_posenc_args){(int)s->d[0], (int)s->d[1], KB_POSENC_SEED_SCALE, dev[0]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t, (void)in, (void)out;
    posenc_reference_rows((int)s->d[1], KB_POSENC_SEED_SCALE, rows, nrows, ref);
}

const kb_op kb_op_posenc = {
    .name = "posenc",
    .summary = "sinusoidal positional-encoding table, T x D, fp32",
    .shape_fields = "TxD",
    .nd = 2,
    .families = (const kb_family[]){{"d512", "T", "128x512,512x512,2048x512,8192x512", 1},
                                    {"t8192", "D", "8192x1024,8192x4096"},
                                    {"hostile", NULL, "1x1,5x5,77x33,1000x1001", 1},
                                    {NULL}},
    .test_sizes = "1x1,5x5,2x3,77x33,128x512,1000x1001,4097x64",
    .baseline = {[KB_F32] = "naive"},
    .variants = posenc_variants,
    KB_OP_CONTRACT(kb_posenc_args),
};
