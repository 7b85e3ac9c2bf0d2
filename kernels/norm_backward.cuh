/* The fused backward of layernorm and rmsnorm, written once: one kernel
 * reads x and dy once, writes dx and leaves each block's partial column
 * sums of dgamma (and dbeta) in a workspace; a second, small kernel sums
 * the partials over the blocks.  Deterministic: no atomics, a fixed order.
 *
 * Rows are held in registers as the forward's (row_cfg.cuh): a group of
 * GROUP threads a row, and a thread's columns are the same in every row it
 * takes, so its share of the column sums stays in registers while its block
 * walks rows grid-stride.  Blocks are as many as fit the GPU at once: the
 * partials are one row a row-group of a resident block (a few MB at most),
 * against the GBs of x and dy.
 *
 * x, dy and dgamma's partials take 3 (layernorm: 4) floats of registers a
 * column a thread, so a thread holds 4 packs, half the forward's 8 (with 8,
 * 120 and 162 registers a thread left 4 and 3 blocks of 128 threads an SM:
 * 68.6% and 57.7% of the datasheet's bandwidth at 65536x4096).  Rows up to
 * 8192 columns fit a block; kb_norm_backward_unsupported refuses longer. */
#ifndef KBENCH_NORM_BACKWARD_CUH
#define KBENCH_NORM_BACKWARD_CUH

#include <stdint.h>
#include <stdlib.h>
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/dtype.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"

/* Both ops' tensors, of storage type T (float or __nv_bfloat16); mean and
 * dbeta are NULL for rmsnorm. */
template <class T>
struct KbNormGrad {
    int R, C;
    const T *x, *gamma, *dy;
    const float *mean, *rstd;
    T *dx, *dgamma, *dbeta;
};

#define KB_NORM_BACKWARD_MAX_C 8192

/* kb_row_dispatch's layouts at no more than 4 packs a thread: calls
 * f(Cfg{}) for rows of C <= 8192 columns. */
template <class F>
inline void kb_norm_backward_dispatch(int C, F &&f)
{
    if (C % 4 == 0) {
        if (C <= 16) f(KbRowCfg<4, 1, 4>{});
        else if (C <= 32) f(KbRowCfg<4, 1, 8>{});
        else if (C <= 64) f(KbRowCfg<4, 1, 16>{});
        else if (C <= 128) f(KbRowCfg<4, 1, 32>{});
        else if (C <= 256) f(KbRowCfg<4, 2, 32>{});
        else if (C <= 512) f(KbRowCfg<4, 4, 32>{});
        else if (C <= 1024) f(KbRowCfg<4, 4, 64>{});
        else if (C <= 2048) f(KbRowCfg<4, 4, 128>{});
        else if (C <= 4096) f(KbRowCfg<4, 4, 256>{});
        else f(KbRowCfg<4, 4, 512>{});
    } else {
        if (C <= 32) f(KbRowCfg<1, 1, 32>{});
        else if (C <= 64) f(KbRowCfg<1, 2, 32>{});
        else if (C <= 128) f(KbRowCfg<1, 4, 32>{});
        else if (C <= 256) f(KbRowCfg<1, 8, 32>{});
        else if (C <= 512) f(KbRowCfg<1, 16, 32>{});
        else if (C <= 1024) f(KbRowCfg<1, 8, 128>{});
        else if (C <= 2048) f(KbRowCfg<1, 8, 256>{});
        else if (C <= 4096) f(KbRowCfg<1, 8, 512>{});
        else f(KbRowCfg<1, 8, 1024>{});
    }
}

/* One row's work for one thread, its packs of x and dy already in xh and g:
 * the column partials dg (and db) updated, the row's sums reduced over
 * its group, its packs of dx stored.  cols is 0 for a group past the last
 * row, which still joins the reduction. */
template <class Cfg, bool LAYER, class T>
__device__ __forceinline__ void kb_norm_backward_row(const KbNormGrad<T> &a, size_t base, int cols, int rank, float mean,
                                                     float rstd, float (&xh)[Cfg::PACKS][Cfg::VEC],
                                                     float (&g)[Cfg::PACKS][Cfg::VEC],
                                                     float (&dg)[Cfg::PACKS][Cfg::VEC],
                                                     float (&db)[Cfg::PACKS][Cfg::VEC])
{
    constexpr int P = Cfg::PACKS, V = Cfg::VEC;
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < cols) {
            float gm[V];
            kb_load_cached(gm, a.gamma + col);
#pragma unroll
            for (int j = 0; j < V; ++j) {
                xh[k][j] = (xh[k][j] - mean) * rstd;
                dg[k][j] = fmaf(g[k][j], xh[k][j], dg[k][j]);
                if (LAYER)
                    db[k][j] += g[k][j];
                g[k][j] *= gm[j];
                s1 += g[k][j];
                s2 = fmaf(g[k][j], xh[k][j], s2);
            }
        }
    }
    if (LAYER) { /* both sums in one reduction: half the barriers */
        const float2 s = kb_group_allreduce<Cfg::GROUP>(make_float2(s1, s2), KbSum2{}, make_float2(0.0f, 0.0f));
        s1 = s.x / a.C, s2 = s.y / a.C;
    } else {
        s2 = kb_group_allreduce<Cfg::GROUP>(s2, KbSum{}, 0.0f) / a.C;
    }
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < cols) {
#pragma unroll
            for (int j = 0; j < V; ++j)
                g[k][j] = rstd * (g[k][j] - (LAYER ? s1 : 0.0f) - xh[k][j] * s2);
            kb_store_once(a.dx + base + col, g[k]);
        }
    }
}

