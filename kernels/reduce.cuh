/* Reductions shared by the row-wise and attention variants, so that none
 * carries its own copy: reductions over a group of G lanes of a warp
 * (shuffles), over a block (shuffles, then one value per warp through
 * shared memory) and the classic shared-memory tree; every thread gets the
 * result.  The statistics they merge are in combine.cuh.
 *
 * Block reductions require blockDim.x to be a multiple of 32 (every variant
 * launches 64..1024 threads).  Shuffles use the full mask, so every lane of a
 * warp must reach them: a group past the last row takes part with no columns
 * instead of returning early. */
#ifndef KBENCH_REDUCE_CUH
#define KBENCH_REDUCE_CUH

#include <cuda_runtime.h>
#include "kernels/combine.cuh"

#define KB_FULL_MASK 0xffffffffu

__device__ __forceinline__ float kb_shfl_xor(float v, int o)
{
    return __shfl_xor_sync(KB_FULL_MASK, v, o);
}
__device__ __forceinline__ float2 kb_shfl_xor(float2 v, int o)
{
    return {kb_shfl_xor(v.x, o), kb_shfl_xor(v.y, o)};
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

#endif
