/* attention flash: one fused kernel in plain fp32 FFMA.  A block owns
 * 128 query rows of one head; it streams the keys in tiles of 64 rows of K
 * and V through shared memory and keeps, per query row, the running max m,
 * the running sum l of exp(s - m) and the output accumulator, rescaled by
 * exp(m_old - m_new) whenever the max grows (online softmax).  The score
 * matrix never leaves the chip.  Causal: key tiles wholly above the
 * diagonal (key j > i + Tk - Tq, bottom-right aligned) are never loaded,
 * and only tiles that cross it (or the end of the keys) are masked; a
 * causal Tq > Tk shape SKIPs.  Grouped-query attention: query head bh
 * reads KV head bh / (H / Hkv).
 *
 * Tiling: 256 threads as 32 row groups x 8 column groups; a thread owns a
 * 4 x 8 tile of S and a 4 x D/8 tile of O.  Every shared-memory read is a
 * 16-byte, conflict-free one (K rows padded to D + 4 floats, P rows to 72):
 * 12 LDS.128 per 128 FFMA.  Q is scaled by scale * log2(e) as it is stored,
 * so a score is ready for exp2.  K(t+1) is copied (cp.async) while
 * O += P V(t) runs, V(t+1) while the scores of tile t+1 run.  103 KiB of
 * shared memory and 128 registers at D = 64 (two blocks per SM); D = 128
 * takes 167 KiB and 168 registers, one block per SM.  D is padded to 32,
 * 64 or 128 in shared memory; D % 4 != 0 takes 4-byte copies; D > 128 takes
 * a slow row-per-warp kernel (any D up to 7168).
 *
 * Builds on cublas (the unfused SGEMM, softmax, SGEMM recipe): no score
 * traffic.
 * Measured (results/h100/kbench-20261127-195738.csv; % of the run's 62.9
 * TFLOP/s fp32 ceiling): 38.8 TFLOP/s at 4x16x4096x4096x64 (61.7%, 1.36x
 * cublas), 34.8 at 2x16x4096x4096x128 (55.4%, 0.92x), 35.0 at
 * 4x16x8192x8192x128 (55.6%, 0.92x), 35.4 at ..128c (56.4%, 1.78x).
 * Gap to the limit: the LDS, the softmax, three barriers per tile and the
 * exp2 (MUFU) take the issue slots that FFMAs do not.  History:
 * docs/notes/attention.md. */
#include <stdint.h>
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "variants/attention/attention_common.cuh"

template <int DP>
struct F32Cfg {
    static constexpr int kBR = 128, kBC = 64, kThreads = 256;
    static constexpr int kRowGroups = 32, kColGroups = 8;
    static constexpr int kTM = kBR / kRowGroups;        /* 4 rows per thread */
    static constexpr int kTN = kBC / kColGroups;        /* 8 keys per thread */
    static constexpr int kTD = DP / kColGroups;         /* output columns per thread */
    static constexpr int kNCH = kTD / 4;                /* float4s per V row */
    static constexpr int kLdQ = DP + 4, kLdK = DP + 4, kLdV = DP, kLdP = kBC + 8;
    static constexpr int kSmemFloats = kBR * kLdQ + kBC * kLdK + kBC * kLdV + kBR * kLdP;
    static constexpr int kSmemBytes = kSmemFloats * (int)sizeof(float);
    static constexpr int kMinBlocks = DP <= 64 ? 2 : 1;
    static_assert(DP % 32 == 0, "padded D: 32, 64, 128");
};

/* Column of output chunk h (a float4) of column group cg. */
template <class Cfg>
__device__ __forceinline__ int f32_out_col(int h, int cg)
{
    return h * Cfg::kColGroups * 4 + cg * 4;
}

/* Rows j0.. of K or V (kBC rows, D columns, zero past Tk and past D) into
 * dst with row stride ld: 16-byte copies when VEC (D % 4 == 0), else 4. */