/* This row-group's partial sums: row (block, group) of dgamma's partials,
 * then as many rows again for dbeta's. */
template <class Cfg, bool LAYER, class T>
__device__ __forceinline__ void kb_norm_backward_partials(const KbNormGrad<T> &a, float *partial, int group, int rank,
                                                          const float (&dg)[Cfg::PACKS][Cfg::VEC],
                                                          const float (&db)[Cfg::PACKS][Cfg::VEC])
{
    const size_t slot = (size_t)blockIdx.x * Cfg::ROWS_PER_BLOCK + group;
    const size_t slots = (size_t)gridDim.x * Cfg::ROWS_PER_BLOCK;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < a.C) {
            kb_store_once(partial + slot * a.C + col, dg[k]);
            if (LAYER)
                kb_store_once(partial + (slots + slot) * a.C + col, db[k]);
        }
    }
}

/* The row loop with the next row's loads in flight during this row's
 * work: its packs of x and dy (and its mean and rstd) are loaded as stored
 * before this row is reduced, so a thread has two rows of loads
 * outstanding where the plain loop has one (fused_prefetch). */
template <class Cfg, bool LAYER, class T>
__device__ __forceinline__ void kb_norm_backward_rows_prefetched(const KbNormGrad<T> &a, int group, int rank,
                                                                 float (&dg)[Cfg::PACKS][Cfg::VEC],
                                                                 float (&db)[Cfg::PACKS][Cfg::VEC])
{
    constexpr int P = Cfg::PACKS, V = Cfg::VEC;
    typedef typename KbRawPack<T, V>::type Raw;
    const int stride = gridDim.x * Cfg::ROWS_PER_BLOCK;
    Raw rx[P], rg[P];
    float next_mean = 0.0f, next_rstd = 0.0f;
    const auto issue = [&](int first) {
        const int row = first + group, cols = row < a.R ? a.C : 0;
        const size_t base = (size_t)(row < a.R ? row : 0) * a.C;
        next_mean = LAYER && cols ? a.mean[row] : 0.0f;
        next_rstd = cols ? a.rstd[row] : 0.0f;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int col = kb_pack_col<Cfg>(k, rank);
            if (col < cols) {
                rx[k] = kb_raw_load<T, V>(a.x + base + col);
                rg[k] = kb_raw_load<T, V>(a.dy + base + col);
            }
        }
    };
    issue(blockIdx.x * Cfg::ROWS_PER_BLOCK);
    for (int first = blockIdx.x * Cfg::ROWS_PER_BLOCK; first < a.R; first += stride) {
        const int row = first + group, cols = row < a.R ? a.C : 0;
        const size_t base = (size_t)(row < a.R ? row : 0) * a.C;
        const float mean = next_mean, rstd = next_rstd;
        float xh[P][V], g[P][V];
#pragma unroll
        for (int k = 0; k < P; ++k)
            if (kb_pack_col<Cfg>(k, rank) < cols) {
                kb_raw_widen(xh[k], rx[k]);
                kb_raw_widen(g[k], rg[k]);
            }
        if (first + stride < a.R)
            issue(first + stride);
        kb_norm_backward_row<Cfg, LAYER>(a, base, cols, rank, mean, rstd, xh, g, dg, db);
    }
}

/* The row loop as fused runs it: a row's loads, then its work.  The bound
 * is the block's, so a group past the last row still joins its warp's
 * shuffles (with no columns). */
template <class Cfg, bool LAYER, class T>
__device__ __forceinline__ void kb_norm_backward_rows_plain(const KbNormGrad<T> &a, int group, int rank,
                                                            float (&dg)[Cfg::PACKS][Cfg::VEC],
                                                            float (&db)[Cfg::PACKS][Cfg::VEC])
{
    constexpr int P = Cfg::PACKS, V = Cfg::VEC;
    for (int first = blockIdx.x * Cfg::ROWS_PER_BLOCK; first < a.R; first += gridDim.x * Cfg::ROWS_PER_BLOCK) {
        const int row = first + group, cols = row < a.R ? a.C : 0;
        const size_t base = (size_t)(row < a.R ? row : 0) * a.C;
        const float mean = LAYER && cols ? a.mean[row] : 0.0f, rstd = cols ? a.rstd[row] : 0.0f;
        /* Every load of the row issued before any is used: with the loads
         * inside the row's arithmetic, as this kernel had them, ptxas kept
         * one pack's loads in flight at a time (in the same registers), and
         * it took 33% longer (RMSNorm 10%) at 65536x4096 (docs/notes/backward.md). */
        float xh[P][V], g[P][V];
#pragma unroll
        for (int k = 0; k < P; ++k) {
            const int col = kb_pack_col<Cfg>(k, rank);
            if (col < cols) {
                kb_load_once(xh[k], a.x + base + col);
                kb_load_once(g[k], a.dy + base + col);
            }
        }
        kb_norm_backward_row<Cfg, LAYER>(a, base, cols, rank, mean, rstd, xh, g, dg, db);
    }
}

