/* ffn cublaslt_bf16: the bf16 baseline, cublaslt's two fused products in
 * bf16 storage with fp32 accumulation (CUBLAS_COMPUTE_32F on bf16
 * operands: the tensor cores), as a framework's bf16 Linear layers run them:
 *   1. h = relu(x W1 + b1)   CUBLASLT_EPILOGUE_RELU_BIAS, bias b1 (bf16)
 *   2. y = h W2 + b2         CUBLASLT_EPILOGUE_BIAS, bias b2 (bf16)
 * The epilogues add the bias and clamp in fp32; h and y are rounded to bf16
 * as they are stored.  Plans, workspace and the M x F bf16 h are made in
 * setup; launch only enqueues the two matmuls.  It is the bf16 rows'
 * baseline, so the tensor-parallel rows' speedup is "x the same layer on
 * one GPU".
 *
 * Builds on cublaslt (the same plan in bf16) and matmul cublaslt_bf16 (the
 * same product without epilogue).
 * Prediction: the speed of the two bf16 GEMMs, ~730 TFLOP/s at
 * 8192x8192x32768 on an H200 (~12 ms), h's round trip through memory
 * (2 x 512 MB at ~4.5 TB/s, in the shadow of the math) nearly free.
 * Measured: pending (no GPU run since it was written).
 * Gap to the limit: the GEMMs' own gap to the bf16 tensor ceiling
 * (matmul cublaslt_bf16: none at 8192^3 on an H100).
 * History: docs/notes/ffn-tensor-parallel.md. */
#include <stdlib.h>
#include "kernels/ffn.h"
#include "kernels/lt_gemm.h"

typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    uint16_t *h; /* M x F hidden activation, bf16 */
    kb_lt_product p1, p2;
} lt_bf16_ctx;

static void teardown(void *ctx)
{
    lt_bf16_ctx *c = (lt_bf16_ctx *)ctx;
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

static const char *setup_ctx(lt_bf16_ctx *c, const kb_ffn_args *a)
{
    cudaError_t e = cudaMalloc(&c->h, (size_t)a->M * a->F * sizeof *c->h);
    if (e == cudaSuccess)
        e = cudaMalloc(&c->workspace, KB_LT_WORKSPACE_BYTES);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    if (cublasLtCreate(&c->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    const char *err = kb_lt_plan(&c->p1, c->lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, a->M, a->F, a->D,
                                 CUBLASLT_EPILOGUE_RELU_BIAS, a->b1_16, a->x16, a->w1_16, c->h);
    if (err)
        return err;
    return kb_lt_plan(&c->p2, c->lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, a->M, a->D, a->F, CUBLASLT_EPILOGUE_BIAS,
                      a->b2_16, c->h, a->w2_16, a->y16);
}

static const char *setup(const void *args, void **ctx)
{
    lt_bf16_ctx *c = (lt_bf16_ctx *)calloc(1, sizeof *c);
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
    const lt_bf16_ctx *c = (const lt_bf16_ctx *)ctx;
    const char *err = kb_lt_run(&c->p1, c->lt, a->b1_16, a->x16, a->w1_16, c->h, c->workspace, stream);
    if (err)
        return err;
    return kb_lt_run(&c->p2, c->lt, a->b2_16, c->h, a->w2_16, a->y16, c->workspace, stream);
}

extern "C" const kb_variant ffn_cublaslt_bf16 = {
    .name = "cublaslt_bf16",
    .summary = "two cuBLASLt bf16 matmuls, fp32 accumulation, bias+ReLU and bias epilogues (bf16 baseline)",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_CUBLAS,
    .min_cc = 80,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
