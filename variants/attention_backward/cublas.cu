/* attention_backward cublas: the unfused library recipe, five bf16 GEMMs
 * (fp32 accumulation) from cuBLAS around one elementwise pass, over
 * B*H*Tq*Tk score workspaces:
 *   1. D_i = do_i . o_i (one warp per row);
 *   2. S = Q K^T and dP = dO V^T, fp32 out;
 *   3. one pass over the scores: P = exp(scale S - lse) where the mask
 *      keeps the pair, 0 elsewhere; dS = P (dP - D_i); both to bf16, the
 *      next products' operands;
 *   4. dV = P^T dO, dK = scale dS^T Q, dQ = scale dS K, bf16 out.
 * Each GEMM batch is one (b, KV head) with its group * Tq query rows,
 * contiguous in Q, dO, dQ and the scores, so GQA's sum over the group's
 * heads is the GEMMs' own K dimension.  cuBLAS is column-major and a
 * row-major matrix read column-major is its transpose: row-major S
 * (rows x Tk) = Q K^T is column-major S^T = K Q^T, gemm(T, N, Tk, rows,
 * D); dV (Tk x D) = P^T dO is column-major dV^T = dO^T P, gemm(N, T, D,
 * Tk, rows); dQ (rows x D) = dS K is column-major dQ^T = K^T dS^T,
 * gemm(N, N, D, rows, Tk).  Causal shapes do the whole square.
 *
 * Builds on: naive, with its loops as library GEMMs.
 * Prediction: the GEMMs at ~600 TFLOP/s take ~1.2 ms at 2x16x4096x4096x128
 * (6.9e11 FLOPs); the elementwise pass moves 12 bytes a score (5.4e8
 * scores: ~1.9 ms at 3.5 TB/s) and the GEMMs another 12 (S and dP
 * written, P and dS read twice in bf16): some 4-5 ms, 150-200 TFLOP/s.
 * Shapes whose workspaces (12 bytes a score) do not fit are skipped.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 164
 * TFLOP/s at 2x16x4096x4096x128 (4.20 ms), 17.0% of the run's 961 TFLOP/s
 * bf16 tensor ceiling; 82 causal (8.6%).
 * Gap to the limit: 83.0 points: the score round trips; the fused rungs
 * keep them on chip. */
#include <cublas_v2.h>
#include "ops/attention.h"
#include "ops/attention_backward.h"
#include "kernels/cuda_util.h"
#include "variants/attention_backward/backward_common.cuh"

typedef __nv_bfloat16 bf16;

struct CublasCtx {
    cublasHandle_t handle;
    float *dot, *S, *dP;
    bf16 *P, *dS;
};

static const char *cublas_error(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? NULL : cublasGetStatusString(s);
}

/* P and dS of every score, grid-stride over (row, key). */
__global__ void __launch_bounds__(256)
atb_cublas_probs_kernel(int64_t n, int Tq, int Tk, int causal, float scale, const float *lse, const float *dot,
                        const float *S, const float *dP, bf16 *P, bf16 *dS)
{
    for (int64_t at = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; at < n; at += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = at / Tk;
        const int j = (int)(at % Tk);
        float p = 0, ds = 0;
        if (j < atb_keys((int)(r % Tq), Tq, Tk, causal)) {
            p = expf(scale * S[at] - lse[r]);
            ds = p * (dP[at] - dot[r]);
        }
        P[at] = __float2bfloat16(p);
        dS[at] = __float2bfloat16(ds);
    }
}

