/* The ffn op: the transformer's feed-forward block. */
#include <math.h>
#include "ops/ffn.h"

extern const kb_variant *const ffn_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return 6; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int64_t M = s->d[0], D = s->d[1], F = s->d[2];
    switch (i) {
    case 0: return kb_tensor_of("x", kb_mul_dims(M, D), t, KB_IN, M, D, 0, 0);
    case 1: return kb_tensor_of("w1", kb_mul_dims(D, F), t, KB_IN, D, F, 0, 0);
    case 2: return kb_tensor_of("b1", F, t, KB_IN, 1, F, 0, 0);
    case 3: return kb_tensor_of("w2", kb_mul_dims(F, D), t, KB_IN, F, D, 0, 0);
    case 4: return kb_tensor_of("b2", D, t, KB_IN, 1, D, 0, 0);
    /* y's element ends two reductions, over D and then F */
    default: return kb_tensor_of("y", kb_mul_dims(M, D), t, KB_OUT, M, D, D + F, 2.0 * D * F);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_ffn_args *)args = (kb_ffn_args){.M = (int)s->d[0], .D = (int)s->d[1], .F = (int)s->d[2],
                                         .x = dev[0], .w1 = dev[1], .b1 = dev[2], .w2 = dev[3],
                                         .b2 = dev[4], .y = dev[5]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    kb_ffn_args a;
    void *host[6] = {(void *)in[0], (void *)in[1], (void *)in[2], (void *)in[3], (void *)in[4], NULL};
    bind(s, host, &a);
    ffn_reference_rows(&a, t, rows, nrows, ref);
}

static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_uniform(x, n, seed);
    float scale = i == 1 ? 1.0f / sqrtf((float)s->d[1]) : i == 3 ? 1.0f / sqrtf((float)s->d[2]) : 1.0f;
    for (int64_t k = 0; k < n && scale != 1.0f; ++k)
        x[k] *= scale;
}

const kb_op kb_op_ffn = {
    .name = "ffn",
    .summary = "y = relu(x W1 + b1) W2 + b2, the transformer's feed-forward block; f32 and bf16 "
               "(fp32 accumulation, bf16 hidden)",
    .shape_fields = "MxDxF",
    .nd = 3,
    .families = (const kb_family[]){{"tokens4096", "D", "4096x512x2048,4096x768x3072,4096x1024x4096", 1},
                                    {"large", NULL, "16384x1024x4096,8192x4096x16384"},
                                    {"hostile", NULL, "1x1x1,77x33x131,1000x500x2000", 1},
                                    {NULL}},
    .test_sizes = "1x1x1,2x3x5,35x19x79,128x64x256,77x33x131,300x80x321,513x128x512",
    .baseline = {[KB_F32] = "cublaslt", [KB_BF16] = "cublaslt"},
    .variants = ffn_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_ffn_args),
};
