/* The matmul op: shapes, counts, tensors and the default sweep. */
#include "ops/matmul.h"

extern const kb_variant *const matmul_variants[];

static double flops(const kb_shape *s) { return 2.0 * s->d[0] * s->d[1] * s->d[2]; }

static int ntensors(const kb_shape *s) { (void)s; return 3; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int64_t M = s->d[0], N = s->d[1], K = s->d[2];
    switch (i) {
    case 0: return kb_tensor_of("A", kb_mul_dims(M, K), t, KB_IN, M, K, 0, 0);
    case 1: return kb_tensor_of("B", kb_mul_dims(K, N), t, KB_IN, K, N, 0, 0);
    default: return kb_tensor_of("C", kb_mul_dims(M, N), t, KB_OUT, M, N, K, (double)N * K);
    }
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    kb_matmul_args *a = args;
    *a = (kb_matmul_args){.M = (int)s->d[0], .N = (int)s->d[1], .K = (int)s->d[2],
                          .A = dev[0], .B = dev[1], .C = dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    matmul_reference_rows((int)s->d[0], (int)s->d[1], (int)s->d[2], t, in[0], in[1], rows, nrows, ref);
}

const kb_op kb_op_matmul = {
    .name = "matmul",
    .summary = "C = A*B, row-major, A is MxK; f32, bf16 and f16 (fp32 accumulation)",
    .shape_fields = "MxNxK",
    .nd = 3,
    .families =
        (const kb_family[]){
            {"square", "N", "256x256x256,512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192"},
            /* GPT-2 small's products at 4096 tokens: QKV and output, FFN up, FFN down */
            {"transformer", NULL, "4096x768x768,4096x3072x768,4096x768x3072", 1},
            {"hostile", NULL, "1x1x1,35x79x19,127x129x65,1000x1000x1000,4097x4095x511", 1},
            {NULL}},
    .test_sizes = "1x1x1,2x3x5,35x79x19,127x129x65,128x128x128,64x256x32,257x255x129,"
                  "513x1031x17,1x4096x300,300x1x4096,4097x4095x511",
    .baseline = {[KB_F32] = "cublas", [KB_BF16] = "cublas", [KB_F16] = "cublas"},
    .variants = matmul_variants,
    KB_OP_CONTRACT(kb_matmul_args),
};