template <class Cfg, int DP, bool VEC>
__device__ __forceinline__ void f32_copy_tile(float *dst, int ld, const float *head, int j0, int Tk,
                                              int D)
{
    constexpr int kW = VEC ? 4 : 1;
    constexpr int kPerRow = DP / kW;
    constexpr int kRowsPerPass = Cfg::kThreads / kPerRow;
    constexpr int kIters = Cfg::kBC / kRowsPerPass;
    static_assert(Cfg::kThreads % kPerRow == 0 && Cfg::kBC % kRowsPerPass == 0, "equal copies per thread");
    const int r0 = (int)threadIdx.x / kPerRow, d = (int)threadIdx.x % kPerRow * kW;
    const bool d_ok = d < D;
    const float *src = head + (size_t)(j0 + r0) * D + d;
    float *out = dst + r0 * ld + d;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
        const bool ok = d_ok && j0 + r0 + it * kRowsPerPass < Tk;
        if constexpr (VEC)
            kb_cp_async16(out, ok ? src : head, ok ? 16 : 0);
        else
            kb_cp_async4(out, ok ? src : head, ok ? 4 : 0);
        src += (size_t)kRowsPerPass * D;
        out += kRowsPerPass * ld;
    }
}

template <int DP, bool VEC>
__global__ void __launch_bounds__(F32Cfg<DP>::kThreads, F32Cfg<DP>::kMinBlocks)
attention_flash_f32_kernel(int Tq, int Tk, int D, int causal, int group, float sl2, int row_tiles, int heads,
                           const float *__restrict__ q, const float *__restrict__ k,
                           const float *__restrict__ v, float *__restrict__ o)
{
    using Cfg = F32Cfg<DP>;
    constexpr int BR = Cfg::kBR, BC = Cfg::kBC, TM = Cfg::kTM, TN = Cfg::kTN, TD = Cfg::kTD;
    constexpr int NCH = Cfg::kNCH, RG = Cfg::kRowGroups, CG = Cfg::kColGroups;
    extern __shared__ __align__(16) float smem[];
    float *Qs = smem;
    float *Ks = Qs + BR * Cfg::kLdQ;
    float *Vs = Ks + BC * Cfg::kLdK;
    float *Ps = Vs + BC * Cfg::kLdV;

    const KbAttnTile tile = kb_attn_tile(row_tiles, heads, BR, causal);
    const int i0 = tile.row0;
    const float *q_head = q + (size_t)tile.bh * Tq * D;
    const float *k_head = k + (size_t)(tile.bh / group) * Tk * D;
    const float *v_head = v + (size_t)(tile.bh / group) * Tk * D;
    const int tid = threadIdx.x, rg = tid / CG, cg = tid % CG;
    const int last_row = min(i0 + BR, Tq) - 1;
    /* Causal: row i sees keys j <= i + off; off >= 0 (Tq <= Tk), and
     * last_row + off <= Tk - 1. */
    const int off = Tk - Tq;
    const int n_tiles = causal ? (last_row + off) / BC + 1 : KB_CEIL_DIV(Tk, BC);

    f32_copy_tile<Cfg, DP, VEC>(Ks, Cfg::kLdK, k_head, 0, Tk, D);
    kb_cp_async_commit();
    f32_copy_tile<Cfg, DP, VEC>(Vs, Cfg::kLdV, v_head, 0, Tk, D);
    kb_cp_async_commit();

    /* Q, scaled, zero past Tq and past D. */
    {
        constexpr int kW = VEC ? 4 : 1, kPerRow = DP / kW, kIters = BR * kPerRow / Cfg::kThreads;
#pragma unroll
        for (int it = 0; it < kIters; ++it) {
            const int c = tid + it * Cfg::kThreads;
            const int r = c / kPerRow, d = c % kPerRow * kW;
            const bool ok = i0 + r < Tq && d < D;
            const float *src = q_head + (size_t)(i0 + r) * D + d;
            if constexpr (VEC) {
                float4 x = ok ? *reinterpret_cast<const float4 *>(src) : make_float4(0.f, 0.f, 0.f, 0.f);
                x.x *= sl2, x.y *= sl2, x.z *= sl2, x.w *= sl2;
                *reinterpret_cast<float4 *>(Qs + r * Cfg::kLdQ + d) = x;
            } else {
                Qs[r * Cfg::kLdQ + d] = ok ? *src * sl2 : 0.0f;
            }
        }
    }

    /* Row r of this thread is rg + 32 r; its keys are cg + 8 c; its output
     * columns are the float4s at 32 h + 4 cg. */
    float acc[TM][TD], m[TM], l[TM];
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
#pragma unroll
        for (int x = 0; x < TD; ++x)
            acc[r][x] = 0.0f;
    }
    const float *q_thr = Qs + rg * Cfg::kLdQ;
    const float *k_thr = Ks + cg * Cfg::kLdK;
    float *p_thr = Ps + rg * Cfg::kLdP;
    const float *v_thr = Vs + cg * 4;

    for (int t = 0; t < n_tiles; ++t) {
        const int j0 = t * BC;
        kb_cp_async_wait<1>(); /* K(t) is in; V(t) may still be in flight */
        __syncthreads();

        /* S = (Q * sl2) K^T for this thread's 4 x 8 tile */
        float s[TM][TN];
#pragma unroll
        for (int r = 0; r < TM; ++r)
#pragma unroll
            for (int c = 0; c < TN; ++c)
                s[r][c] = 0.0f;
#pragma unroll 1 /* unrolled further, the loads run ahead and spill at 128 registers */
        for (int d = 0; d < DP; d += 4) {
            float4 qq[TM];
#pragma unroll
            for (int r = 0; r < TM; ++r)
                qq[r] = *reinterpret_cast<const float4 *>(q_thr + r * RG * Cfg::kLdQ + d);
#pragma unroll
            for (int c = 0; c < TN; ++c) {
                const float4 kk = *reinterpret_cast<const float4 *>(k_thr + c * CG * Cfg::kLdK + d);
#pragma unroll
                for (int r = 0; r < TM; ++r) {
                    s[r][c] = fmaf(qq[r].x, kk.x, s[r][c]);
                    s[r][c] = fmaf(qq[r].y, kk.y, s[r][c]);
                    s[r][c] = fmaf(qq[r].z, kk.z, s[r][c]);
                    s[r][c] = fmaf(qq[r].w, kk.w, s[r][c]);
                }
            }
        }

        /* Keys past Tk, and keys above the diagonal when causal. */
        if (j0 + BC > Tk || (causal && j0 + BC - 1 > i0 + off)) {
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                const int i = i0 + rg + RG * r;
#pragma unroll
                for (int c = 0; c < TN; ++c) {
                    const int j = j0 + cg + CG * c;
                    if (j >= Tk || (causal && j > i + off))
                        s[r][c] = -INFINITY;
                }
            }
        }

        /* Online softmax.  Tile 0 holds key 0, which every row sees (off >= 0), so m
         * is finite from the first tile on and exp2(m_old - m_new) is never
         * exp2(-inf + inf). */
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            float mx = s[r][0];
#pragma unroll
            for (int c = 1; c < TN; ++c)
                mx = fmaxf(mx, s[r][c]);
            mx = kb_warp_allreduce<CG>(mx, KbMax{}); /* the 8 lanes of this row group */
            const float m_new = fmaxf(m[r], mx);
            const float alpha = exp2f(m[r] - m_new);
            m[r] = m_new;
            l[r] *= alpha;
