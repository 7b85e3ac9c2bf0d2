/* add naive: one thread per element, y = x + r: the basic stage's kernel
 * (model/stage_basic.cu), which adds each head's output into the residual
 * sum in place (y = x).
 *
 * Idea: the only rung, a plain coalesced elementwise kernel (add_relu
 * fused shows what float4 accesses and streaming hints add).
 * Prediction: ~85% of the copy ceiling on large N; the stage's 294912
 * elements are a few microseconds, mostly the launch.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,385 GB/s
 * at 67108864, 79.9% of the run's 4237 GB/s memory ceiling; 2,463 GB/s (58.1%)
 * at 4194304; the stage's 294912 in 5.3 us (666 GB/s, 15.7%).
 * Gap to the limit: 20.1 points at 67108864: 4-byte accesses; a grid of one
 * thread per element.  At 294912, 84.3 points: the launch. */
#include "ops/add.h"
#include "kernels/cuda_util.h"

__global__ void add_naive_kernel(const float *a, const float *b, int64_t n, float *y)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a[i] + b[i];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_add_args *a = (const kb_add_args *)args;
    (void)ctx;
    add_naive_kernel<<<(unsigned)KB_CEIL_DIV(a->n, 256), 256, 0, stream>>>(a->x, a->r, a->n, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant add_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element (the basic stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
