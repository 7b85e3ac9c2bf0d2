/* argmax naive: one thread per row, a serial scan keeping the first
 * largest value.
 *
 * Idea: the baseline.  A row of logits is the greedy pick of one
 * sequence, so a decode step has one row: one thread reads the whole
 * vocabulary.
 * Prediction: some 1% of the copy ceiling at one row (one thread's
 * dependent loads, ~4 bytes a few nanoseconds apart); better with many
 * rows, but a warp's loads are C floats apart.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 0.169 GB/s
 * at 1x128256 (3.04 ms), 0.0% of the run's 4237 GB/s memory ceiling (some
 * 1/25,000 of it, far under the 1% predicted); 0.168 GB/s (0.76 ms) at 1x32000.
 * Gap to the limit: 100 points at one row, 4 bytes every 24 ns; block reads
 * the row with a whole block, 131.12x faster at 1x128256. */
#include "ops/argmax.h"
#include "kernels/cuda_util.h"

__global__ void argmax_naive_kernel(const float *__restrict__ x, int R, int C, int *__restrict__ y)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= R)
        return;
    const float *row = x + (int64_t)r * C;
    int best = 0;
    float top = row[0];
    for (int j = 1; j < C; ++j)
        if (row[j] > top)
            top = row[j], best = j;
    y[r] = best;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_argmax_args *a = (const kb_argmax_args *)args;
    (void)ctx;
    argmax_naive_kernel<<<KB_CEIL_DIV(a->R, 128), 128, 0, stream>>>(a->x, a->R, a->C, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant argmax_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per row, a serial scan",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