static void teardown(void *ctx)
{
    CublasCtx *c = (CublasCtx *)ctx;
    if (!c)
        return;
    cudaFree(c->dot);
    cudaFree(c->S);
    cudaFree(c->dP);
    cudaFree(c->P);
    cudaFree(c->dS);
    if (c->handle)
        cublasDestroy(c->handle);
    delete c;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    const size_t rows = (size_t)a->B * a->H * a->Tq, scores = rows * a->Tk;
    CublasCtx *c = new CublasCtx{};
    const char *e = cublas_error(cublasCreate(&c->handle));
    if (!e)
        e = kb_alloc_workspace((void **)&c->dot, rows * sizeof(float), "D = rowsum(do o)");
    if (!e)
        e = kb_alloc_workspace((void **)&c->S, scores * sizeof(float), "S");
    if (!e)
        e = kb_alloc_workspace((void **)&c->dP, scores * sizeof(float), "dP");
    if (!e)
        e = kb_alloc_workspace((void **)&c->P, scores * sizeof(bf16), "P");
    if (!e)
        e = kb_alloc_workspace((void **)&c->dS, scores * sizeof(bf16), "dS");
    if (e) {
        teardown(c);
        c = NULL;
    }
    *ctx = c;
    return e;
}

/* One strided-batched bf16 GEMM with fp32 accumulation, C of type ct. */
static const char *gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                        float alpha, const void *A, int lda, long long sa, const void *B, int ldb, long long sb,
                        void *C, cudaDataType_t ct, int ldc, long long sc, int batch)
{
    const float zero = 0;
    return cublas_error(cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, &alpha, A, CUDA_R_16BF, lda, sa, B,
                                                   CUDA_R_16BF, ldb, sb, &zero, C, ct, ldc, sc, batch,
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    CublasCtx *c = (CublasCtx *)ctx;
    const int D = a->D, Tk = a->Tk, rows = atb_group(a) * a->Tq, batch = a->B * a->Hkv;
    const long long sq = (long long)rows * D, skv = (long long)Tk * D, ss = (long long)rows * Tk;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    KB_TRY(cublas_error(cublasSetStream(c->handle, stream)));
    KB_TRY(atb_row_dots(a, c->dot, stream));
    /* S^T (Tk x rows) = K Q^T and dP^T = V dO^T */
    KB_TRY(gemm(c->handle, T, N, Tk, rows, D, 1, a->k, D, skv, a->q, D, sq, c->S, CUDA_R_32F, Tk, ss, batch));
    KB_TRY(gemm(c->handle, T, N, Tk, rows, D, 1, a->v, D, skv, a->dout, D, sq, c->dP, CUDA_R_32F, Tk, ss, batch));
    const int64_t n = (int64_t)batch * ss;
    const unsigned blocks = (unsigned)(n < 256 * 4096 ? KB_CEIL_DIV(n, 256) : 4096); /* grid-stride past that */
    atb_cublas_probs_kernel<<<blocks, 256, 0, stream>>>(
        n, a->Tq, Tk, a->causal, a->scale, a->lse, c->dot, c->S, c->dP, c->P, c->dS);
    KB_CUDA_TRY(cudaGetLastError());
    /* dV^T (D x Tk) = dO^T P and dK^T = scale Q^T dS */
    KB_TRY(gemm(c->handle, N, T, D, Tk, rows, 1, a->dout, D, sq, c->P, Tk, ss, a->dv, CUDA_R_16BF, D, skv, batch));
    KB_TRY(gemm(c->handle, N, T, D, Tk, rows, a->scale, a->q, D, sq, c->dS, Tk, ss, a->dk, CUDA_R_16BF, D, skv,
                batch));
    /* dQ^T (D x rows) = scale K^T dS^T */
    return gemm(c->handle, N, N, D, rows, Tk, a->scale, a->k, D, skv, c->dS, Tk, ss, a->dq, CUDA_R_16BF, D, sq,
                batch);
}

/* cuBLAS's m, n and k are int: a KV head's query rows must fit. */
static const char *unsupported(const kb_shape *s)
{
    const int64_t rows = kb_mul_dims(s->d[1] / kb_attention_shape_hkv(s), s->d[2]);
    return rows < 0 || rows > INT32_MAX ? "H/Hkv * Tq > 2^31 - 1: cuBLAS takes int sizes" : NULL;
}

extern "C" const kb_variant attention_backward_cublas[] = {
    {
        .name = "cublas",
        .summary = "cuBLAS bf16 GEMMs (fp32 accumulation) for S, dP, dV, dK, dQ around one elementwise pass",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .unsupported = unsupported,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
