/* matmul_backward cublas: the baseline, both products as cuBLAS GEMMs with
 * a transposed operand: in cuBLAS's column-major view a row-major matrix is
 * its transpose, so
 *   dA^T (K x M) = B dC^T: m = K, n = M, k = N, B's storage (B^T) read
 *     transposed;
 *   dB^T (N x K) = dC^T A: m = N, n = K, k = M, A's storage (A^T) read
 *     transposed.
 * cublasGemmEx with fp32 accumulation (CUBLAS_COMPUTE_32F) in both dtypes:
 * plain fp32 math in f32 (no tf32), the tensor cores in bf16.  Reduced-
 * precision reductions are disallowed: by default cuBLAS may split a long
 * reduction and add the parts in bf16, which at 4097x4095x511 (dA's
 * reduction 4095 long, 511 x 4097 outputs: a split-K shape) put 447
 * elements of dA over bf16's tolerance.  That is another function than the
 * one the op defines (and PyTorch allows it by default:
 * allow_bf16_reduced_precision_reduction).
 *
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): bf16
 * 808 TFLOP/s at 8192x4096x4096, 817 at 8192x28672x4096, 787 at 8192^3:
 * 84.1%, 85.0% and 81.9% of the run's 961 TFLOP/s bf16 tensor ceiling; f32
 * 51.3 and 52.7 TFLOP/s (81.9% and 84.1% of its 62.7 TFLOP/s fp32
 * ceiling), the latter at 1961 MHz under the power cap.
 * Gap to the limit: cuBLAS's own, 15-18 points in bf16: the forward's bf16
 * GEMM runs at some 80% of the measured tensor ceiling. */
#include "ops/matmul_backward.h"
#include "kernels/cuda_util.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
}

template <cudaDataType_t T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_backward_args *a = (const kb_matmul_backward_args *)args;
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t h;
    KB_TRY(kb_cublas_on(ctx, stream, &h));
    KB_TRY(kb_cublas_error(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, a->K, a->M, a->N, &one, a->b, T, a->N, a->dc,
                                        T, a->N, &zero, a->da, T, a->K, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)));
    return kb_cublas_error(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, a->N, a->K, a->M, &one, a->dc, T, a->N, a->a,
                                        T, a->K, &zero, a->db, T, a->N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

extern "C" const kb_variant matmul_backward_cublas[] = {
    {
        .name = "cublas",
        .summary = "two cuBLAS GemmEx calls with a transposed operand, fp32 math (no tf32)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUBLAS,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = launch<CUDA_R_32F>,
    },
    {
        .name = "cublas",
        .summary = "two cuBLAS GemmEx calls with a transposed operand, bf16, fp32 accumulation",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = launch<CUDA_R_16BF>,
    },
    KB_VARIANT_END,
};
