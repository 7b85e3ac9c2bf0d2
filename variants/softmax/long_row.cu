/* softmax long_row: for C >= 32768, a thread-block cluster per row with the
 * row in the cluster's registers (kernels/cluster_row.cuh): CL = C / 16384
 * blocks of 512 threads, 32 floats per thread (float4 loads).  Each block
 * folds its chunk into a running (max, sum), merges the threads' pairs, and
 * the CL pairs merge through distributed shared memory after one cluster
 * barrier; each block then writes exp(x - max) / sum from its registers:
 * x read once and y written once, 8 bytes per element.
 *
 * Builds on vectorized (one block holds a row of up to 32768 in registers,
 * and reads longer rows twice): a cluster's registers hold rows of up to
 * 262144, and its blocks are as small as short rows' (two per SM).
 * Prediction: ~85-90% of the copy ceiling from 512x65536 to 128x262144.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,596 GB/s
 * at 1024x32768, 86.4% of the run's 3005 GB/s memory ceiling, 1.12x cudnn;
 * 1,896 GB/s (63.1%) at 128x262144, 5.01x cudnn.
 * Gap to the limit: 13.6 points at 1024x32768, 36.9 at 128x262144, where
 * split_row and persistent_row are ahead.  Clusters of 2 (C = 32768) cost
 * some 4 points against the same row in one block (vectorized); clusters of
 * 8 and 16 lose more, since all of a cluster's blocks must be placed in one
 * GPC at once (with two blocks per SM, a GPC of 16-18 SMs takes two or four
 * clusters of 16 and leaves SMs idle), and every block of a row waits at the
 * barrier for the slowest one's loads. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/cluster_row.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_dispatch.cuh"

template <int VEC>
__global__ void __launch_bounds__(KB_CLUSTER_ROW_BLOCK, 2) softmax_long_row_kernel(int C, const float *__restrict__ x,
                                                                                    float *__restrict__ y)
{
    constexpr int PACKS = KB_CLUSTER_ROW_ITEMS / VEC;
    const KbClusterChunk c = kb_cluster_chunk(C);
    const size_t at = (size_t)c.row * C + c.begin;
    float v[PACKS][VEC];
#pragma unroll
    for (int k = 0; k < PACKS; ++k)
        if (kb_cluster_row_col<VEC>(k) < c.n)
            kb_load_once(v[k], x + at + kb_cluster_row_col<VEC>(k));
    const KbSoftmaxStat empty = {-INFINITY, 0.0f};
    KbSoftmaxStat st = empty;
#pragma unroll
    for (int k = 0; k < PACKS; ++k)
        if (kb_cluster_row_col<VEC>(k) < c.n)
            kb_softmax_stat_push(st, v[k]);
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, empty);
    kb_cluster_row_finish(st, KbSoftmaxMerge{}, empty, [&](KbSoftmaxStat row) {
        const float mx = row.m == -INFINITY ? 0.0f : row.m; /* an all -inf row: zeros */
        const float inv = row.s > 0.0f ? 1.0f / row.s : 0.0f;
#pragma unroll
        for (int k = 0; k < PACKS; ++k)
            if (kb_cluster_row_col<VEC>(k) < c.n) {
#pragma unroll
                for (int j = 0; j < VEC; ++j)
                    v[k][j] = expf(v[k][j] - mx) * inv;
                kb_store_once(y + at + kb_cluster_row_col<VEC>(k), v[k]);
            }
    });
}

typedef void (*long_row_kernel_t)(int, const float *, float *);

static long_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? softmax_long_row_kernel<4> : softmax_long_row_kernel<1>;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    *ctx = NULL;
    return kb_cluster_row_setup((const void *)kernel_for(a->C), a->C);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = kb_cluster_row_config(a->R, a->C, stream, &attr);
    return kb_cuda_status(cudaLaunchKernelEx(&cfg, kernel_for(a->C), a->C, a->x, a->y));
}

extern "C" const kb_variant softmax_long_row[] = {
    {
        .name = "long_row",
        .summary = "C >= 32768: a thread-block cluster per row, the row in its registers, DSMEM merge",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 90,
        .unsupported = kb_unsupported_cols<kb_cluster_row_unsupported>,
        .setup = setup,
        .launch = launch,
    },
    KB_VARIANT_END,
};
