/* matmul_fp8 cublaslt: the library baseline, cuBLASLt's first heuristic
 * algorithm for the scaled e4m3 product (CUDA_R_8F_E4M3 operands, bf16
 * output, fp32 compute, the two tensor-wise scales read from device memory
 * by pointer, fast accumulation off so that partial sums are promoted into
 * fp32), planned once per shape in setup with a 32 MiB workspace, so that
 * timing sees only cublasLtMatmul (kernels/lt_gemm.c's Linear layer in
 * fp8: C^T = B A^T column-major, cuBLASLt's "TN", the one fp8 layout it
 * takes).  cuBLASLt's fp8 GEMM needs K and N multiples of 16 (16-byte
 * rows of A and B, and of C); other shapes SKIP.
 *
 * Builds on matmul cublaslt: the same library through the same plan, on
 * fp8's tensor cores.
 * Measured (a sweep at a03df72, H200, cold L2, 1980 MHz; docs/notes/fp8.md,
 * not yet in results/h200's reference run): 1345 TFLOP/s at 4096^3, 1424
 * at 8192^3, 1375 at 4096x7168x16384, 988 at 4096x768x3072; PyTorch's
 * torch._scaled_mm timed in the same call 0.75-0.85x of it (its rows carry
 * the scales' tensors and an amax-free call's overhead).
 * Gap to the limit: 73% (4096^3) and 78% (8192^3) of the run's fp8 ceiling,
 * 1836 TFLOP/s by wgmma_fp8_peak. */
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "ops/matmul_fp8.h"

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] % 16 || s->d[2] % 16 ? "cuBLASLt's fp8 GEMM needs K and N multiples of 16 (16-byte rows)" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_fp8_args *a = (const kb_matmul_fp8_args *)args;
    kb_lt_single *c;
    KB_TRY(kb_lt_single_open(&c));
    return kb_lt_single_done(c, kb_lt_plan_linear_fp8(&c->product, c->lt, a->M, a->N, a->K, a->A, a->B, a->C,
                                                      a->scale_a, a->scale_b),
                             ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_fp8_args *a = (const kb_matmul_fp8_args *)args;
    return kb_lt_single_run((const kb_lt_single *)ctx, a->A, a->B, a->C, stream);
}

extern "C" const kb_variant matmul_fp8_cublaslt[] = {
    {
        .name = "cublaslt",
        .summary = "cuBLASLt, first heuristic algorithm, e4m3 in, bf16 out, fp32 promotion (library baseline)",
        .dtype = KB_E4M3,
        .math = KB_MATH_FP8,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 89,
        .unsupported = unsupported,
        .setup = setup,
        .teardown = kb_lt_single_free,
        .launch = launch,
    },
    KB_VARIANT_END,
};
