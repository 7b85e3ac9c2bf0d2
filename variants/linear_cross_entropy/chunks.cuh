/* The steps linear_cross_entropy's cuBLAS rungs share: for a chunk of
 * token rows, its logits by one GEMM, cross-entropy's loss and dz in place
 * of them (kernels/cross_entropy_row.cuh), then dh of the chunk's rows and
 * its share of dW by two more.  cuBLAS is column-major: a row-major X is
 * read as X^T, so z^T = W h^T, dh^T = W^T dz^T and dW^T = h^T dz.
 *
 * The vocabulary is padded to a multiple of 8 for the GEMMs: on the H200
 * at 8192x50257x768, cuBLAS ran the logits GEMM at 96 TFLOP/s and dh's at
 * 133 with V odd, and at 767 and 901 with V = 50264 (.dev probe, zero
 * data).  So when V is not a multiple of 8, W is copied into rows of a
 * zeroed Vp x D buffer (its pad rows make pad logits of exactly 0, which
 * then add exactly 0 to dh), and dW is made in a Vp x D buffer whose first
 * V rows are copied out at the end: two copies of V D bf16 per launch. */
#ifndef KBENCH_LINEAR_CROSS_ENTROPY_CHUNKS_CUH
#define KBENCH_LINEAR_CROSS_ENTROPY_CHUNKS_CUH

#include <cublas_v2.h>
#include "ops/linear_cross_entropy.h"
#include "kernels/cross_entropy_row.cuh"
#include "variants/matmul/cublas_common.h"

typedef struct {
    cublasHandle_t blas;
    int rows;             /* token rows a chunk holds */
    int vp;               /* V rounded up to 8: the GEMMs' V and the logits' row stride */
    __nv_bfloat16 *z;     /* rows x vp logits, then their dz */
    __nv_bfloat16 *w, *dw; /* vp x D copies of W and dW when vp > V, else NULL */
} kb_lce_chunks;

static int kb_lce_vp(int V) { return (V + 7) / 8 * 8; }

static const char *kb_lce_alloc(__nv_bfloat16 **p, size_t elems)
{
    return kb_cuda_status(cudaMalloc(p, elems * sizeof **p));
}

static void kb_lce_chunks_teardown(void *ctx)
{
    kb_lce_chunks *c = (kb_lce_chunks *)ctx;
    cudaFree(c->z);
    cudaFree(c->w);
    cudaFree(c->dw);
    kb_cublas_teardown(c->blas);
    free(c);
}

/* A handle and room for `rows` rows of logits. */
static const char *kb_lce_chunks_setup(const kb_linear_cross_entropy_args *a, int rows, void **ctx)
{
    kb_lce_chunks *c = (kb_lce_chunks *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    c->rows = rows;
    c->vp = kb_lce_vp(a->V);
    const size_t wp = (size_t)c->vp * (size_t)a->D;
    const char *err = kb_cublas_setup((void **)&c->blas, CUBLAS_DEFAULT_MATH);
    if (!err)
        err = kb_lce_alloc(&c->z, (size_t)rows * (size_t)c->vp);
    if (!err && c->vp > a->V)
        err = kb_lce_alloc(&c->w, wp);
    if (!err && c->vp > a->V)
        err = kb_lce_alloc(&c->dw, wp);
    if (!err && c->w)
        err = kb_cuda_status(cudaMemset(c->w, 0, wp * sizeof *c->w));
    if (err) {
        kb_lce_chunks_teardown(c);
        return err;
    }
    *ctx = c;
    return NULL;
}


/* bf16 GEMM with fp32 accumulation, column-major as cuBLAS takes it. */
static const char *kb_lce_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                               const void *A, int lda, const void *B, int ldb, float beta, void *C, int ldc)
{
    const float one = 1.0f;
    return kb_cublas_error(cublasGemmEx(h, ta, tb, m, n, k, &one, A, CUDA_R_16BF, lda, B, CUDA_R_16BF, ldb, &beta,
                                        C, CUDA_R_16BF, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* Rows r0 .. r0 + n - 1: their loss and dh, and their terms of dW (added
 * to the earlier chunks' unless r0 is 0). */
static const char *kb_lce_chunk(const kb_linear_cross_entropy_args *a, kb_lce_chunks *c, const void *w,
                                void *dw, int r0, int n, cudaStream_t stream)
{
    const __nv_bfloat16 *h = (const __nv_bfloat16 *)a->h + (size_t)r0 * a->D;
    const char *err = kb_lce_gemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, c->vp, n, a->D, w, a->D, h, a->D, 0.0f,
                                  c->z, c->vp);
    const kb_cross_entropy_args ce = {n, a->V, a->inv_n, c->z, a->targets + r0, a->loss + r0, c->z};
    if (!err)
        err = kb_cross_entropy_online<__nv_bfloat16>(ce, c->vp, stream);
    if (!err)
        err = kb_lce_gemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, a->D, n, c->vp, w, a->D, c->z, c->vp, 0.0f,
                          (__nv_bfloat16 *)a->dh + (size_t)r0 * a->D, a->D);
    if (!err)
        err = kb_lce_gemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, a->D, c->vp, n, h, a->D, c->z, c->vp,
                          r0 ? 1.0f : 0.0f, dw, a->D);
    return err;
}

/* Every chunk in order on stream. */
static const char *kb_lce_run(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_linear_cross_entropy_args *a = (const kb_linear_cross_entropy_args *)args;
    kb_lce_chunks *c = (kb_lce_chunks *)ctx;
    const size_t wbytes = (size_t)a->V * (size_t)a->D * sizeof(__nv_bfloat16);
    const char *err = kb_cublas_error(cublasSetStream(c->blas, stream));
    if (!err && c->w)
        err = kb_cuda_status(cudaMemcpyAsync(c->w, a->w, wbytes, cudaMemcpyDeviceToDevice, stream));
    const void *w = c->w ? (const void *)c->w : a->w;
    void *dw = c->dw ? (void *)c->dw : a->dw;
    for (int r0 = 0; !err && r0 < a->N; r0 += c->rows)
        err = kb_lce_chunk(a, c, w, dw, r0, a->N - r0 < c->rows ? a->N - r0 : c->rows, stream);
    if (!err && c->dw)
        err = kb_cuda_status(cudaMemcpyAsync(a->dw, c->dw, wbytes, cudaMemcpyDeviceToDevice, stream));
    return err;
}

#endif