#pragma unroll
            for (int x = 0; x < TD; ++x)
                acc[r][x] *= alpha;
#pragma unroll
            for (int c = 0; c < TN; ++c) {
                const float p = exp2f(s[r][c] - m_new);
                l[r] += p;
                p_thr[r * RG * Cfg::kLdP + cg + CG * c] = p;
            }
        }

        kb_cp_async_wait<0>(); /* V(t) is in */
        __syncthreads();       /* P and V(t) visible; everyone is done with K(t) */
        if (t + 1 < n_tiles)
            f32_copy_tile<Cfg, DP, VEC>(Ks, Cfg::kLdK, k_head, j0 + BC, Tk, D);
        kb_cp_async_commit();

        /* O += P V */
#pragma unroll 4
        for (int j = 0; j < BC; j += 4) {
            float4 pp[TM];
#pragma unroll
            for (int r = 0; r < TM; ++r)
                pp[r] = *reinterpret_cast<const float4 *>(p_thr + r * RG * Cfg::kLdP + j);
#pragma unroll
            for (int u = 0; u < 4; ++u) {
#pragma unroll
                for (int h = 0; h < NCH; ++h) {
                    const float4 vv = *reinterpret_cast<const float4 *>(v_thr + (j + u) * Cfg::kLdV + h * CG * 4);
#pragma unroll
                    for (int r = 0; r < TM; ++r) {
                        const float pr = u == 0 ? pp[r].x : u == 1 ? pp[r].y : u == 2 ? pp[r].z : pp[r].w;
                        acc[r][h * 4 + 0] = fmaf(pr, vv.x, acc[r][h * 4 + 0]);
                        acc[r][h * 4 + 1] = fmaf(pr, vv.y, acc[r][h * 4 + 1]);
                        acc[r][h * 4 + 2] = fmaf(pr, vv.z, acc[r][h * 4 + 2]);
                        acc[r][h * 4 + 3] = fmaf(pr, vv.w, acc[r][h * 4 + 3]);
                    }
                }
            }
        }

        __syncthreads(); /* everyone is done with P and V(t) */
        if (t + 1 < n_tiles)
            f32_copy_tile<Cfg, DP, VEC>(Vs, Cfg::kLdV, v_head, j0 + BC, Tk, D);
        kb_cp_async_commit();
    }
    kb_cp_async_wait<0>(); /* only empty groups remain */

    float *o_head = o + (size_t)tile.bh * Tq * D;
