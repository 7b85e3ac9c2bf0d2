/* The swiglu op: silu(gate) * up of a Llama MLP. */
#include <math.h>
#include "ops/swiglu.h"

extern const kb_variant *const swiglu_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    if (i == 0)
        return kb_tensor_of("gu", kb_mul_dims(R, 2 * C), t, KB_IN, R, 2 * C, 0, 0);
    return kb_tensor_of("h", kb_mul_dims(R, C), t, KB_OUT, R, C, 1, 3.0 * C);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_swiglu_args *)args = (kb_swiglu_args){(int)s->d[0], (int)s->d[1], {dev[0]}, {dev[1]}};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t C = s->d[1];
    for (int r = 0; r < nrows; ++r)
        for (int64_t j = 0; j < C; ++j) {
            const double g = kb_tensor_value(in[0], rows[r] * 2 * C + j, t);
            const double u = kb_tensor_value(in[0], rows[r] * 2 * C + C + j, t);
            ref[r * C + j] = g / (1 + exp(-g)) * u;
        }
}

/* Row 0's gates span [-16, 16]. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)i, (void)quirks;
    kb_fill_uniform(x, n, seed);
    for (int64_t j = 0; s->d[0] >= 2 && j < s->d[1]; ++j)
        x[j] *= 16.0f;
}

const kb_op kb_op_swiglu = {
    .name = "swiglu",
    .summary = "h = silu(gate) * up, gate | up packed per row (a Llama MLP); f32 and bf16",
    .shape_fields = "RxC",
    .nd = 2,
    /* prefill of SmolLM2-135M (d_ff 1536), Llama-3.2-1B (8192) and Llama-3-8B (14336) */
    .families = (const kb_family[]){{"models", NULL, "512x1536,2048x8192,4096x14336", 1},
                                    {"hostile", NULL, "1x1,3x5,1000x1001"},
                                    {NULL}},
    .test_sizes = "1x1,1x8,3x5,7x33,2x64,64x1536,33x1000,5x4104,17x712",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = swiglu_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_swiglu_args),
};
