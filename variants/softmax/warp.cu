/* softmax warp: one warp per row, four rows per 128-thread block.  The 32
 * lanes stride the row (lane l takes columns l, l + 32, ...) and combine
 * the max and the sum with five butterfly shuffles (kb_warp_allreduce in
 * kernels/reduce.cuh): no shared memory, no barriers.
 *
 * Builds on smem_block: a row's reduction stays inside one warp, so a short
 * row no longer pays for 256 threads and 16 barriers, and a block carries 4
 * rows.  Still three passes and 4-byte loads.
 * Prediction: several times smem_block for C <= 1024 (rows per SM up from
 * ~8 to ~64, no idle threads); about equal for long rows, where a single
 * warp with scalar loads keeps too few bytes in flight and the third pass
 * reads x again from DRAM.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,354 GB/s
 * at 65536x4096, 45.1% of the run's 3005 GB/s memory ceiling, 0.45x cudnn.
 * Gap to the limit: 2.2x, from the extra reads of x (12 or 16 bytes moved per
 * element for 8 counted) and scalar loads. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define BLOCK 128
#define ROWS_PER_BLOCK (BLOCK / 32)

__global__ void __launch_bounds__(BLOCK) softmax_warp_kernel(int R, int C, const float *x, float *y)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= R) /* the whole warp leaves together: no shuffle is left half-joined */
        return;
    const float *in = x + (size_t)row * C;
    float *out = y + (size_t)row * C;

    float max = -INFINITY;
    for (int j = lane; j < C; j += 32)
        max = fmaxf(max, in[j]);
    max = kb_warp_allreduce<32>(max, KbMax{});
    if (max == -INFINITY)
        max = 0.0f;

    float sum = 0.0f;
    for (int j = lane; j < C; j += 32)
        sum += expf(in[j] - max);
    sum = kb_warp_allreduce<32>(sum, KbSum{});
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

    for (int j = lane; j < C; j += 32)
        out[j] = expf(in[j] - max) * inv;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    softmax_warp_kernel<<<KB_CEIL_DIV(a->R, ROWS_PER_BLOCK), BLOCK, 0, stream>>>(a->R, a->C, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_warp[] = {
    {
        .name = "warp",
        .summary = "one warp per row, shuffle reductions, three passes",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
