/* softmax online: the max and the sum in one sweep.  Each thread keeps a
 * running max m and a sum s of exp(x - m); a value above m rescales s by
 * exp(m_old - m_new) (kb_softmax_stat_push), and the (m, s) pairs of the
 * threads merge the same way (kb_softmax_stat_merge, in kernels/reduce.cuh).
 * A second sweep writes exp(x - m) / s.  One warp per row for C <= 1024
 * (four rows per 128-thread block), one 512-thread block per row beyond.
 *
 * Builds on warp: two passes over x instead of three (Milakov & Gimelshein,
 * "Online normalizer calculation for softmax", 2018), and a block instead of
 * a single warp for long rows, so those keep enough loads in flight.
 * Prediction: ~1.3x warp where the third pass missed cache (12 bytes moved
 * per element instead of 16), and much more on long rows (512 threads per
 * row instead of 32); about equal for short rows, which were cache hits.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,208 GB/s
 * at 65536x4096, 73.5% of the run's 3005 GB/s memory ceiling, 0.73x cudnn.
 * Gap to the limit: 27 points: 4-byte loads and the second read of x, at best
 * 8/12 of the ceiling once rows outgrow L2's share per row. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define WARP_MAX_C 1024
#define WARP_BLOCK 128
#define ROW_BLOCK 512

/* GROUP threads per row: 32 (a warp, BLOCK / 32 rows per block) or BLOCK
 * (one row per block). */
template <int GROUP, int BLOCK>
__global__ void __launch_bounds__(BLOCK) softmax_online_kernel(int R, int C, const float *x, float *y)
{
    const int rank = threadIdx.x % GROUP;
    const int row = blockIdx.x * (BLOCK / GROUP) + threadIdx.x / GROUP;
    if (row >= R) /* a whole warp or block: nobody is left waiting in a reduction */
        return;
    const float *in = x + (size_t)row * C;
    float *out = y + (size_t)row * C;

    KbSoftmaxStat st = {-INFINITY, 0.0f};
    for (int j = rank; j < C; j += GROUP)
        kb_softmax_stat_push(st, in[j]);
    st = kb_group_allreduce<GROUP>(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});

    const float max = st.m == -INFINITY ? 0.0f : st.m;
    const float inv = st.s > 0.0f ? 1.0f / st.s : 0.0f;
    for (int j = rank; j < C; j += GROUP)
        out[j] = expf(in[j] - max) * inv;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    if (a->C <= WARP_MAX_C)
        softmax_online_kernel<32, WARP_BLOCK>
            <<<KB_CEIL_DIV(a->R, WARP_BLOCK / 32), WARP_BLOCK, 0, stream>>>(a->R, a->C, a->x, a->y);
    else
        softmax_online_kernel<ROW_BLOCK, ROW_BLOCK><<<a->R, ROW_BLOCK, 0, stream>>>(a->R, a->C, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_online[] = {
    {
        .name = "online",
        .summary = "running max and rescaled sum in one sweep, then a write pass",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
