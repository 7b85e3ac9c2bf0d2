/* softmax_backward naive: a thread a row, two passes over its y and dy
 * (the row's sum of dy y, then dx), as the gradient is written.
 *
 * The bf16 form widens each element as it loads it and rounds dx once
 * (not yet measured on a GPU).
 *
 * Builds on nothing: the rung a ladder starts from.
 * Prediction: far under the copy ceiling: a warp's 32 rows put its loads
 * C floats apart (a 128-byte line a lane), and a 65536-row matrix is 512
 * blocks of 128 threads.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 400
 * GB/s at 65536x4096 (8.06 ms), 9.4% of the run's 4239 GB/s memory ceiling;
 * 3.1 GB/s (0.1%) at 128x262144.
 * Gap to the limit: 90.6 points at 65536x4096; every later rung's. */
#include "ops/softmax_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

#define BLOCK 128

/* T: float or __nv_bfloat16, widened on load, fp32 throughout. */
template <class T>
__global__ void __launch_bounds__(BLOCK) softmax_backward_naive_kernel(kb_softmax_backward_args a)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= a.R)
        return;
    const size_t base = (size_t)row * a.C;
    const T *y = (const T *)a.y, *dy = (const T *)a.dy;
    float dot = 0.0f;
    for (int j = 0; j < a.C; ++j)
        dot += kb_to_float(dy[base + j]) * kb_to_float(y[base + j]);
    for (int j = 0; j < a.C; ++j)
        ((T *)a.dx)[base + j] = kb_from_float<T>(kb_to_float(y[base + j]) * (kb_to_float(dy[base + j]) - dot));
}

template <class T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    (void)ctx;
    softmax_backward_naive_kernel<T><<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_backward_naive[] = {
    {
        .name = "naive",
        .summary = "a thread a row, two passes",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "a thread a row, two passes; bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
