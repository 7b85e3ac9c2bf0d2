/* matmul cublas_bf16: the baseline of the bf16 rows, cublasGemmEx with A, B
 * and C in bf16 (CUDA_R_16BF) and fp32 accumulation (CUBLAS_COMPUTE_32F):
 * the tensor cores' bf16 path, the same function the hand-written bf16
 * kernels compute.  Row-major as cublas does it: operands swapped, m = N,
 * n = M, no transposes (variants/matmul/cublas_common.h).
 *
 * Builds on cublas: the same call in bf16, on the tensor cores.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 780.8
 * TFLOP/s at 4096^3 and 780.8 at 8192^3, 80.8% and 80.8% of the run's 967
 * TFLOP/s bf16 tensor ceiling (its wgmma_peak kernel), 15.2x and 15.2x
 * cublas (fp32).
 * Gap to the limit: 19 points to the measured ceiling at 4096^3, 19 at
 * 8192^3; 73% and 73% of the 1071 TFLOP/s datasheet figure at 1980 MHz.
 * History: docs/notes/matmul.md. */
#include "kernels/matmul.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, CUBLAS_DEFAULT_MATH);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t h;
    const char *err = kb_cublas_on(ctx, stream, &h);
    return err ? err
               : kb_cublas_error(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, a->N, a->M, a->K, &one, a->B16,
                                              CUDA_R_16BF, a->N, a->A16, CUDA_R_16BF, a->K, &zero, a->C16,
                                              CUDA_R_16BF, a->N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

extern "C" const kb_variant matmul_cublas_bf16 = {
    .name = "cublas_bf16",
    .summary = "cuBLAS GemmEx, bf16 in/out, fp32 accumulation",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_CUBLAS,
    .min_cc = 80,
    .setup = setup,
    .teardown = kb_cublas_teardown,
    .launch = launch,
};
