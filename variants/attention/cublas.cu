/* attention cublas: the baseline, the unfused library recipe in plain fp32
 * (CUBLAS_DEFAULT_MATH: no tf32), over a B*H*Tq*Tk score workspace:
 *   1. S = scale * Q K^T, one strided-batched SGEMM over the B*H heads
 *      (the scale rides on alpha);
 *   2. a row softmax of S in place: not causal, our fastest softmax
 *      (softmax_vectorized, rows in registers, one read and one write);
 *      causal, the same register-resident row code with the mask fused in
 *      (row i keeps keys 0..i + Tk - Tq, writes zeros past them; a row
 *      that keeps none, when Tq > Tk, is zeros), so S needs no separate
 *      masking pass;
 *   3. O = P V, a second strided-batched SGEMM.
 * cuBLAS is column-major, and a row-major matrix read column-major is its
 * transpose: row-major S (Tq x Tk) = Q K^T is column-major S^T = K Q^T,
 * gemm(T, N, Tk, Tq, D); row-major O (Tq x D) = P V is column-major
 * O^T = V^T P^T, gemm(N, N, D, Tq, Tk).  Grouped-query attention: the
 * group = H / Hkv query heads that share a KV head are contiguous in Q, S
 * and O, so each GEMM batch is one (b, KV head) with group * Tq rows:
 * B * Hkv batches of gemm(T, N, Tk, group*Tq, D) and gemm(N, N, D,
 * group*Tq, Tk); group = 1 is the multi-head case.
 *
 * Prediction: the SGEMMs run near cuBLAS's 50 TFLOP/s, but S makes ~16
 * bytes per score of traffic (SGEMM write, softmax read and write, SGEMM
 * read), against 4*D FLOPs per score: at D = 64, 256 FLOPs per 16 bytes,
 * so ~3 TB/s caps it near 45 TFLOP/s at best and the three passes in
 * sequence land it at ~15-25 TFLOP/s at T = 4096.  Causal shapes do the
 * full work and count half the FLOPs.  Shapes whose scores do not fit in
 * memory are skipped.
 * Measured (results/h100/kbench-20261127-195738.csv; % of the run's 62.9
 * TFLOP/s fp32 ceiling): 28.6 TFLOP/s at 4x16x4096x4096x64 (45.5%), 37.9 at
 * 2x16x4096x4096x128 (60.3%), 38.0 at 4x16x8192x8192x128 (60.5%), 19.9 at
 * ..128c (31.7%).
 * Gap to the limit: the score matrix round trip; a fused kernel never
 * writes it. */
#include <cublas_v2.h>
#include "ops/attention.h"
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_softmax.cuh"
#include "variants/attention/attention_common.cuh"

extern "C" const kb_variant softmax_vectorized;

struct CublasCtx {
    cublasHandle_t handle;
    float *scores;
};

static const char *cublas_error(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? NULL : cublasGetStatusString(s);
}

/* Keys 0 .. causal_keys - 1 of row r (query i = r % Tq) survive the causal
 * mask, bottom-right aligned: i + Tk - Tq + 1, clamped to [0, Tk]. */
__device__ __forceinline__ int causal_keys(int64_t r, int Tq, int Tk)
{
    const int64_t n = r % Tq + 1 + (int64_t)Tk - Tq;
    return n < 0 ? 0 : n > Tk ? Tk : (int)n;
}

/* Causal row softmax of S in place, rows in registers (kernels/reduce.cuh's
 * KbRowCfg, as softmax_vectorized): row r keeps keys 0 .. causal_keys - 1;
 * the rest of the row becomes 0.  A row that keeps none is all -inf, which
 * kb_row_softmax_store writes as zeros. */
template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK)
attention_causal_softmax_kernel(int R, int C, int Tq, float *S)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    const int keys = p.row < R ? causal_keys(p.row, Tq, C) : 0;
    float v[Cfg::PACKS][Cfg::VEC];

#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        /* keys <= C: the pack lies inside the row.  S is rewritten in place,
         * but each element is read once, by the thread that later writes it,
         * so the read-only path never holds a value this kernel changed. */
        if (col < keys)
            kb_load_once(v[k], S + p.base + col);
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j)
            if (col + j >= keys)
                v[k][j] = -INFINITY;
    }
    kb_row_softmax_store<Cfg>(v, S + p.base, p.cols, p.rank);
}

