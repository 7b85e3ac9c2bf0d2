/* The cross_entropy op's row kernel, online rung (variants/cross_entropy/
 * online.cu says how it works and what it measured): a 1024-thread block a
 * row, the (max, sum) pair from one read of the logits, dz from a second,
 * in packs of four with a scalar tail when the rows are 4-aligned.
 * dz may be z itself: every read of a row's logits but the second pass's
 * comes before the block's first barrier, and the second pass reads each
 * pack before it writes it.  linear_cross_entropy runs it on its chunks of
 * logits in place. */
#ifndef KBENCH_CROSS_ENTROPY_ROW_CUH
#define KBENCH_CROSS_ENTROPY_ROW_CUH

#include "ops/cross_entropy.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"

#define KB_CE_BLOCK 1024

/* One pass's packs of a row: columns [0, packed) in packs of VEC, then the
 * tail [packed, V) one at a time. */
template <int VEC, typename T, class F>
__device__ __forceinline__ void kb_ce_each(int V, F &&f)
{
    const int packed = V / VEC * VEC;
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < packed; col += KB_CE_BLOCK * VEC)
        f.template operator()<VEC>(col);
    for (int col = packed + threadIdx.x; col < V; col += KB_CE_BLOCK)
        f.template operator()<1>(col);
}

/* Rows ld apart (ld >= V); with VEC 4 each row must start 4-aligned. */
template <int VEC, typename T>
__global__ void __launch_bounds__(KB_CE_BLOCK) kb_cross_entropy_online_kernel(kb_cross_entropy_args a, int64_t ld)
{
    const T *z = (const T *)a.z + (size_t)blockIdx.x * ld;
    T *dz = (T *)a.dz + (size_t)blockIdx.x * ld;
    const int t = a.targets[blockIdx.x];
    const float eps = KB_CE_SMOOTHING;
    if (t == KB_CE_IGNORE) {
        kb_ce_each<VEC, T>(a.V, [&]<int N>(int col) {
            const float zero[N] = {};
            kb_store_stream(dz + col, zero);
        });
        if (threadIdx.x == 0)
            a.loss[blockIdx.x] = 0.0f;
        return;
    }
    const float zt = threadIdx.x == 0 ? kb_to_float(z[t]) : 0.0f; /* before dz can overwrite it */
    KbSoftmaxStat st = {-INFINITY, 0.0f};
    float zsum = 0.0f;
    kb_ce_each<VEC, T>(a.V, [&]<int N>(int col) {
        float v[N];
        kb_load_cached(v, z + col); /* read again below: keep it in L2 */
        kb_softmax_stat_push(st, v);
#pragma unroll
        for (int j = 0; j < N; ++j)
            zsum += v[j];
    });
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});
    zsum = kb_block_allreduce(zsum, KbSum{}, 0.0f);
    if (threadIdx.x == 0) {
        const float lse = st.m + logf(st.s);
        a.loss[blockIdx.x] = (1.0f - eps) * (lse - zt) + eps * (lse - zsum / a.V);
    }
    const float inv_s = 1.0f / st.s, off = eps / a.V;
    kb_ce_each<VEC, T>(a.V, [&]<int N>(int col) {
        float v[N];
        kb_load_stream(v, z + col);
#pragma unroll
        for (int j = 0; j < N; ++j)
            v[j] = (expf(v[j] - st.m) * inv_s - (col + j == t ? 1.0f - eps : 0.0f) - off) * a.inv_n;
        kb_store_stream(dz + col, v);
    });
}

/* The rows of a, ld elements apart, on stream; the launch's error string
 * or NULL.  Packs of four when the rows start 4-aligned. */
template <typename T>
static const char *kb_cross_entropy_online(const kb_cross_entropy_args &a, int64_t ld, cudaStream_t stream)
{
    if (ld % 4 == 0)
        kb_cross_entropy_online_kernel<4, T><<<a.R, KB_CE_BLOCK, 0, stream>>>(a, ld);
    else
        kb_cross_entropy_online_kernel<1, T><<<a.R, KB_CE_BLOCK, 0, stream>>>(a, ld);
    KB_LAUNCHED();
}

#endif
