/* softmax smem_block: one block of 256 threads per row.  The threads stride
 * the row together (thread t takes columns t, t + 256, ...), so each load
 * instruction of a warp reads 128 consecutive bytes, and the max and the sum
 * are combined by a shared-memory tree (kb_block_tree_allreduce in
 * kernels/reduce.cuh: halve the active threads each step).
 *
 * Builds on naive: coalesced loads and R * 256 threads instead of R.
 * The three passes remain; the second and third find most of the row in
 * L1/L2 for short rows, not for long ones.
 * Prediction: one to two orders of magnitude over naive; still well short of
 * the copy ceiling: 8 barriers per tree, scalar 4-byte loads, a 256-thread
 * block idles on short rows (C = 32 leaves 224 threads with nothing to do),
 * and long rows re-read x from DRAM (12 bytes per element moved, not 8).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,328 GB/s
 * at 65536x4096, 77.5% of the run's 3005 GB/s memory ceiling, 0.77x cudnn.
 * Gap to the limit: 23 points at 65536x4096, more for short rows (the idle
 * threads) and long ones (42.4% at 1024x32768: the re-reads). History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define BLOCK 256

__global__ void __launch_bounds__(BLOCK) softmax_smem_block_kernel(int C, const float *x, float *y)
{
    const float *in = x + (size_t)blockIdx.x * C;
    float *out = y + (size_t)blockIdx.x * C;

    float max = -INFINITY;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        max = fmaxf(max, in[j]);
    max = kb_block_tree_allreduce<BLOCK>(max, KbMax{});
    if (max == -INFINITY)
        max = 0.0f;

    float sum = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        sum += expf(in[j] - max);
    sum = kb_block_tree_allreduce<BLOCK>(sum, KbSum{});
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

    for (int j = threadIdx.x; j < C; j += BLOCK)
        out[j] = expf(in[j] - max) * inv;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    softmax_smem_block_kernel<<<a->R, BLOCK, 0, stream>>>(a->C, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_smem_block[] = {
    {
        .name = "smem_block",
        .summary = "one block per row, shared-memory tree reductions",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
