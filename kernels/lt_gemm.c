/* The shared cuBLASLt product (kernels/lt_gemm.h). */
#include <stdint.h>
#include <stdlib.h>
#include "kernels/lt_gemm.h"

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

static cublasStatus_t set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                               uint32_t value)
{
    return cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value);
}

static const char *pick_algo(kb_lt_product *p, cublasLtHandle_t lt, const void *X, const void *W,
                             const void *Y)
{
    cublasLtMatmulPreference_t pref = NULL;
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = KB_LT_WORKSPACE_BYTES;
    cublasLtMatmulHeuristicResult_t result = {0};
    int found = 0;
    /* Column-major operand A is W, B is X; C is Y (read only when accumulating). */
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment(W));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment(X));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment(Y));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment(Y));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->w, p->x, p->y, p->y, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    LT_TRY(s);
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        return "cuBLASLt has no algorithm for this product";
    p->algo = result.algo;
    return NULL;
}

/* The descriptor and layouts: A = W (transposed when trans_w), B = X, C = D = Y. */
static const char *describe(kb_lt_product *p, cublasComputeType_t compute, cudaDataType_t in, cudaDataType_t out,
                            int M, int N, int K, int trans_w, cublasLtEpilogue_t epi, const void *bias)
{
    const cublasOperation_t no_trans = CUBLAS_OP_N, op_w = trans_w ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_w, sizeof op_w));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof no_trans));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (trans_w)
        LT_TRY(cublasLtMatrixLayoutCreate(&p->w, in, (uint64_t)K, (uint64_t)N, (int64_t)K));
    else
        LT_TRY(cublasLtMatrixLayoutCreate(&p->w, in, (uint64_t)N, (uint64_t)K, (int64_t)N));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->x, in, (uint64_t)K, (uint64_t)M, (int64_t)K));
    LT_TRY(cublasLtMatrixLayoutCreate(&p->y, out, (uint64_t)N, (uint64_t)M, (int64_t)N));
    return NULL;
}

const char *kb_lt_plan(kb_lt_product *p, cublasLtHandle_t lt, cublasComputeType_t compute, cudaDataType_t type,
                       int M, int N, int K, cublasLtEpilogue_t epi, const void *bias, const void *X,
                       const void *W, const void *Y)
{
    p->accumulate = 0;
    const char *err = describe(p, compute, type, type, M, N, K, 0, epi, bias);
    return err ? err : pick_algo(p, lt, X, W, Y);
}

const char *kb_lt_plan_linear(kb_lt_product *p, cublasLtHandle_t lt, int M, int N, int K, int accumulate,
                              const void *X, const void *W, const void *Y)
{
    p->accumulate = accumulate;
    const char *err = describe(p, CUBLAS_COMPUTE_32F, CUDA_R_16BF, accumulate ? CUDA_R_32F : CUDA_R_16BF, M, N, K,
                               1, CUBLASLT_EPILOGUE_DEFAULT, NULL);
    return err ? err : pick_algo(p, lt, X, W, Y);
}

const char *kb_lt_plan_linear_fp8(kb_lt_product *p, cublasLtHandle_t lt, int M, int N, int K, const void *X,
                                  const void *W, const void *Y, const float *scale_x, const float *scale_w)
{
    const int8_t fast_accum = 0;
    p->accumulate = 0;
    const char *err = describe(p, CUBLAS_COMPUTE_32F, CUDA_R_8F_E4M3, CUDA_R_16BF, M, N, K, 1,
                               CUBLASLT_EPILOGUE_DEFAULT, NULL);
    if (err)
        return err;
    /* cuBLASLt's A is W and its B is X (describe's column-major swap). */
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_w, sizeof scale_w));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_x, sizeof scale_x));
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_accum, sizeof fast_accum));
    return pick_algo(p, lt, X, W, Y);
}

const char *kb_lt_run(const kb_lt_product *p, cublasLtHandle_t lt, const void *bias, const void *X,
                      const void *W, void *Y, void *workspace, cudaStream_t stream)
{
    const float one = 1.0f, beta = p->accumulate ? 1.0f : 0.0f;
    LT_TRY(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    return lt_error(cublasLtMatmul(lt, p->desc, &one, W, p->w, X, p->x, &beta, Y, p->y, Y, p->y, &p->algo,
                                   workspace, KB_LT_WORKSPACE_BYTES, stream));
}

void kb_lt_destroy(kb_lt_product *p)
{
    if (p->y)
        cublasLtMatrixLayoutDestroy(p->y);
    if (p->x)
        cublasLtMatrixLayoutDestroy(p->x);
    if (p->w)
        cublasLtMatrixLayoutDestroy(p->w);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
    p->y = p->x = p->w = NULL;
    p->desc = NULL;
}

void kb_lt_single_free(void *ctx)
{
    kb_lt_single *c = ctx;
    if (!c)
        return;
    cudaFree(c->workspace);
    kb_lt_destroy(&c->product);
    if (c->lt)
        cublasLtDestroy(c->lt);
    free(c);
}

const char *kb_lt_single_open(kb_lt_single **out)
{
    kb_lt_single *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return "out of host memory";
    const char *err = cublasLtCreate(&c->lt) == CUBLAS_STATUS_SUCCESS ? NULL : "cannot create a cuBLASLt handle";
    if (!err && cudaMalloc(&c->workspace, KB_LT_WORKSPACE_BYTES) != cudaSuccess)
        err = "cannot allocate the cuBLASLt workspace";
    if (err)
        kb_lt_single_free(c);
    else
        *out = c;
    return err;
}

const char *kb_lt_single_done(kb_lt_single *c, const char *err, void **ctx)
{
    if (err)
        kb_lt_single_free(c);
    else
        *ctx = c;
    return err;
}

const char *kb_lt_single_run(const kb_lt_single *c, const void *X, const void *W, void *Y, cudaStream_t stream)
{
    return kb_lt_run(&c->product, c->lt, NULL, X, W, Y, c->workspace, stream);
}

void kb_lt_warm(void)
{
    cublasLtHandle_t lt;
    kb_lt_product p = {0};
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS)
        return;
    /* NULL pointers plan for 256-byte alignment; nothing is read. */
    kb_lt_plan(&p, lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, 4096, 4096, 4096, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL,
               NULL, NULL);
    kb_lt_destroy(&p);
    cublasLtDestroy(lt);
}
