/* Device helpers shared by the row-wise variants (softmax, layernorm,
 * add_layernorm, rmsnorm), so that no variant file carries its own copy of a
 * reduction:
 *
 *   - combine functions: sum, max, the online-softmax merge of (max, sum)
 *     pairs and the Welford (Chan) merge of (count, mean, M2) triples;
 *   - reductions over a group of G lanes of a warp (shuffles), over a block
 *     (shuffles, then one value per warp through shared memory) and the
 *     classic shared-memory tree; every thread gets the result;
 *   - register-resident rows: KbRowCfg says how a row is spread over a group
 *     of threads (VEC floats per pack, PACKS packs per thread, GROUP threads
 *     per row), kb_row_dispatch picks the configuration for C at launch, and
 *     16-byte loads and stores move the packs (plain ones, kb_load_once, on
 *     the register path; evict-first ones, kb_load_stream, on the two-read
 *     paths);
 *   - the LayerNorm row code used by layernorm/welford, add_layernorm/unfused
 *     and add_layernorm/fused: Welford statistics of a shifted row held in
 *     registers, the normalize-and-store step, and the two-read path for rows
 *     too long for registers.
 *
 * Block reductions require blockDim.x to be a multiple of 32 (every variant
 * launches 64..1024 threads).  Shuffles use the full mask, so every lane of a
 * warp must reach them: a group past the last row takes part with no columns
 * instead of returning early. */
#ifndef KBENCH_REDUCE_CUH
#define KBENCH_REDUCE_CUH

#include <math.h>
#include <cuda_runtime.h>
#include "kernels/cuda_util.h"
#include "kernels/kbench.h"

#define KB_FULL_MASK 0xffffffffu

/* ------------------------------------------------------------------------ */
/* Combine functions                                                          */

