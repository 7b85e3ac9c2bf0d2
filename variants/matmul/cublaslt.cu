/* matmul cublaslt: cuBLASLt's first heuristic algorithm for the bf16 or f16
 * product (A, B, C in that type, fp32 accumulation), planned once per shape in
 * setup with a 32 MiB workspace, so timing sees only cublasLtMatmul.  Where
 * cublas lets cublasGemmEx choose, this is the choice cuBLASLt's
 * heuristic ranks first given the workspace; the two may differ (split-K,
 * cluster shapes) and the gap shows what the heuristic leaves.  The product
 * is kernels/lt_gemm.c's, which the ffn baseline and the model share: row-major as cublas does it, column-major C^T = B^T A^T,
 * operands swapped, m = N, n = M.
 *
 * Builds on cublas: the same library GEMM through cuBLASLt.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 782.5
 * TFLOP/s at 4096^3 and 789.4 at 8192^3, 81.0% and 81.7% of the run's 967
 * TFLOP/s bf16 tensor ceiling, 1.00x and 1.01x cublas (bf16).  f16 on an
 * H200 (results/h200/kbench-20261202-075017.csv): 758.7 TFLOP/s at 4096^3
 * and 758.2 at 8192^3, 79.8% and 79.7% of its 951 TFLOP/s ceiling, 1.00x
 * cublas (f16).
 * Gap to the limit: 19 points to the measured ceiling at 4096^3, 18 at
 * 8192^3; 73% and 74% of the 1071 TFLOP/s datasheet figure at 1980 MHz.
 * History: docs/notes/matmul.md. */
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "ops/matmul.h"

/* fp32 compute and scales, operands of type T, no epilogue; the heuristic
 * sees the harness's tensors, whose alignment the timed launches share. */
template <cudaDataType_t T>
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    kb_lt_single *c;
    KB_TRY(kb_lt_single_open(&c));
    return kb_lt_single_done(c, kb_lt_plan(&c->product, c->lt, CUBLAS_COMPUTE_32F, T, a->M, a->N, a->K,
                                           CUBLASLT_EPILOGUE_DEFAULT, NULL, a->A16, a->B16, a->C16),
                             ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    return kb_lt_single_run((const kb_lt_single *)ctx, a->A16, a->B16, a->C16, stream);
}

extern "C" const kb_variant matmul_cublaslt[] = {
    {
        .name = "cublaslt",
        .summary = "cuBLASLt, first heuristic algorithm, bf16 in/out, fp32 accumulation",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup<CUDA_R_16BF>,
        .teardown = kb_lt_single_free,
        .launch = launch,
    },
    {
        .name = "cublaslt",
        .summary = "cuBLASLt, first heuristic algorithm, f16 in/out, fp32 accumulation",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 70,
        .setup = setup<CUDA_R_16F>,
        .teardown = kb_lt_single_free,
        .launch = launch,
    },
    KB_VARIANT_END,
};
