/* The linear op: a residual branch's last product, y += x W^T. */
#include <math.h>
#include <stdlib.h>
#include "ops/linear.h"

extern const kb_variant *const linear_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t M = s->d[0], N = s->d[1], K = s->d[2];
    switch (i) {
    case 0: return kb_tensor_of("x", kb_mul_dims(M, K), t, KB_IN, M, K, 0, 0);
    case 1: return kb_tensor_of("w", kb_mul_dims(N, K), t, KB_IN, N, K, 0, 0);
    default: return kb_tensor_of("y", kb_mul_dims(M, N), KB_F32, KB_INOUT, M, N, K, (double)N * K);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_linear_args *)args = (kb_linear_args){(int)s->d[0], (int)s->d[1], (int)s->d[2], dev[0], dev[1], dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const int64_t N = s->d[1], K = s->d[2];
    double *x = malloc((size_t)K * sizeof *x + 1);
    for (int r = 0; r < nrows; ++r) {
        kb_widen(in[0], rows[r] * K, K, t, x);
        for (int64_t n = 0; n < N; ++n) {
            double acc = kb_tensor_value(in[2], rows[r] * N + n, KB_F32);
            for (int64_t k = 0; k < K; ++k)
                acc += x[k] * kb_tensor_value(in[1], n * K + k, t);
            ref[r * N + n] = acc;
        }
    }
    free(x);
}

/* W as a trained layer's, 1/sqrt(K) of the uniform draw. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)quirks;
    kb_fill_uniform(x, n, seed);
    const float scale = 1.0f / sqrtf((float)s->d[2]);
    for (int64_t k = 0; i == 1 && k < n; ++k)
        x[k] *= scale;
}

const kb_op kb_op_linear = {
    .name = "linear",
    .summary = "y += x W^T, W [out, in]: a residual branch's last product, bf16 in, fp32 y",
    .shape_fields = "MxNxK",
    .nd = 3,
    /* decode steps (one token) of SmolLM2-135M's down_proj and Llama-3.2-1B's o_proj and down_proj, and the
     * latter's prefill of 2048 tokens */
    .families = (const kb_family[]){{"decode", NULL, "1x576x1536,1x2048x2048,1x2048x8192", 1},
                                    {"prefill", NULL, "2048x2048x8192"},
                                    {"hostile", NULL, "1x1x8,1x7x24,3x5x7,77x33x1000"},
                                    {NULL}},
    .test_sizes = "1x1x8,1x7x24,1x1x1,3x5x7,1x576x1536,1x1001x256,1x130x4104,77x33x1000,2x64x64",
    .baseline = {[KB_BF16] = "cublaslt"},
    .variants = linear_variants,
    .fill = fill,
    KB_OP_CONTRACT(kb_linear_args),
};
