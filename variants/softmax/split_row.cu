/* softmax split_row: for C >= 32768, several ordinary blocks per row
 * (kernels/split_row.cuh).  The row is cut into chunks of 8192 floats, one
 * 256-thread block each; a block copies its chunk into shared memory by
 * 16-byte cp.async (in flight without holding registers: 40 per thread, six
 * blocks per SM), folds it into a running (max, sum), merges the threads'
 * pairs, publishes its pair in global memory and waits for the row's other
 * pairs (tickets in start order, so the wait cannot deadlock).  With the
 * row's (max, sum) it writes exp(x - max) / sum from shared memory
 * (evict-first stores): x read once and y written once, 8 bytes per
 * element.
 *
 * Builds on long_row (a cluster per row, the row in its registers): no
 * cluster to place, so the longest rows lose nothing to GPC packing, and
 * six waiting blocks per SM instead of two.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,637 GB/s
 * at 1024x32768, 87.7% of the run's 3005 GB/s memory ceiling, 1.13x cudnn;
 * 2,530 GB/s (84.2%) at 128x262144, 6.68x cudnn.
 * Gap to the limit: 12 points at 1024x32768, 16 at 128x262144: each block's
 * life is a chain of dependent round trips (its ticket, its loads, the count
 * and the partials) for 32 KiB of data, and the waits hold shared memory that
 * more loads could use (persistent_row keeps it busy). History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_dispatch.cuh"

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 6) softmax_split_row_kernel(int C, KbSplitRow s,
                                                                               const float *__restrict__ x,
                                                                               float *__restrict__ y)
{
    constexpr int PACKS = KB_SPLIT_ROW_ITEMS / VEC;
    __shared__ __align__(16) float buf[KB_SPLIT_ROW_CHUNK];
    const KbSplitRowWork w = kb_split_row_work(s);
    const int begin = w.chunk * KB_SPLIT_ROW_CHUNK, n = min(KB_SPLIT_ROW_CHUNK, C - begin);
    const size_t at = (size_t)w.row * C + begin;
    kb_split_row_fetch<VEC>(buf, x + at, n);
    kb_cp_async_wait<0>();

    const KbSoftmaxStat empty = {-INFINITY, 0.0f};
    KbSoftmaxStat st = empty;
#pragma unroll 4
    for (int k = 0; k < PACKS; ++k)
        if (kb_split_row_col<VEC>(k) < n) {
            float v[VEC];
            kb_split_row_pack(v, buf, k);
            kb_softmax_stat_push(st, v);
        }
    st = kb_split_row_exchange(s, w, kb_block_allreduce(st, KbSoftmaxMerge{}, empty), KbSoftmaxMerge{}, empty);

    const float mx = st.m == -INFINITY ? 0.0f : st.m; /* an all -inf row: zeros */
    const float inv = st.s > 0.0f ? 1.0f / st.s : 0.0f;
#pragma unroll 4
    for (int k = 0; k < PACKS; ++k)
        if (kb_split_row_col<VEC>(k) < n) {
            float v[VEC];
            kb_split_row_pack(v, buf, k);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                v[j] = expf(v[j] - mx) * inv;
            kb_store_stream(y + at + kb_split_row_col<VEC>(k), v); /* the last use of y's lines */
        }
    kb_split_row_retire(s);
}

typedef void (*split_row_kernel_t)(int, KbSplitRow, const float *, float *);

static split_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? softmax_split_row_kernel<4> : softmax_split_row_kernel<1>;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    return kb_split_row_setup((const void *)kernel_for(a->C), a->R, a->C, sizeof(KbSoftmaxStat), ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    const KbSplitRow *s = (const KbSplitRow *)ctx;
    kernel_for(a->C)<<<kb_split_row_blocks(s), KB_SPLIT_ROW_BLOCK, 0, stream>>>(a->C, *s, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_split_row[] = {
    {
        .name = "split_row",
        .summary = "C >= 32768: chunks of 8192 in shared memory, one block each, (max, sum) traded through global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_unsupported_cols<kb_split_row_unsupported>,
        .setup = setup,
        .teardown = kb_split_row_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