#pragma unroll
    for (int r = 0; r < TM; ++r) {
        const float sum = kb_warp_allreduce<CG>(l[r], KbSum{});
        const float inv = 1.0f / sum;
        const int i = i0 + rg + RG * r;
        if (i >= Tq)
            continue;
        float *orow = o_head + (size_t)i * D;
#pragma unroll
        for (int h = 0; h < NCH; ++h) {
            const int d = f32_out_col<Cfg>(h, cg);
            const float *a = &acc[r][h * 4];
            if constexpr (VEC) { /* D % 4 == 0: the float4 is inside the row or past it */
                if (d < D)
                    *reinterpret_cast<float4 *>(orow + d) =
                        make_float4(a[0] * inv, a[1] * inv, a[2] * inv, a[3] * inv);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (d + e < D)
                        orow[d + e] = a[e] * inv;
            }
        }
    }
}

/* D > 128: one warp per query row, one key at a time.  Lane x keeps the
 * query and the accumulator for columns d = x (mod 32) in shared memory
 * (only it touches them: no barriers). */
#define ROWWISE_WARPS 4
#define ROWWISE_MAX_D 7168

__global__ void __launch_bounds__(ROWWISE_WARPS * 32)
attention_flash_f32_rowwise_kernel(int64_t rows, int Tq, int Tk, int D, int causal, int group, float sl2,
                                   const float *__restrict__ q, const float *__restrict__ k,
                                   const float *__restrict__ v, float *__restrict__ o)
{
    extern __shared__ float rowwise_smem[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t row = (int64_t)blockIdx.x * ROWWISE_WARPS + warp;
    if (row >= rows) /* the whole warp */
        return;
    float *qs = rowwise_smem + (size_t)warp * 2 * D, *acc = qs + D;
    const int i = (int)(row % Tq);
    const int64_t kv = row / Tq / group;
    for (int d = lane; d < D; d += 32) {
        qs[d] = q[row * D + d] * sl2;
        acc[d] = 0.0f;
    }
    const int keys = causal ? i + Tk - Tq + 1 : Tk; /* Tq <= Tk */
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < keys; ++j) {
        const float *kr = k + (kv * Tk + j) * D, *vr = v + (kv * Tk + j) * D;
        float part = 0.0f;
        for (int d = lane; d < D; d += 32)
            part = fmaf(qs[d], kr[d], part);
        const float s = kb_warp_allreduce<32>(part, KbSum{});
        const float m_new = fmaxf(m, s);
        const float alpha = exp2f(m - m_new), p = exp2f(s - m_new);
        l = l * alpha + p;
        m = m_new;
        for (int d = lane; d < D; d += 32)
            acc[d] = fmaf(p, vr[d], acc[d] * alpha);
    }
    const float inv = 1.0f / l;
    for (int d = lane; d < D; d += 32)
        o[row * D + d] = acc[d] * inv;
}

