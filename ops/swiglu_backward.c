/* The swiglu_backward op. */
#include "ops/swiglu_backward.h"

extern const kb_variant *const swiglu_backward_variants[];

static double flops(const kb_shape *s) { return 8.0 * s->d[0] * s->d[1]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_SWB_TENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t R = s->d[0], C = s->d[1];
    switch (i) {
    case KB_SWB_GU: return kb_tensor_of("gu", kb_mul_dims(R, 2 * C), t, KB_IN, R, 2 * C, 0, 0);
    case KB_SWB_DH: return kb_tensor_of("dh", kb_mul_dims(R, C), t, KB_IN, R, C, 0, 0);
    default: return kb_tensor_of("dgu", kb_mul_dims(R, 2 * C), t, KB_OUT, R, 2 * C, 1, 6.0 * C);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_swiglu_backward_args *)args =
        (kb_swiglu_backward_args){(int)s->d[0], (int)s->d[1], dev[KB_SWB_GU], dev[KB_SWB_DH], dev[KB_SWB_DGU]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    swiglu_backward_reference(s->d[1], t, in[KB_SWB_GU], in[KB_SWB_DH], rows, nrows, ref);
}

/* Row 0's gates span [-16, 16], as the forward's. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_uniform(x, n, seed);
    for (int64_t j = 0; i == KB_SWB_GU && s->d[0] >= 2 && j < s->d[1]; ++j)
        x[j] *= 16.0f;
}

const kb_op kb_op_swiglu_backward = {
    .name = "swiglu_backward",
    .summary = "dgate | dup of silu(gate) * up from gu and dh (a Llama MLP); f32 and bf16",
    .shape_fields = "RxC",
    .nd = 2,
    /* a training step's tokens at the forward's models' d_ff: SmolLM2-135M
     * (1536), Llama-3.2-1B (8192), Llama-3-8B (14336) */
    .families = (const kb_family[]){{"models", NULL, "8192x1536,8192x8192,8192x14336", 1},
                                    {"hostile", NULL, "1x1,3x5,1000x1001"},
                                    {NULL}},
    .test_sizes = "1x1,1x8,3x5,7x33,2x64,64x1536,33x1000,5x4104,17x712",
    .baseline = {[KB_F32] = "naive", [KB_BF16] = "naive"},
    .variants = swiglu_backward_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_swiglu_backward_args),
};
