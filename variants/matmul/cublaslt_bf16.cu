/* matmul cublaslt_bf16: cuBLASLt's first heuristic algorithm for the bf16
 * product (A, B, C in bf16, fp32 accumulation), planned once per shape in
 * setup with a 32 MiB workspace, so timing sees only cublasLtMatmul.  Where
 * cublas_bf16 lets cublasGemmEx choose, this is the choice cuBLASLt's
 * heuristic ranks first given the workspace; the two may differ (split-K,
 * cluster shapes) and the gap shows what the heuristic leaves.  Row-major as
 * cublas does it: column-major C^T = B^T A^T, operands swapped, m = N, n = M.
 *
 * Builds on cublas_bf16: the same library GEMM through cuBLASLt.
 * Measured on H100 (one run of this session, cold L2, not in results/, the
 * clock at 1695 MHz under the power cap for the squares): 698 TFLOP/s at
 * 4096^3, 789 at 8192^3 (cublas_bf16 695 there), 577 at 4096x3072x768, 634 at
 * 4096x768x3072, 360 at 4096x768x768.
 * Gap to the limit: the dense bf16 tensor peak, ~990 TFLOP/s on H100 SXM at
 * boost clock. */
#include <stdlib.h>
#include <cublasLt.h>
#include "kernels/lt_gemm.h"
#include "kernels/matmul.h"

typedef struct {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t b, a, c; /* column-major: B^T (N x K), A^T (K x M), C^T (N x M) */
    cublasLtMatmulAlgo_t algo;
    void *workspace;
} lt_ctx;

static const char *lt_error(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? NULL : cublasLtGetStatusString(s);
}

static void teardown(void *ctx)
{
    lt_ctx *c = (lt_ctx *)ctx;
    if (!c)
        return;
    cudaFree(c->workspace);
    if (c->c)
        cublasLtMatrixLayoutDestroy(c->c);
    if (c->a)
        cublasLtMatrixLayoutDestroy(c->a);
    if (c->b)
        cublasLtMatrixLayoutDestroy(c->b);
    if (c->desc)
        cublasLtMatmulDescDestroy(c->desc);
    if (c->lt)
        cublasLtDestroy(c->lt);
    free(c);
}

/* The product: fp32 compute and scales, bf16 operands, no transposes (the
 * descriptor's default). */
static cublasStatus_t describe(lt_ctx *c, const kb_matmul_args *a)
{
    cublasStatus_t s = cublasLtCreate(&c->lt);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescCreate(&c->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&c->b, CUDA_R_16BF, (uint64_t)a->N, (uint64_t)a->K, a->N);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&c->a, CUDA_R_16BF, (uint64_t)a->K, (uint64_t)a->M, a->K);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutCreate(&c->c, CUDA_R_16BF, (uint64_t)a->N, (uint64_t)a->M, a->N);
    return s;
}

/* The heuristic's first algorithm within the workspace.  It assumes 256-byte
 * aligned pointers, which the harness's cudaMalloc'd tensors are. */
static const char *pick_algo(lt_ctx *c)
{
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t result = {};
    const uint64_t ws = KB_LT_WORKSPACE_BYTES;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(c->lt, c->desc, c->b, c->a, c->c, c->c, pref, 1, &result, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS)
        return lt_error(s);
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return "cuBLASLt has no algorithm for this product";
    c->algo = result.algo;
    return NULL;
}

static const char *setup(const void *args, void **ctx)
{
    lt_ctx *c = (lt_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *err = lt_error(describe(c, (const kb_matmul_args *)args));
    if (!err)
        err = pick_algo(c);
    if (!err && cudaMalloc(&c->workspace, KB_LT_WORKSPACE_BYTES) != cudaSuccess)
        err = "cannot allocate the cuBLASLt workspace";
    if (err) {
        teardown(c);
        return err;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const lt_ctx *c = (const lt_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    return lt_error(cublasLtMatmul(c->lt, c->desc, &one, a->B16, c->b, a->A16, c->a, &zero, a->C16, c->c,
                                   a->C16, c->c, &c->algo, c->workspace, KB_LT_WORKSPACE_BYTES, stream));
}

extern "C" const kb_variant matmul_cublaslt_bf16 = {
    .name = "cublaslt_bf16",
    .summary = "cuBLASLt, first heuristic algorithm, bf16 in/out, fp32 accumulation",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_CUBLAS,
    .min_cc = 80,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
