/* The LayerNorm row code shared by layernorm/welford and add_layernorm/fused
 * (add_layernorm/unfused calls layernorm/welford): Welford statistics of a
 * shifted row held in registers, the normalize-and-store step, the
 * two-read path for rows too long for registers, and rstd from a Welford
 * state (also used by the long-row layernorm variants). */
#ifndef KBENCH_ROW_LAYERNORM_CUH
#define KBENCH_ROW_LAYERNORM_CUH

#include <math.h>
#include <cuda_runtime.h>
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"

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
 * mean is the mean of d (the shifted row), rstd = 1/sqrt(var + eps); T is
 * the tensors' storage, float or 16-bit. */
template <class Cfg, typename T>
__device__ __forceinline__ void kb_row_layernorm_store(const float (&d)[Cfg::PACKS][Cfg::VEC], float mean,
                                                       float rstd, const T *__restrict__ gamma,
                                                       const T *__restrict__ beta, T *y_row, int cols, int rank)
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
template <int VEC, int BLOCK, typename T>
__device__ __forceinline__ void kb_block_layernorm_pass(const T *in, int C, float shift, float mean, float rstd,
                                                        const T *__restrict__ gamma, const T *__restrict__ beta,
                                                        T *y_row)
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
