/* cuBLAS plumbing shared by the cublas, cublas_tf32 and cublas
 * variants: a handle made in .setup with a chosen math mode, destroyed in
 * .teardown, and the row-major product expressed as a column-major GEMM. */
#ifndef KBENCH_MATMUL_CUBLAS_COMMON_H
#define KBENCH_MATMUL_CUBLAS_COMMON_H

#include <cublas_v2.h>
#include "ops/matmul.h"

/* A static string for a cuBLAS status, NULL for success. */
static inline const char *kb_cublas_error(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? NULL : cublasGetStatusString(s);
}

/* Create a handle whose SGEMMs use `mode` (CUBLAS_DEFAULT_MATH: plain fp32;
 * CUBLAS_TF32_TENSOR_OP_MATH: tf32 tensor cores). */
static inline const char *kb_cublas_setup(void **ctx, cublasMath_t mode)
{
    cublasHandle_t h = NULL;
    const char *err = kb_cublas_error(cublasCreate(&h));
    if (err)
        return err;
    err = kb_cublas_error(cublasSetMathMode(h, mode));
    if (err) {
        cublasDestroy(h);
        return err;
    }
    *ctx = h;
    return NULL;
}

static inline void kb_cublas_teardown(void *ctx)
{
    if (ctx)
        cublasDestroy((cublasHandle_t)ctx);
}

/* The handle that .setup put in ctx, its work enqueued on `stream`. */
static inline const char *kb_cublas_on(void *ctx, cudaStream_t stream, cublasHandle_t *h)
{
    *h = (cublasHandle_t)ctx;
    return kb_cublas_error(cublasSetStream(*h, stream));
}

/* Row-major C = A * B is column-major C^T = B^T * A^T, and a row-major
 * matrix read column-major is its transpose, so: SGEMM with no transposes,
 * operands swapped, m = N, n = M. */
static inline const char *kb_cublas_matmul(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const float one = 1.0f, zero = 0.0f;
    cublasHandle_t h;
    const char *err = kb_cublas_on(ctx, stream, &h);
    return err ? err : kb_cublas_error(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, a->N, a->M, a->K, &one,
                                                   a->B, a->N, a->A, a->K, &zero, a->C, a->N));
}

#endif
