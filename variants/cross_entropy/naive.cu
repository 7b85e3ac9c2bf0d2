/* cross_entropy naive: a thread a row, three passes over its logits: the
 * max; the sum of exponentials, the row's mean and its target's logit;
 * then the loss and dz.
 *
 * Builds on nothing: the rung a ladder starts from.
 * Prediction: far under the copy ceiling: a warp's loads are V elements
 * apart, and 8192 rows are 64 blocks of 128 threads on 132 SMs.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 129
 * GB/s (f32) and 66.9 GB/s (bf16) at 8192x128256 (65.0 and 62.8 ms), 3.0%
 * and 1.6% of the run's 4239 GB/s memory ceiling.
 * Gap to the limit: 97.0 points in f32; every later rung's. */
#include "ops/cross_entropy.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

#define BLOCK 128

template <typename T>
__global__ void __launch_bounds__(BLOCK) cross_entropy_naive_kernel(kb_cross_entropy_args a)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= a.R)
        return;
    const T *z = (const T *)a.z + (size_t)row * a.V;
    T *dz = (T *)a.dz + (size_t)row * a.V;
    const int t = a.targets[row];
    if (t == KB_CE_IGNORE) {
        a.loss[row] = 0.0f;
        for (int j = 0; j < a.V; ++j)
            dz[j] = kb_from_float<T>(0.0f);
        return;
    }
    float max = -INFINITY, sum = 0.0f, mean = 0.0f;
    for (int j = 0; j < a.V; ++j)
        max = fmaxf(max, kb_to_float(z[j]));
    for (int j = 0; j < a.V; ++j) {
        sum += expf(kb_to_float(z[j]) - max);
        mean += kb_to_float(z[j]);
    }
    mean /= a.V;
    const float lse = max + logf(sum), eps = KB_CE_SMOOTHING;
    a.loss[row] = (1.0f - eps) * (lse - kb_to_float(z[t])) + eps * (lse - mean);
    for (int j = 0; j < a.V; ++j) {
        const float p = expf(kb_to_float(z[j]) - max) / sum;
        dz[j] = kb_from_float<T>((p - (j == t ? 1.0f - eps : 0.0f) - eps / a.V) * a.inv_n);
    }
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_cross_entropy_args *a = (const kb_cross_entropy_args *)args;
    (void)ctx;
    cross_entropy_naive_kernel<T><<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant cross_entropy_naive[] = {
    {
        .name = "naive",
        .summary = "a thread a row, three passes",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "a thread a row, three passes, bf16 logits and dz",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