/* Rows too long for registers (Tk > 32768): one block per row, a running
 * (max, sum) sweep, then a second sweep that writes (only zeros when the
 * row keeps no key). */
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK)
attention_causal_softmax_long_kernel(int C, int Tq, float *S)
{
    float *x = S + (size_t)blockIdx.x * C;
    const int keys = causal_keys(blockIdx.x, Tq, C);
    KbSoftmaxStat st = {-INFINITY, 0.0f};
    for (int col = threadIdx.x; col < keys; col += KB_TWO_READ_BLOCK)
        kb_softmax_stat_push(st, x[col]);
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});
    const float inv = 1.0f / st.s;
    for (int col = threadIdx.x; col < C; col += KB_TWO_READ_BLOCK)
        x[col] = col < keys ? expf(x[col] - st.m) * inv : 0.0f;
}

static const char *causal_softmax(int R, int C, int Tq, float *S, cudaStream_t stream)
{
    bool in_registers = kb_row_dispatch(C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        attention_causal_softmax_kernel<Cfg><<<kb_row_grid<Cfg>(R), Cfg::BLOCK, 0, stream>>>(R, C, Tq, S);
    });
    if (!in_registers)
        attention_causal_softmax_long_kernel<<<R, KB_TWO_READ_BLOCK, 0, stream>>>(C, Tq, S);
    KB_LAUNCHED();
}

static const char *setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    CublasCtx *c = new CublasCtx{NULL, NULL};
    const char *e = cublas_error(cublasCreate(&c->handle));
    if (!e)
        e = cublas_error(cublasSetMathMode(c->handle, CUBLAS_DEFAULT_MATH));
    if (!e)
        e = kb_attention_alloc_scores(a, &c->scores);
    if (e) {
        if (c->handle)
            cublasDestroy(c->handle);
        delete c;
        *ctx = NULL;
        return e;
    }
    *ctx = c;
    return NULL;
}

static void teardown(void *ctx)
{
    CublasCtx *c = (CublasCtx *)ctx;
    if (!c)
        return;
    cudaFree(c->scores);
    cublasDestroy(c->handle);
    delete c;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    CublasCtx *c = (CublasCtx *)ctx;
    const int group = kb_attention_group(a);
    const int batch = a->B * (a->H / group); /* (b, KV head) pairs */
    const int rows = group * a->Tq;          /* a batch's query rows: its group's heads */
    const long long sq = (long long)rows * a->D, skv = (long long)a->Tk * a->D;
    const long long ss = (long long)rows * a->Tk;
    const float one = 1.0f, zero = 0.0f;
    const char *e = cublas_error(cublasSetStream(c->handle, stream));
    if (e)
        return e;
    /* S^T (Tk x rows, column-major) = K (Tk x D) * Q^T (D x rows) * scale */
    e = cublas_error(cublasSgemmStridedBatched(c->handle, CUBLAS_OP_T, CUBLAS_OP_N, a->Tk, rows, a->D,
                                               &a->scale, (const float *)a->k, a->D, skv,
                                               (const float *)a->q, a->D, sq, &zero, c->scores, a->Tk,
                                               ss, batch));
    if (e)
        return e;
    const int R = batch * rows; /* B * H * Tq */
    if (a->causal) {
        e = causal_softmax(R, a->Tk, a->Tq, c->scores, stream);
    } else {
        const kb_softmax_args sm = {R, a->Tk, c->scores, c->scores}; /* in place */
        e = softmax_vectorized.launch(&sm, NULL, stream);
    }
    if (e)
        return e;
    /* O^T (D x rows) = V^T (D x Tk) * P^T (Tk x rows) */
    return cublas_error(cublasSgemmStridedBatched(c->handle, CUBLAS_OP_N, CUBLAS_OP_N, a->D, rows, a->Tk,
                                                  &one, (const float *)a->v, a->D, skv, c->scores, a->Tk,
                                                  ss, &zero, (float *)a->o, a->D, sq, batch));
}

/* cuBLAS's m, n and k, and the softmax's row count, are int. */
static const char *unsupported(const kb_shape *s)
{
    const int64_t rows = kb_mul_dims(kb_mul_dims(s->d[0], s->d[1]), s->d[2]);
    return rows < 0 || rows > INT32_MAX ? "B*H*Tq > 2^31 - 1: cuBLAS and the softmax index rows with int" : NULL;
}

extern "C" const kb_variant attention_cublas[] = {
    {
        .name = "cublas",
        .summary = "cuBLAS SGEMM (fp32 math), softmax over the score matrix, SGEMM",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUBLAS,
        .unsupported = unsupported,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
