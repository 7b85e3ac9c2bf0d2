/* The matmul_backward op. */
#include "ops/matmul_backward.h"

extern const kb_variant *const matmul_backward_variants[];

static double flops(const kb_shape *s) { return 4.0 * s->d[0] * s->d[1] * s->d[2]; }
static int ntensors(const kb_shape *s) { (void)s; return KB_MMB_TENSORS; }

/* A dA row: K dots of length N.  A dB row: N sums of length M. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    const int64_t M = s->d[0], N = s->d[1], K = s->d[2];
    switch (i) {
    case KB_MMB_A: return kb_tensor_of("a", kb_mul_dims(M, K), t, KB_IN, M, K, 0, 0);
    case KB_MMB_B: return kb_tensor_of("b", kb_mul_dims(K, N), t, KB_IN, K, N, 0, 0);
    case KB_MMB_DC: return kb_tensor_of("dc", kb_mul_dims(M, N), t, KB_IN, M, N, 0, 0);
    case KB_MMB_DA: return kb_tensor_of("da", kb_mul_dims(M, K), t, KB_OUT, M, K, N, (double)N * K);
    default: return kb_tensor_of("db", kb_mul_dims(K, N), t, KB_OUT, K, N, M, (double)M * N);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_matmul_backward_args *)args = (kb_matmul_backward_args){
        (int)s->d[0], (int)s->d[1], (int)s->d[2], dev[KB_MMB_A], dev[KB_MMB_B], dev[KB_MMB_DC], dev[KB_MMB_DA],
        dev[KB_MMB_DB]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    matmul_backward_reference(s->d[0], s->d[1], s->d[2], t, in[KB_MMB_A], in[KB_MMB_B], in[KB_MMB_DC], out, rows,
                              nrows, ref);
}

const kb_op kb_op_matmul_backward = {
    .name = "matmul_backward",
    .summary = "dA = dC B^T and dB = A^T dC of C = A*B; f32 and bf16 (fp32 accumulation)",
    .shape_fields = "MxNxK",
    .nd = 3,
    /* Llama-3-8B's linear layers at 8192 tokens (attention output, fused
     * QKV, fused gate and up, down), written as the forward's MxNxK;
     * square products; tile-hostile ones, among them N and K that are
     * multiples of 8 but not of a tile and ones that are not. */
    .families =
        (const kb_family[]){
            {"llama", NULL, "8192x4096x4096,8192x6144x4096,8192x28672x4096,8192x4096x14336", 1,
             "8192x4096x4096,8192x4096x14336"},
            {"square", "N", "2048x2048x2048,4096x4096x4096,8192x8192x8192"},
            {"hostile", NULL, "1x1x1,35x79x19,127x136x72,1000x1000x1000,4097x4095x511,4095x520x4104", 1},
            {NULL}},
    .test_sizes = "1x1x1,2x3x5,35x79x19,64x64x64,128x128x128,127x136x72,200x256x192,256x200x136,257x255x129,"
                  "1x4096x304,300x8x4096,513x1032x24,1000x1000x1000,4097x4095x511,4095x520x4104",
    .baseline = {[KB_F32] = "cublas", [KB_BF16] = "cublas"},
    .variants = matmul_backward_variants,
    KB_OP_CONTRACT(kb_matmul_backward_args),
};
