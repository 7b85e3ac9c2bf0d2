/* The linear_cross_entropy op. */
#include <math.h>
#include "ops/cross_entropy.h"
#include "ops/embed.h"
#include "ops/linear_cross_entropy.h"

extern const kb_variant *const linear_cross_entropy_variants[];

static double flops(const kb_shape *s) { return 6.0 * s->d[0] * s->d[1] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_LCE_TENSORS; }

/* h, W, dh and dW once each in bf16, the targets and the loss (lse is the
 * check's). */
static double bytes(const kb_shape *s, kb_dtype t)
{
    (void)t;
    const double N = (double)s->d[0], V = (double)s->d[1], D = (double)s->d[2];
    return 4 * (N + V) * D + 8 * N;
}

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t N = s->d[0], V = s->d[1], D = s->d[2];
    const double row = (double)V * D; /* a row of logits */
    kb_tensor lse = kb_tensor_of("lse", N, KB_F32, KB_IN, N, 1, 0, 0);
    lse.derived = 1;
    switch (i) {
    case KB_LCE_H: return kb_tensor_of("h", kb_mul_dims(N, D), t, KB_IN, N, D, 0, 0);
    case KB_LCE_W: return kb_tensor_of("w", kb_mul_dims(V, D), t, KB_IN, V, D, 0, 0);
    case KB_LCE_TARGETS: return kb_tensor_of("targets", N, KB_I32, KB_IN, N, 1, 0, 0);
    case KB_LCE_LSE: return lse;
    case KB_LCE_LOSS: return kb_tensor_of("loss", N, KB_F32, KB_OUT, N, 1, V, row);
    case KB_LCE_DH: return kb_tensor_of("dh", kb_mul_dims(N, D), t, KB_OUT, N, D, V, 2 * row);
    default: return kb_tensor_of("dw", kb_mul_dims(V, D), t, KB_OUT, V, D, N, 2.0 * N * D);
    }
}

/* lse is the check's alone: no variant is handed it. */
static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_linear_cross_entropy_args *)args = (kb_linear_cross_entropy_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], (float)(1.0 / (double)cross_entropy_counted(s->d[0])),
        dev[KB_LCE_H], dev[KB_LCE_W], dev[KB_LCE_TARGETS], dev[KB_LCE_LOSS], dev[KB_LCE_DH], dev[KB_LCE_DW]};
}

static void prepare(const kb_shape *s, kb_dtype t, void *const *host)
{
    (void)t;
    linear_cross_entropy_lse(s->d[0], s->d[1], s->d[2], host[KB_LCE_H], host[KB_LCE_W], host[KB_LCE_LSE]);
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)t;
    linear_cross_entropy_reference(s->d[0], s->d[1], s->d[2], in[KB_LCE_H], in[KB_LCE_W], in[KB_LCE_TARGETS],
                                   in[KB_LCE_LSE], out, rows, nrows, ref);
}

/* h in [-1, 1]; W in [-1, 1] / sqrt(D), so that z spreads about 1/3 (a
 * trained head's logits are of that order, and bf16 logits stay close);
 * targets as cross_entropy's. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    const int64_t N = s->d[0];
    if (i == KB_LCE_TARGETS) {
        kb_fill_ids(x, n, s->d[1], seed);
        for (int64_t r = 0; r < N; ++r)
            if (cross_entropy_ignored(r, N))
                x[r] = (float)KB_CE_IGNORE;
        return;
    }
    kb_fill_uniform(x, n, seed);
    const float scale = i == KB_LCE_W ? (float)(1.0 / sqrt((double)s->d[2])) : 1.0f;
    for (int64_t k = 0; scale != 1.0f && k < n; ++k)
        x[k] *= scale;
}

static const char *validate(const kb_shape *s)
{
    for (int k = 0; k < 3; ++k)
        if (s->d[k] > INT32_MAX)
            return "N, V and D must each be below 2^31";
    return NULL;
}

const kb_op kb_op_linear_cross_entropy = {
    .name = "linear_cross_entropy",
    .summary = "the head's product, cross-entropy's loss and the gradients dh and dW in one op; bf16",
    .shape_fields = "NxVxD",
    .nd = 3,
    /* 8192 tokens of a training step at the heads of GPT-2 (50257 x 768),
     * Llama-3.2-1B (128256 x 2048) and Llama-3-8B (128256 x 4096) */
    .families = (const kb_family[]){{"heads", NULL, "8192x50257x768,8192x128256x2048,8192x128256x4096", 1,
                                     "8192x128256x2048"},
                                    {"hostile", NULL, "1x1x1,3x5x7,67x1001x33", 1},
                                    {NULL}},
    .test_sizes = "1x1x1,1x3x8,4x2x5,7x31x17,5x33x64,64x128x64,33x1000x72,100x50257x32,257x4097x128,8x128256x16",
    .baseline = {[KB_BF16] = "cublas"},
    .variants = linear_cross_entropy_variants,
    .fill = fill,
    .prepare = prepare,
    .validate = validate,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_linear_cross_entropy_args),
};