static size_t rowwise_smem_bytes(int D) { return (size_t)ROWWISE_WARPS * 2 * D * sizeof(float); }

/* ---- host side ---------------------------------------------------------------- */

static const char *unsupported(const kb_shape *s)
{
    return s->d[4] > ROWWISE_MAX_D ? "D > 7168: the row-per-warp path holds two rows of D floats per warp in shared memory"
                                   : kb_attention_fused_unsupported(s);
}

template <int DP>
static cudaError_t allow_smem()
{
    cudaError_t e = cudaFuncSetAttribute((const void *)attention_flash_f32_kernel<DP, true>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, F32Cfg<DP>::kSmemBytes);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute((const void *)attention_flash_f32_kernel<DP, false>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, F32Cfg<DP>::kSmemBytes);
    return e;
}

/* The shared-memory opt-ins, once, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    *ctx = NULL;
    cudaError_t e = allow_smem<32>();
    if (e == cudaSuccess)
        e = allow_smem<64>();
    if (e == cudaSuccess)
        e = allow_smem<128>();
    if (e == cudaSuccess && a && a->D > 128)
        e = cudaFuncSetAttribute((const void *)attention_flash_f32_rowwise_kernel,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)rowwise_smem_bytes(a->D));
    return kb_cuda_status(e);
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <int DP>
static void launch_tiled(const kb_attention_args *a, float sl2, cudaStream_t stream)
{
    using Cfg = F32Cfg<DP>;
    const int row_tiles = KB_CEIL_DIV(a->Tq, Cfg::kBR);
    const unsigned grid = (unsigned)((int64_t)row_tiles * a->B * a->H);
    const bool vec = a->D % 4 == 0 && aligned16(a->q) && aligned16(a->k) && aligned16(a->v) && aligned16(a->o);
    if (vec)
        attention_flash_f32_kernel<DP, true><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            a->Tq, a->Tk, a->D, a->causal, kb_attention_group(a), sl2, row_tiles, a->B * a->H, (const float *)a->q, (const float *)a->k,
            (const float *)a->v, (float *)a->o);
    else
        attention_flash_f32_kernel<DP, false><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            a->Tq, a->Tk, a->D, a->causal, kb_attention_group(a), sl2, row_tiles, a->B * a->H, (const float *)a->q, (const float *)a->k,
            (const float *)a->v, (float *)a->o);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    (void)ctx;
    const float sl2 = a->scale * KB_LOG2E;
    if (a->D <= 32) {
        launch_tiled<32>(a, sl2, stream);
    } else if (a->D <= 64) {
        launch_tiled<64>(a, sl2, stream);
    } else if (a->D <= 128) {
        launch_tiled<128>(a, sl2, stream);
    } else {
        const int64_t rows = (int64_t)a->B * a->H * a->Tq;
        attention_flash_f32_rowwise_kernel<<<(unsigned)KB_CEIL_DIV(rows, ROWWISE_WARPS), ROWWISE_WARPS * 32,
                                             rowwise_smem_bytes(a->D), stream>>>(
            rows, a->Tq, a->Tk, a->D, a->causal, kb_attention_group(a), sl2, (const float *)a->q, (const float *)a->k,
            (const float *)a->v, (float *)a->o);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_flash[] = {
    {
        .name = "flash",
        .summary = "fused fp32 online softmax, 128x64 tiles, 4x8 (S) and 4xD/8 (O) register tiles per thread",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 80,
        .unsupported = unsupported,
        .setup = setup,
        .launch = launch,
    },
    KB_VARIANT_END,
};
