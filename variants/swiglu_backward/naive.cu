/* swiglu_backward naive: one thread per output pair, both gradients of
 * one (gate, up) from expf in fp32, in the form's storage type.
 *
 * Builds on nothing: the rung a ladder starts from.
 * Prediction: near the forward naive's share of the ceiling: each warp's
 * loads and stores are coalesced, but 2- or 4-byte accesses and expf's
 * longer sequence keep it under the copy kernel.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 3154
 * GB/s (f32) and 2319 GB/s (bf16) at 8192x14336 (0.745 and 0.506 ms), 74.4%
 * and 54.7% of the run's 4239 GB/s memory ceiling.
 * Gap to the limit: 45.3 points in bf16: 2-byte accesses. */
#include "ops/swiglu_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

template <typename T>
__global__ void swiglu_backward_naive_kernel(const T *__restrict__ gu, const T *__restrict__ dh, int n, int ff,
                                             T *__restrict__ dgu)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * ff)
        return;
    const int64_t t = id / ff, j = id % ff, gate = t * 2 * ff + j;
    const float g = kb_to_float(gu[gate]), u = kb_to_float(gu[gate + ff]), d = kb_to_float(dh[id]);
    const float s = 1.0f / (1.0f + expf(-g));
    dgu[gate] = kb_from_float<T>(d * u * s * (1.0f + g * (1.0f - s)));
    dgu[gate + ff] = kb_from_float<T>(d * g * s);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_swiglu_backward_args *a = (const kb_swiglu_backward_args *)args;
    (void)ctx;
    swiglu_backward_naive_kernel<T><<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(
        (const T *)a->gu, (const T *)a->dh, a->R, a->C, (T *)a->dgu);
    KB_LAUNCHED();
}

extern "C" const kb_variant swiglu_backward_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per output pair, expf",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per output pair, expf, bf16 loads and stores",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
