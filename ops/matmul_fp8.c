/* The matmul_fp8 op: shapes, counts, tensors and the default sweep. */
#include "ops/matmul_fp8.h"

extern const kb_variant *const matmul_fp8_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1] * s->d[2]; }

static int ntensors(const kb_shape *s) { (void)s; return KB_MMF8_TENSORS; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t M = s->d[0], N = s->d[1], K = s->d[2];
    switch (i) {
    case KB_MMF8_A: return kb_tensor_of("A", kb_mul_dims(M, K), t, KB_IN, M, K, 0, 0);
    case KB_MMF8_B: return kb_tensor_of("B", kb_mul_dims(N, K), t, KB_IN, N, K, 0, 0);
    case KB_MMF8_SCALE_A: return kb_tensor_of("scale_a", 1, KB_F32, KB_IN, 1, 1, 0, 0);
    case KB_MMF8_SCALE_B: return kb_tensor_of("scale_b", 1, KB_F32, KB_IN, 1, 1, 0, 0);
    default: return kb_tensor_of("C", kb_mul_dims(M, N), KB_BF16, KB_OUT, M, N, K, (double)N * K);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_matmul_fp8_args *)args = (kb_matmul_fp8_args){.M = (int)s->d[0], .N = (int)s->d[1], .K = (int)s->d[2],
                                                       .A = dev[KB_MMF8_A], .B = dev[KB_MMF8_B],
                                                       .scale_a = dev[KB_MMF8_SCALE_A],
                                                       .scale_b = dev[KB_MMF8_SCALE_B], .C = dev[KB_MMF8_C]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    const float *sa = in[KB_MMF8_SCALE_A], *sb = in[KB_MMF8_SCALE_B];
    matmul_fp8_reference_rows((int)s->d[1], (int)s->d[2], t, in[KB_MMF8_A], in[KB_MMF8_B], *sa, *sb, rows, nrows,
                              ref);
}

/* A and B uniform (then rounded to e4m3); the scales their fixed values. */
static void fill(const kb_shape *s, int i, float *x, int64_t n, uint64_t seed, unsigned quirks)
{
    (void)s, (void)quirks;
    if (i == KB_MMF8_SCALE_A || i == KB_MMF8_SCALE_B)
        x[0] = i == KB_MMF8_SCALE_A ? KB_MATMUL_FP8_SCALE_A : KB_MATMUL_FP8_SCALE_B;
    else
        kb_fill_uniform(x, n, seed);
}

const kb_op kb_op_matmul_fp8 = {
    .name = "matmul_fp8",
    .summary = "C = sa sb A B^T, A MxK and B NxK e4m3 (both K-major), tensor-wise fp32 scales, C bf16",
    .shape_fields = "MxNxK",
    .nd = 3,
    .families =
        (const kb_family[]){
            {"square", "N", "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192"},
            /* A transformer's products at 4096-8192 tokens: Llama-3-8B's
             * 4096-wide ones (q and o; gate and up from 4096 to 14336 at
             * fp8's scale: 7168 x 16384 as DeepSeek-V3's), and GPT-2's FFN down */
            {"models", NULL, "8192x8192x4096,4096x7168x16384,4096x768x3072", 1},
            {"hostile", NULL, "1x1x1,35x79x19,127x129x65,4097x4095x511,1000x1008x1040", 1},
            {NULL}},
    .test_sizes = "1x1x1,2x3x5,35x79x19,127x129x65,128x128x128,64x256x32,257x256x128,1x4096x304,300x16x4096,"
                  "4097x4096x512,96x112x1040",
    .baseline = {[KB_E4M3] = "cublaslt"},
    .variants = matmul_fp8_variants,
    KB_OP_CONTRACT(kb_matmul_fp8_args),
    .fill = fill,
};
