/* The argmax op: the greedy pick of a row of logits. */
#include "ops/argmax.h"

extern const kb_variant *const argmax_variants[];

static double flops(const kb_shape *s) { return (double)s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    if (i == 0)
        return kb_tensor_of("x", kb_mul_dims(R, C), t, KB_IN, R, C, 0, 0);
    return kb_tensor_of("y", R, KB_I32, KB_OUT, R, 1, 1, (double)C);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_argmax_args *)args = (kb_argmax_args){(int)s->d[0], (int)s->d[1], dev[0], dev[1]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t C = s->d[1];
    for (int r = 0; r < nrows; ++r) {
        int64_t best = 0;
        for (int64_t j = 1; j < C; ++j)
            if (kb_tensor_value(in[0], rows[r] * C + j, t) > kb_tensor_value(in[0], rows[r] * C + best, t))
                best = j;
        ref[r] = (double)best;
    }
}

/* Row 0 constant, row 1 with its largest value twice (argmax.h). */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)i, (void)quirks;
    const int64_t R = s->d[0], C = s->d[1];
    kb_fill_uniform(x, n, seed);
    if (R < 2 || C < 2)
        return;
    for (int64_t j = 0; j < C; ++j)
        x[j] = 0.5f;
    x[C + C / 2] = x[C + C - 1] = 1.5f;
}

const kb_op kb_op_argmax = {
    .name = "argmax",
    .summary = "y = the first index of each row's largest value (int32): the greedy pick, fp32 logits",
    .shape_fields = "RxC",
    .nd = 2,
    /* one row of logits over the vocabularies of Llama 2, SmolLM2 and Llama 3 */
    .families = (const kb_family[]){{"vocab", "C", "1x32000,1x49152,1x128256", 1},
                                    {"hostile", NULL, "1x1,3x5,7x1000,5x4097"},
                                    {NULL}},
    .test_sizes = "1x1,1x2,3x5,7x1000,5x4097,2x49152,1x128256,33x1025",
    .baseline = {[KB_F32] = "naive"},
    .variants = argmax_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_argmax_args),
};
