/* softmax naive: one thread per row, three passes over the row in global
 * memory (max, sum of exp(x - max), write exp(x - max) / sum).
 *
 * Idea: the starting point of the ladder.  Subtracting the row max makes it
 * shift-invariant ([1000, 1001] -> [0.269, 0.731]); an all -inf row has no
 * max to subtract, so it subtracts 0, every exp is 0, the sum is 0 and the
 * row is written as zeros instead of NaN.
 * Prediction: far below the copy ceiling.  Neighbouring threads of a warp
 * read addresses C floats apart, so every load is its own 32-byte sector
 * (uncoalesced), and with one thread per row there are only R threads: a
 * few rows per SM for the long-row shapes.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 242 GB/s
 * at 65536x4096, 8.1% of the run's 3005 GB/s memory ceiling, 0.08x cudnn.
 * Gap to the limit: 12.4x; every later file fixes one thing. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include <math.h>

#define BLOCK 128

__global__ void __launch_bounds__(BLOCK) softmax_naive_kernel(int R, int C, const float *x, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= R)
        return;
    const float *in = x + (size_t)row * C;
    float *out = y + (size_t)row * C;

    float max = -INFINITY;
    for (int j = 0; j < C; ++j)
        max = fmaxf(max, in[j]);
    if (max == -INFINITY) /* all -inf: exp(-inf - 0) = 0 everywhere */
        max = 0.0f;

    float sum = 0.0f;
    for (int j = 0; j < C; ++j)
        sum += expf(in[j] - max);
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

    for (int j = 0; j < C; ++j)
        out[j] = expf(in[j] - max) * inv;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    (void)ctx;
    softmax_naive_kernel<<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(a->R, a->C, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per row, three passes over global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