template <class Cfg, bool LAYER, class T, bool PREFETCH>
__global__ void __launch_bounds__(Cfg::BLOCK) kb_norm_backward_rows(KbNormGrad<T> a, float *partial)
{
    constexpr int P = Cfg::PACKS, V = Cfg::VEC;
    const int group = threadIdx.x / Cfg::GROUP, rank = threadIdx.x % Cfg::GROUP;
    float dg[P][V] = {}, db[P][V] = {};
    /* Blocks of 512 and 1024 threads (rows of over 4096 columns, or 2048
     * not a multiple of 4) have no registers for a second row's packs:
     * 64 and 128 a thread spilled them.  They keep the plain loop. */
    if constexpr (PREFETCH && Cfg::BLOCK <= 256)
        kb_norm_backward_rows_prefetched<Cfg, LAYER>(a, group, rank, dg, db);
    else
        kb_norm_backward_rows_plain<Cfg, LAYER>(a, group, rank, dg, db);
    kb_norm_backward_partials<Cfg, LAYER>(a, partial, group, rank, dg, db);
}

/* Column sums of the partials: 32 columns a block, 8 row slices summed
 * through shared memory in a fixed order. */
template <class T>
__global__ void __launch_bounds__(256) kb_norm_backward_columns(int C, int slots, const float *partial, T *out)
{
    __shared__ float sum[8][33];
    const int col = blockIdx.x * 32 + threadIdx.x;
    float s = 0.0f;
    if (col < C)
        for (int r = threadIdx.y; r < slots; r += 8)
            s += partial[(size_t)r * C + col];
    sum[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && col < C) {
        for (int r = 1; r < 8; ++r)
            s += sum[r][threadIdx.x];
        out[col] = kb_from_float<T>(s);
    }
}

/* The launch plan and its workspace, made in a variant's setup. */
struct KbNormBackwardPlan {
    unsigned grid;
    int slots;
    float *partial;
};

template <bool LAYER, class T, bool PREFETCH = false>
static const char *kb_norm_backward_setup(int R, int C, void **ctx)
{
    KbNormBackwardPlan *p = (KbNormBackwardPlan *)calloc(1, sizeof *p);
    if (!p)
        return "out of host memory";
    int sms = 0, dev = 0, per_sm = 0, rows_per_block = 1;
    const char *e = kb_cuda_status(cudaGetDevice(&dev));
    if (!e)
        e = kb_cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    kb_norm_backward_dispatch(C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        rows_per_block = Cfg::ROWS_PER_BLOCK;
        if (!e)
            e = kb_cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm, kb_norm_backward_rows<Cfg, LAYER, T, PREFETCH>, Cfg::BLOCK, 0));
    });
    const int64_t groups = KB_CEIL_DIV((int64_t)R, rows_per_block), resident = (int64_t)sms * per_sm;
    p->grid = (unsigned)(groups < resident ? groups : resident);
    p->slots = (int)p->grid * rows_per_block;
    if (!e && p->grid == 0)
        e = "kb_norm_backward_rows fits no block on this GPU";
    if (!e)
        e = kb_cuda_status(cudaMalloc(&p->partial, (size_t)p->slots * C * sizeof(float) * (LAYER ? 2 : 1)));
    if (e) {
        free(p);
        return e;
    }
    *ctx = p;
    return NULL;
}

static void kb_norm_backward_teardown(void *ctx)
{
    KbNormBackwardPlan *p = (KbNormBackwardPlan *)ctx;
    if (p)
        cudaFree(p->partial);
    free(p);
}

template <bool LAYER, bool PREFETCH = false, class T>
static const char *kb_norm_backward_launch(const KbNormGrad<T> &a, const KbNormBackwardPlan *p, cudaStream_t stream)
{
    kb_norm_backward_dispatch(a.C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        kb_norm_backward_rows<Cfg, LAYER, T, PREFETCH><<<p->grid, Cfg::BLOCK, 0, stream>>>(a, p->partial);
    });
    KB_CUDA_TRY(cudaGetLastError());
    const dim3 block(32, 8), grid(KB_CEIL_DIV(a.C, 32));
    kb_norm_backward_columns<<<grid, block, 0, stream>>>(a.C, p->slots, p->partial, a.dgamma);
    if (LAYER)
        kb_norm_backward_columns<<<grid, block, 0, stream>>>(a.C, p->slots, p->partial + (size_t)p->slots * a.C,
                                                             a.dbeta);
    KB_LAUNCHED();
}

static const char *kb_norm_backward_unsupported(const kb_shape *s)
{
    return s->d[1] > KB_NORM_BACKWARD_MAX_C ? "rows of more than 8192 columns do not fit its registers" : NULL;
}

#endif