struct KbSum {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct KbMax {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/* Online softmax: m is the largest value seen, s the sum of exp(x - m) over
 * the values seen.  {-inf, 0} is the empty state; a -inf value adds nothing,
 * and an all -inf row stays {-inf, 0} (never exp(-inf - -inf) = NaN). */
struct KbSoftmaxStat {
    float m, s;
};

/* BASE2: m is in base 2 (max * log2 e) and s sums 2^(x log2 e - m), merged
 * with kb_ex2 (one instruction instead of expf's range reduction). */
template <bool BASE2 = false>
__device__ __forceinline__ KbSoftmaxStat kb_softmax_stat_merge(KbSoftmaxStat a, KbSoftmaxStat b)
{
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
        return {m, 0.0f};
    if (BASE2)
        return {m, a.s * kb_ex2(a.m - m) + b.s * kb_ex2(b.m - m)};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

struct KbSoftmaxMerge {
    __device__ __forceinline__ KbSoftmaxStat operator()(KbSoftmaxStat a, KbSoftmaxStat b) const
    {
        return kb_softmax_stat_merge(a, b);
    }
};
struct KbSoftmaxMerge2 {
    __device__ __forceinline__ KbSoftmaxStat operator()(KbSoftmaxStat a, KbSoftmaxStat b) const
    {
        return kb_softmax_stat_merge<true>(a, b);
    }
};

/* Add N values: rescale once by the new max, then one exp per value. */
template <int N>
__device__ __forceinline__ void kb_softmax_stat_push(KbSoftmaxStat &st, const float (&v)[N])
{
    float pm = v[0];
#pragma unroll
    for (int j = 1; j < N; ++j)
        pm = fmaxf(pm, v[j]);
    if (pm > st.m) {
        st.s *= expf(st.m - pm); /* st.m == -inf: s was 0 and stays 0 */
        st.m = pm;
    }
    if (st.m != -INFINITY) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            st.s += expf(v[j] - st.m);
    }
}

__device__ __forceinline__ void kb_softmax_stat_push(KbSoftmaxStat &st, float x)
{
    const float v[1] = {x};
    kb_softmax_stat_push(st, v);
}

/* Welford: n values with mean `mean` and sum of squared deviations m2.
 * Merging is Chan's formula; an empty side (n == 0) returns the other
 * unchanged, so idle lanes and idle warps cost nothing in accuracy. */
struct KbWelford {
    float n, mean, m2;
};

/* FAST_DIV: the weight by __fdividef (2 ulp), off IEEE division's slow
 * path, for merges on a kernel's critical path. */
template <bool FAST_DIV = false>
__device__ __forceinline__ KbWelford kb_welford_merge(KbWelford a, KbWelford b)
{
    float n = a.n + b.n;
    if (n == 0.0f)
        return a;
    float delta = b.mean - a.mean, wb = FAST_DIV ? __fdividef(b.n, n) : b.n / n;
    return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
}

struct KbWelfordMerge {
    __device__ __forceinline__ KbWelford operator()(KbWelford a, KbWelford b) const
    {
        return kb_welford_merge(a, b);
    }
};
struct KbWelfordMergeFast {
    __device__ __forceinline__ KbWelford operator()(KbWelford a, KbWelford b) const
    {
        return kb_welford_merge<true>(a, b);
    }
};

/* One value into a running Welford state; inv_n must be 1 / (w.n + 1). */
__device__ __forceinline__ void kb_welford_push(KbWelford &w, float x, float inv_n)
{
    w.n += 1.0f;
    float delta = x - w.mean;
    w.mean += delta * inv_n;
    w.m2 += delta * (x - w.mean);
}

__device__ __forceinline__ void kb_welford_push(KbWelford &w, float x)
{
    kb_welford_push(w, x, 1.0f / (w.n + 1.0f));
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                 */

__device__ __forceinline__ float kb_shfl_xor(float v, int o)
{
    return __shfl_xor_sync(KB_FULL_MASK, v, o);
}
__device__ __forceinline__ KbSoftmaxStat kb_shfl_xor(KbSoftmaxStat v, int o)
{
    return {kb_shfl_xor(v.m, o), kb_shfl_xor(v.s, o)};
}
__device__ __forceinline__ KbWelford kb_shfl_xor(KbWelford v, int o)
{
    return {kb_shfl_xor(v.n, o), kb_shfl_xor(v.mean, o), kb_shfl_xor(v.m2, o)};
}

/* Butterfly over aligned groups of G lanes (G a power of two <= 32): every
 * lane of a group ends with the group's total. */
template <int G, class T, class Op>
__device__ __forceinline__ T kb_warp_allreduce(T v, Op op)
{
    static_assert(G >= 1 && G <= 32 && (G & (G - 1)) == 0, "G: a power of two up to 32");
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1)
        v = op(v, kb_shfl_xor(v, o));
    return v;
}

/* Whole block: each warp reduces by shuffles, lane 0 of each warp leaves
 * its value in shared memory, then every warp reduces those (at most 32).
 * The second barrier lets the next call reuse `partial`. */
template <class T, class Op>
__device__ __forceinline__ T kb_block_allreduce(T v, Op op, T identity)
{
    __shared__ T partial[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int nwarps = (int)(blockDim.x >> 5);
    v = kb_warp_allreduce<32>(v, op);
    if (lane == 0)
        partial[warp] = v;
    __syncthreads();
    v = lane < nwarps ? partial[lane] : identity;
    v = kb_warp_allreduce<32>(v, op);
    __syncthreads();
    return v;
}

/* A row owned by GROUP threads: lanes of one warp (GROUP <= 32) or the
 * whole block (GROUP == blockDim.x > 32). */
template <int GROUP, class T, class Op>
__device__ __forceinline__ T kb_group_allreduce(T v, Op op, T identity)
{
    if constexpr (GROUP <= 32) {
        (void)identity;
        return kb_warp_allreduce<GROUP>(v, op);
    } else {
        return kb_block_allreduce(v, op, identity);
    }
}

/* The textbook shared-memory tree over BLOCK threads (a power of two):
 * halve the active threads each step, sequential addressing (thread t adds
 * t + s), so no two threads of a warp hit the same bank. */
template <int BLOCK, class Op>
__device__ __forceinline__ float kb_block_tree_allreduce(float v, Op op)
{
    static_assert((BLOCK & (BLOCK - 1)) == 0, "BLOCK: a power of two");
    __shared__ float buf[BLOCK];
    const int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
#pragma unroll
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (t < s)
            buf[t] = op(buf[t], buf[t + s]);
        __syncthreads();
    }
    v = buf[0];
    __syncthreads();
    return v;
}

/* ------------------------------------------------------------------------ */
/* Packs: VEC consecutive floats, one 16-byte access when VEC == 4 (the
 * address must then be 16-byte aligned: C % 4 == 0 and a column % 4 == 0).  */

/* Data touched once on a single-read path (a row held in registers, or in
 * a cluster's shared memory): plain loads through the read-only path and
 * plain stores.  On H100 (cold L2) these measured 2-5% faster than the
 * evict-first pair below on every single-read row op at C = 128..16384:
 * softmax 2,844 -> 2,928 GB/s and layernorm 2,762 -> 2,866 at 65536x768. */
__device__ __forceinline__ void kb_load_once(float (&v)[4], const float *p)
{
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_once(float (&v)[1], const float *p) { v[0] = __ldg(p); }

__device__ __forceinline__ void kb_store_once(float *p, const float (&v)[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void kb_store_once(float *p, const float (&v)[1]) { *p = v[0]; }

/* Streamed data on the two-read paths: evict-first loads (ld.global.cs) and
 * stores (st.global.cs) keep it from pushing the rows still to be read a
 * second time out of L2 (plain stores there measured 10-17% slower at
 * 512x65536). */
__device__ __forceinline__ void kb_load_stream(float (&v)[4], const float *p)
{
    float4 t = __ldcs(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_stream(float (&v)[1], const float *p) { v[0] = __ldcs(p); }

__device__ __forceinline__ void kb_store_stream(float *p, const float (&v)[4])
{
    __stcs(reinterpret_cast<float4 *>(p), make_float4(v[0], v[1], v[2], v[3]));
}
__device__ __forceinline__ void kb_store_stream(float *p, const float (&v)[1]) { __stcs(p, v[0]); }

/* Data read again soon (gamma, beta; the first of two reads of a row):
 * the read-only path, cached normally. */
__device__ __forceinline__ void kb_load_cached(float (&v)[4], const float *p)
{
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_cached(float (&v)[1], const float *p) { v[0] = __ldg(p); }

/* ------------------------------------------------------------------------ */
/* Register-resident rows                                                     */

/* A row of up to MAX_C columns held in registers by GROUP threads: thread
 * `rank` holds packs k = 0..PACKS-1 at columns (k * GROUP + rank) * VEC, so
 * each pack instruction of a warp covers consecutive memory.  GROUP <= 32:
 * several rows per 128-thread block, one per group of lanes; GROUP > 32: one
 * row per block of GROUP threads. */
template <int VEC_, int PACKS_, int GROUP_>
struct KbRowCfg {
    static constexpr int VEC = VEC_, PACKS = PACKS_, GROUP = GROUP_;
    static constexpr int BLOCK = GROUP <= 32 ? 128 : GROUP;
    static constexpr int ROWS_PER_BLOCK = BLOCK / GROUP;
    static constexpr int MAX_C = VEC * PACKS * GROUP;
    static_assert(BLOCK <= 1024 && BLOCK % GROUP == 0, "a row group fits a block");
};

template <class Cfg>
__device__ __forceinline__ int kb_pack_col(int k, int rank)
{
    return (k * Cfg::GROUP + rank) * Cfg::VEC;
}

/* Where this thread's row is: row index, rank in the row's group, and the
 * number of columns it may touch (0 for a group past the last row, which
 * still joins its warp's shuffles). */
struct KbRowPos {
    int row, rank, cols;
    size_t base; /* offset of the row (clamped to a real row) */
};

template <class Cfg>
__device__ __forceinline__ KbRowPos kb_row_pos(int R, int C)
{
    KbRowPos p;
    p.row = (int)blockIdx.x * Cfg::ROWS_PER_BLOCK + (int)threadIdx.x / Cfg::GROUP;
    p.rank = (int)threadIdx.x % Cfg::GROUP;
    p.cols = p.row < R ? C : 0;
    p.base = (size_t)(p.row < R ? p.row : R - 1) * (size_t)C;
    return p;
}

template <class Cfg>
inline unsigned kb_row_grid(int R)
{
    return (unsigned)KB_CEIL_DIV(R, Cfg::ROWS_PER_BLOCK);
}

/* Calls f(Cfg{}) with the register-resident configuration for rows of C
 * columns and returns true, or returns false when the row does not fit
 * (C > 32768, or C > 16384 when C % 4 != 0).  float4 packs need C % 4 == 0;
 * other C use scalar packs.  The whole row is loaded before the first
 * reduction, with up to 128 bytes in flight per thread:
 *   C <= 1024: a group of 4..32 lanes per row (several rows per 128-thread
 *     block), 1..8 float4 or 1..32 scalars per lane;
 *   larger C: one block per row, 64..1024 threads of 8 float4 each, or
 *     128..1024 threads of 16 scalars each (32 scalars need more registers
 *     than a 1024-thread block leaves: layernorm spills). */
template <class F>
inline bool kb_row_dispatch(int C, F &&f)
{
    if (C % 4 == 0) {
        if (C <= 16) f(KbRowCfg<4, 1, 4>{});
        else if (C <= 32) f(KbRowCfg<4, 1, 8>{});
        else if (C <= 64) f(KbRowCfg<4, 1, 16>{});
        else if (C <= 128) f(KbRowCfg<4, 1, 32>{});
        else if (C <= 256) f(KbRowCfg<4, 2, 32>{});
        else if (C <= 512) f(KbRowCfg<4, 4, 32>{});
        else if (C <= 1024) f(KbRowCfg<4, 8, 32>{});
        else if (C <= 2048) f(KbRowCfg<4, 8, 64>{});
        else if (C <= 4096) f(KbRowCfg<4, 8, 128>{});
        else if (C <= 8192) f(KbRowCfg<4, 8, 256>{});
        else if (C <= 16384) f(KbRowCfg<4, 8, 512>{});
        else if (C <= 32768) f(KbRowCfg<4, 8, 1024>{});
        else return false;
    } else {
        if (C <= 32) f(KbRowCfg<1, 1, 32>{});
        else if (C <= 64) f(KbRowCfg<1, 2, 32>{});
        else if (C <= 128) f(KbRowCfg<1, 4, 32>{});
        else if (C <= 256) f(KbRowCfg<1, 8, 32>{});
        else if (C <= 512) f(KbRowCfg<1, 16, 32>{});
        else if (C <= 1024) f(KbRowCfg<1, 32, 32>{});
        else if (C <= 2048) f(KbRowCfg<1, 16, 128>{});
        else if (C <= 4096) f(KbRowCfg<1, 16, 256>{});
        else if (C <= 8192) f(KbRowCfg<1, 16, 512>{});
        else if (C <= 16384) f(KbRowCfg<1, 16, 1024>{});
        else return false;
    }
    return true;
}

/* Block size of the two-read paths, for rows kb_row_dispatch refuses. */
#define KB_TWO_READ_BLOCK 1024

/* Rows from this length on are the long-row variants' (cluster_row.cuh,
 * split_row.cuh, persistent_row.cuh): shorter ones fit one block's registers. */
#define KB_LONG_ROW_MIN_C 32768

/* A long-row family's reason to refuse rows of C floats (WHY), as a
 * variant's `unsupported` of an RxC shape. */
template <const char *(*WHY)(int64_t)>
static const char *kb_unsupported_cols(const kb_shape *s)
{
    return WHY(s->d[1]);
}

/* ------------------------------------------------------------------------ */
/* LayerNorm rows (layernorm/welford, add_layernorm/unfused and /fused)       */

/* Welford statistics of a row held in registers as d = x - shift (the shift
 * is the row's first element, so d is exact for values near it and the mean
 * of d is small).  Valid packs of a thread are a prefix (k * GROUP + rank
 * grows with k), so the count before element j of pack k is k * VEC + j and
 * 1/n is a compile-time constant: no division per element.  Returns the
 * whole row's state, on every thread of the group. */
template <class Cfg>
__device__ __forceinline__ KbWelford kb_row_welford(const float (&d)[Cfg::PACKS][Cfg::VEC], int cols,
                                                    int rank)
{
    KbWelford w = {0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        if (kb_pack_col<Cfg>(k, rank) < cols) {
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                kb_welford_push(w, d[k][j], 1.0f / (float)(k * Cfg::VEC + j + 1));
        }
    }
    return kb_group_allreduce<Cfg::GROUP>(w, KbWelfordMerge{}, KbWelford{0.0f, 0.0f, 0.0f});
}

/* y = (d - mean) * rstd * gamma + beta for the packs this thread holds;
 * mean is the mean of d (the shifted row), rstd = 1/sqrt(var + eps). */
template <class Cfg>
__device__ __forceinline__ void kb_row_layernorm_store(const float (&d)[Cfg::PACKS][Cfg::VEC], float mean,
                                                       float rstd, const float *__restrict__ gamma,
                                                       const float *__restrict__ beta, float *y_row,
                                                       int cols, int rank)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < cols) {
            float g[Cfg::VEC], b[Cfg::VEC], o[Cfg::VEC];
            kb_load_cached(g, gamma + col);
            kb_load_cached(b, beta + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                o[j] = fmaf((d[k][j] - mean) * rstd, g[j], b[j]);
            kb_store_once(y_row + col, o);
        }
    }
}

/* The register-resident row softmax once a thread holds its packs of the
 * row in v, with -inf wherever an entry is past the row or masked: group
 * max, exp, group sum, then y = v / sum for the packs inside the row.  An
 * all -inf row (or a group past the last row) gives zeros, not NaN. */
template <class Cfg>
__device__ __forceinline__ void kb_row_softmax_store(float (&v)[Cfg::PACKS][Cfg::VEC], float *y_row, int cols,
                                                     int rank)
{
    float max = -INFINITY;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j)
            max = fmaxf(max, v[k][j]);
    max = kb_group_allreduce<Cfg::GROUP>(max, KbMax{}, -INFINITY);
    if (max == -INFINITY)
        max = 0.0f;

    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j) {
            v[k][j] = expf(v[k][j] - max);
            sum += v[k][j];
        }
    sum = kb_group_allreduce<Cfg::GROUP>(sum, KbSum{}, 0.0f);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < cols) {
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                v[k][j] *= inv;
            kb_store_once(y_row + col, v[k]);
        }
    }
}

/* Two-read path, pass 1, for rows too long for registers (one block of
 * BLOCK threads per row): Welford over x - shift, where load(v, col) fills
 * the VEC values at column col.  Returns the row's state on every thread. */
template <int VEC, int BLOCK, class Load>
__device__ __forceinline__ KbWelford kb_block_welford_pass(int C, float shift, Load load)
{
    KbWelford w = {0.0f, 0.0f, 0.0f};
#pragma unroll 4
    for (int col = (int)threadIdx.x * VEC; col < C; col += BLOCK * VEC) {
        float v[VEC];
        load(v, col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            kb_welford_push(w, v[j] - shift);
    }
    return kb_block_allreduce(w, KbWelfordMerge{}, KbWelford{0.0f, 0.0f, 0.0f});
}

/* Two-read path, pass 2: read the row `in` again (the same columns per
 * thread as pass 1, so a thread re-reads only what it wrote itself when
 * `in` is an output of pass 1), normalize and write y. */
template <int VEC, int BLOCK>
__device__ __forceinline__ void kb_block_layernorm_pass(const float *in, int C, float shift, float mean,
                                                        float rstd, const float *__restrict__ gamma,
                                                        const float *__restrict__ beta, float *y_row)
{
#pragma unroll 4
    for (int col = (int)threadIdx.x * VEC; col < C; col += BLOCK * VEC) {
        float v[VEC], g[VEC], b[VEC];
        kb_load_stream(v, in + col);
        kb_load_cached(g, gamma + col);
        kb_load_cached(b, beta + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] = fmaf((v[j] - shift - mean) * rstd, g[j], b[j]);
        kb_store_stream(y_row + col, v);
    }
}

/* rstd from a row's Welford state: biased variance m2 / C. */
__device__ __forceinline__ float kb_welford_rstd(KbWelford w, int C, float eps)
{
    return rsqrtf(w.m2 / (float)C + eps);
}

#endif
