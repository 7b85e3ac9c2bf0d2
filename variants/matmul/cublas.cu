/* matmul cublas: the baseline, cuBLAS SGEMM in plain fp32 (CUBLAS_DEFAULT_MATH:
 * no tf32 tensor-core math), so it computes the same function as the
 * hand-written kernels and the speedups compare like with like.
 *
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 51.3
 * TFLOP/s at 4096^3, 81.6% of the run's 62.9 TFLOP/s fp32 ceiling; 51.4 TFLOP/s
 * (81.7%) at 8192^3.
 * Gap to the limit: 18 points to the measured fp32 ceiling (66.9 TFLOP/s on the
 * datasheet at 1980 MHz).  History: docs/notes/matmul.md.
 *
 * The bf16 and f16 forms: the baselines of those rows, cublasGemmEx with A,
 * B and C in bf16 (CUDA_R_16BF) or f16 (CUDA_R_16F) and fp32 accumulation
 * (CUBLAS_COMPUTE_32F): the tensor cores' path, the same function the
 * hand-written kernels of those dtypes compute.
 * Measured, bf16 (results/h100/kbench-20261127-195738.csv, H100, cold L2):
 * 780.8 TFLOP/s at 4096^3 and 8192^3, 80.8% of the run's 967 TFLOP/s bf16
 * tensor ceiling (its wgmma_peak kernel), 15.2x the f32 form.  Measured f16
 * (results/h200/kbench-20261202-075017.csv, H200, cold L2): 755.7 TFLOP/s at
 * 8192^3, 79.5% of that run's 951 TFLOP/s tensor ceiling; 760.7 (80.0%) at
 * 4096^3. */
#include "ops/matmul.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, CUBLAS_DEFAULT_MATH);
}

/* GemmEx in a 16-bit type, fp32 accumulation. */
template <cudaDataType_t T>
static const char *launch_16(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t h;
    const char *err = kb_cublas_on(ctx, stream, &h);
    return err ? err
               : kb_cublas_error(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, a->N, a->M, a->K, &one, a->B16, T, a->N,
                                              a->A16, T, a->K, &zero, a->C16, T, a->N, CUBLAS_COMPUTE_32F,
                                              CUBLAS_GEMM_DEFAULT));
}

extern "C" const kb_variant matmul_cublas[] = {
    {
        .name = "cublas",
        .summary = "cuBLAS SGEMM, fp32 math (no tf32)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUBLAS,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = kb_cublas_matmul,
    },
    {
        .name = "cublas",
        .summary = "cuBLAS GemmEx, bf16 in/out, fp32 accumulation",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = launch_16<CUDA_R_16BF>,
    },
    {
        .name = "cublas",
        .summary = "cuBLAS GemmEx, f16 in/out, fp32 accumulation",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 70,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = launch_16<CUDA_R_16F>,
    },
    KB_VARIANT_END,
};
