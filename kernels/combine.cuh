/* Combine functions: the statistics a reduction merges and how two of
 * them merge -- sum, max, the online-softmax (max, sum) pair and the
 * Welford (count, mean, M2) triple with Chan's merge -- plus pushing single
 * values into a running state.  Kept apart from the shuffles that move
 * them (reduce.cuh), so that a variant that only folds values into a state
 * in one thread needs no more than this. */
#ifndef KBENCH_COMBINE_CUH
#define KBENCH_COMBINE_CUH

#include <math.h>
#include <cuda_runtime.h>
#include "kernels/cuda_util.h"

struct KbSum {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
/* Two sums reduced together: one pass of shuffles and barriers for both. */
struct KbSum2 {
    __device__ __forceinline__ float2 operator()(float2 a, float2 b) const { return {a.x + b.x, a.y + b.y}; }
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

/* e^x: expf, or with FAST __expf (a multiply and one ex2 instruction; a
 * few ulp off for the arguments x - max of logits of moderate range). */
template <bool FAST>
__device__ __forceinline__ float kb_exp(float x)
{
    return FAST ? __expf(x) : expf(x);
}

/* Add N values: rescale once by the new max, then one exp per value. */
template <int N, bool FAST = false>
__device__ __forceinline__ void kb_softmax_stat_push(KbSoftmaxStat &st, const float (&v)[N])
{
    float pm = v[0];
#pragma unroll
    for (int j = 1; j < N; ++j)
        pm = fmaxf(pm, v[j]);
    if (pm > st.m) {
        st.s *= kb_exp<FAST>(st.m - pm); /* st.m == -inf: s was 0 and stays 0 */
        st.m = pm;
    }
    if (st.m != -INFINITY) {
#pragma unroll
        for (int j = 0; j < N; ++j)
            st.s += kb_exp<FAST>(v[j] - st.m);
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

#endif
