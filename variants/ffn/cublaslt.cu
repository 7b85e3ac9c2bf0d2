/* ffn cublaslt: the baseline, two cuBLASLt matmuls in plain fp32
 * (CUBLAS_COMPUTE_32F: no tf32 tensor-core math) with cuBLASLt's fused
 * epilogues, as a framework's fused Linear (addmm with bias) runs them:
 *   1. h = relu(x W1 + b1)   CUBLASLT_EPILOGUE_RELU_BIAS, bias b1
 *   2. y = h W2 + b2         CUBLASLT_EPILOGUE_BIAS, bias b2
 * Row-major C = A B is column-major C^T = B^T A^T, and a row-major matrix
 * read column-major is its transpose, so each product is a column-major
 * matmul with no transposes, operands swapped, m = N, n = M, k = K.
 * cuBLASLt adds a bias of length m to every column of the column-major D,
 * i.e. bias[i] to D[i][j]: in our row-major output, bias[col] to every row,
 * which is a Linear layer's bias (b1 has F entries, b2 has D).
 * The handle, the descriptors, the layouts, a heuristic-chosen algorithm per
 * product, a 32 MiB workspace and the M x F hidden h are made in setup from
 * the shape and pointers (the heuristic sees their alignments); launch only
 * enqueues the two matmuls.
 *
 * Prediction: the speed of cuBLAS SGEMM (matmul cublas: ~52 TFLOP/s at
 * 4096^3 on H100) on each product, the bias and ReLU free in the epilogue.
 * Measured on H100 (results/h100/, cold L2): 46.3 TFLOP/s at 4096x512x2048
 * (72.8% of peak); 46.7 TFLOP/s at 4096x768x3072 (73.4% of peak); 50.3
 * TFLOP/s at 16384x1024x4096 (79.0% of peak).
 * Gap to the limit: the fp32 FFMA peak, ~67 TFLOP/s at boost clock; h makes
 * a round trip through memory between the two products. */
#include <stdint.h>
#include <stdlib.h>
#include <cublasLt.h>
#include "kernels/ffn.h"
#include "kernels/cuda_util.h"

#define WORKSPACE_BYTES ((size_t)32 << 20)

/* One product D = epilogue(A B + bias), column-major, A m x k, B k x n, D m x n. */
typedef struct {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
} lt_product;

typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    float *h; /* M x F hidden activation */
    lt_product p1, p2;
} cublaslt_ctx;

/* A static string for a cuBLAS status, NULL for success. */
static const char *lt_error(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? NULL : cublasLtGetStatusString(s);
}

#define LT_TRY(call)                                                                               \
    do {                                                                                           \
        const char *lt_try_err_ = lt_error(call);                                                  \
        if (lt_try_err_)                                                                           \
            return lt_try_err_;                                                                    \
    } while (0)

/* The largest power of two dividing p's address, at most 256 (cuBLASLt's
 * default assumption), so the heuristic skips algorithms that need more. */
static uint32_t alignment(const void *p)
{
    uint32_t a = 256;
    while (a > 1 && ((uintptr_t)p & (a - 1)))
        a >>= 1;
    return a;
}

/* Describe D (m x n) = epi(A (m x k) B (k x n) + bias), all column-major with
 * leading dimensions m, k and m, and pick an algorithm for these pointers. */
static const char *product_setup(lt_product *p, cublasLtHandle_t lt, int m, int n, int k,
                                 cublasLtEpilogue_t epi, const float *bias, const float *A,
                                 const float *B, const float *D)
{
    const cublasOperation_t no_trans = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &no_trans,
                                          sizeof no_trans));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans,
                                          sizeof no_trans));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                          sizeof bias));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, (uint64_t)m, (uint64_t)k, (int64_t)m));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, (uint64_t)k, (uint64_t)n, (int64_t)k));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, (uint64_t)m, (uint64_t)n, (int64_t)m));

    cublasLtMatmulPreference_t pref = NULL;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = WORKSPACE_BYTES;
    const uint32_t align_a = alignment(A), align_b = alignment(B), align_d = alignment(D);
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                 &align_a, sizeof align_a);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                 &align_b, sizeof align_b);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                 &align_d, sizeof align_d);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                 &align_d, sizeof align_d);
    /* C is D (beta = 0: never read). */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->a, p->b, p->d, p->d, pref, 1, &result,
                                           &found);
    cublasLtMatmulPreferenceDestroy(pref);
    LT_TRY(s);
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return "cuBLASLt has no algorithm for this product";
    p->algo = result.algo;
    return NULL;
}

static void product_teardown(lt_product *p)
{
    if (p->d)
        cublasLtMatrixLayoutDestroy(p->d);
    if (p->b)
        cublasLtMatrixLayoutDestroy(p->b);
    if (p->a)
        cublasLtMatrixLayoutDestroy(p->a);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
}

static const char *product_launch(const lt_product *p, const cublaslt_ctx *c, const float *bias,
                                  const float *A, const float *B, float *D, cudaStream_t stream)
{
    const float one = 1.0f, zero = 0.0f;
    /* Already set in setup; set again in case these args' bias moved. */
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                          sizeof bias));
    return lt_error(cublasLtMatmul(c->lt, p->desc, &one, A, p->a, B, p->b, &zero, D, p->d, D,
                                   p->d, &p->algo, c->workspace, WORKSPACE_BYTES, stream));
}

static void teardown(void *ctx)
{
    cublaslt_ctx *c = (cublaslt_ctx *)ctx;
    if (!c)
        return;
    product_teardown(&c->p1);
    product_teardown(&c->p2);
    if (c->lt)
        cublasLtDestroy(c->lt);
    cudaFree(c->workspace);
    cudaFree(c->h);
    free(c);
}

static const char *setup_ctx(cublaslt_ctx *c, const kb_ffn_args *a)
{
    cudaError_t e = cudaMalloc(&c->h, (size_t)a->M * a->F * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc(&c->workspace, WORKSPACE_BYTES);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    LT_TRY(cublasLtCreate(&c->lt));
    /* h^T (F x M) = W1^T (F x D) x^T (D x M), then relu(. + b1) per row of h^T. */
    const char *err = product_setup(&c->p1, c->lt, a->F, a->M, a->D, CUBLASLT_EPILOGUE_RELU_BIAS,
                                    a->b1, a->w1, a->x, c->h);
    if (err)
        return err;
    /* y^T (D x M) = W2^T (D x F) h^T (F x M), then + b2 per row of y^T. */
    return product_setup(&c->p2, c->lt, a->D, a->M, a->F, CUBLASLT_EPILOGUE_BIAS, a->b2, a->w2,
                         c->h, a->y);
}

static const char *setup(const void *args, void **ctx)
{
    cublaslt_ctx *c = (cublaslt_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *err = setup_ctx(c, (const kb_ffn_args *)args);
    if (err) {
        teardown(c);
        return err;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    const cublaslt_ctx *c = (const cublaslt_ctx *)ctx;
    const char *err = product_launch(&c->p1, c, a->b1, a->w1, a->x, c->h, stream);
    if (err)
        return err;
    return product_launch(&c->p2, c, a->b2, a->w2, c->h, a->y, stream);
}

extern "C" const kb_variant ffn_cublaslt = {
    .name = "cublaslt",
    .summary = "two cuBLASLt fp32 matmuls, bias+ReLU and bias epilogues (baseline)",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .needs = KB_NEEDS_CUBLAS,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
