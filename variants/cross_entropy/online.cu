/* cross_entropy online: a 1024-thread block a row, two reads of the
 * logits.  The first read folds the row into one running (max, sum of
 * exponentials) pair per thread (Milakov & Gimelshein's online softmax)
 * and a running sum for the smoothing term's mean, merged over the block
 * by shuffles and shared memory; the second read writes dz from the row's
 * (max, sum).  16-byte (f32) or 8-byte (bf16) packs when V % 4 == 0, else
 * scalars.  The loss comes from the same pair and one load of the target's
 * logit.
 *
 * Builds on naive: a block a row, coalesced packed loads, and the max and
 * the sum in one pass instead of two.
 * Prediction: the first read keeps the row in L2 (cached loads) for the
 * second while the rows in flight fit it: 2 blocks an SM at V = 32000 are
 * 264 rows, 34 MB in f32 and 17 MB in bf16 of the 60 MB L2: ~85% of the
 * copy ceiling; at V = 128256 (135 and 68 MB in flight) the second read
 * comes mostly from memory: ~65%.
 * Measured (run 2 of docs/notes/backward.md, H200, cold L2): 2,846 GB/s
 * (f32) and 2,435 GB/s (bf16) at 8192x128256, 59.1% and 50.6% of the
 * datasheet's 4814 GB/s, 4.5x and 10x PyTorch eager's loss forward and
 * backward; 38.9% at V = 50257 (scalar loads).
 * Gap to the limit: 41 points in f32: the second read comes from memory,
 * not L2; bf16 is bound by its two exponentials an element as much as by
 * its bytes. */
#include "ops/cross_entropy.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"

#define BLOCK 1024

template <int VEC, typename T>
__global__ void __launch_bounds__(BLOCK) cross_entropy_online_kernel(kb_cross_entropy_args a)
{
    const T *z = (const T *)a.z + (size_t)blockIdx.x * a.V;
    T *dz = (T *)a.dz + (size_t)blockIdx.x * a.V;
    const int t = a.targets[blockIdx.x], step = BLOCK * VEC;
    const float eps = KB_CE_SMOOTHING;
    if (t == KB_CE_IGNORE) {
        const float zero[VEC] = {};
        for (int col = threadIdx.x * VEC; col < a.V; col += step)
            kb_store_stream(dz + col, zero);
        if (threadIdx.x == 0)
            a.loss[blockIdx.x] = 0.0f;
        return;
    }
    KbSoftmaxStat st = {-INFINITY, 0.0f};
    float zsum = 0.0f;
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < a.V; col += step) {
        float v[VEC];
        kb_load_cached(v, z + col); /* read again below: keep it in L2 */
        kb_softmax_stat_push(st, v);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            zsum += v[j];
    }
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});
    zsum = kb_block_allreduce(zsum, KbSum{}, 0.0f);
    if (threadIdx.x == 0) {
        const float lse = st.m + logf(st.s);
        a.loss[blockIdx.x] = (1.0f - eps) * (lse - kb_to_float(z[t])) + eps * (lse - zsum / a.V);
    }
    const float inv_s = 1.0f / st.s, off = eps / a.V;
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < a.V; col += step) {
        float v[VEC];
        kb_load_stream(v, z + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] = (expf(v[j] - st.m) * inv_s - (col + j == t ? 1.0f - eps : 0.0f) - off) * a.inv_n;
        kb_store_stream(dz + col, v);
    }
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_cross_entropy_args *a = (const kb_cross_entropy_args *)args;
    (void)ctx;
    if (a->V % 4 == 0)
        cross_entropy_online_kernel<4, T><<<a->R, BLOCK, 0, stream>>>(*a);
    else
        cross_entropy_online_kernel<1, T><<<a->R, BLOCK, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant cross_entropy_online[] = {
    {
        .name = "online",
        .summary = "a block a row, online (max, sum) in one read, dz from a second",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "online",
        .summary = "a block a row, online (max, sum) in one read, dz from a second; bf16 logits and dz",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
