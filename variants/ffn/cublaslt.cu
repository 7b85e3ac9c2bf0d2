/* ffn cublaslt: the baseline, two cuBLASLt matmuls in plain fp32
 * (CUBLAS_COMPUTE_32F: no tf32 tensor-core math) with cuBLASLt's fused
 * epilogues, as a framework's fused Linear (addmm with bias) runs them:
 *   1. h = relu(x W1 + b1)   CUBLASLT_EPILOGUE_RELU_BIAS, bias b1
 *   2. y = h W2 + b2         CUBLASLT_EPILOGUE_BIAS, bias b2
 * Each is a row-major product of kernels/lt_gemm.h (b1 has F entries, b2
 * has D).
 * The handle, the descriptors, the layouts, a heuristic-chosen algorithm per
 * product, a 32 MiB workspace and the M x F hidden h are made in setup from
 * the shape and pointers (the heuristic sees their alignments); launch only
 * enqueues the two matmuls.
 *
 * Prediction: the speed of cuBLAS SGEMM on each product, the bias and ReLU
 * free in the epilogue.
 * Measured (results/h100/kbench-20261123-164335.csv, H100, cold L2):
 * 51.8 TFLOP/s at 8192x4096x16384, 81.5% of the run's 63.6 TFLOP/s fp32
 * ceiling (matmul cublas: 51.5-51.7).
 * Gap to the limit: 18 points to the fp32 ceiling; h makes a round trip
 * through memory between the two products.  History: docs/notes/matmul.md. */
#include <stdlib.h>
#include "kernels/ffn.h"
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"

typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    float *h; /* M x F hidden activation */
    kb_lt_product p1, p2;
} cublaslt_ctx;

static void teardown(void *ctx)
{
    cublaslt_ctx *c = (cublaslt_ctx *)ctx;
    if (!c)
        return;
    kb_lt_destroy(&c->p1);
    kb_lt_destroy(&c->p2);
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
        e = cudaMalloc(&c->workspace, KB_LT_WORKSPACE_BYTES);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    if (cublasLtCreate(&c->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    const char *err = kb_lt_plan(&c->p1, c->lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, a->M, a->F, a->D,
                                 CUBLASLT_EPILOGUE_RELU_BIAS, a->b1, a->x, a->w1, c->h);
    if (err)
        return err;
    return kb_lt_plan(&c->p2, c->lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, a->M, a->D, a->F, CUBLASLT_EPILOGUE_BIAS, a->b2,
                      c->h, a->w2, a->y);
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
    const char *err = kb_lt_run(&c->p1, c->lt, a->b1, a->x, a->w1, c->h, c->workspace, stream);
    if (err)
        return err;
    return kb_lt_run(&c->p2, c->lt, a->b2, c->h, a->w2, a->y, c->workspace, stream);
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
