/* rmsnorm_backward naive: the baseline, two kernels of one thread an item,
 * as layernorm_backward naive.  dx: a thread a row, two passes over its x
 * and dy (the row sum of dy gamma xhat, then dx), from the forward's rstd.
 * dgamma: a thread a column, a sum over all R rows (a warp's loads are 32
 * consecutive columns of one row: coalesced).
 *
 * The bf16 form widens each element as it loads it and rounds each output
 * once (not yet measured on a GPU).
 *
 * Builds on nothing: the gradient as written, the rung a ladder starts from.
 * Prediction: far under the copy ceiling, as layernorm_backward naive (154
 * GB/s at 65536x4096 on the H200): dx's loads are C floats apart across a
 * warp, and dgamma's R sequential loads a thread leave 4096 columns on 32
 * blocks.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 215 GB/s
 * at 65536x4096 (15.0 ms), 5.1% of the run's 4239 GB/s memory ceiling; 69.0
 * GB/s (1.6%) at 16384x768.
 * Gap to the limit: 94.9 points at 65536x4096; every later rung's. */
#include "ops/rmsnorm_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

#define BLOCK 128

/* T: float or __nv_bfloat16, widened on load (kb_to_float), fp32 throughout. */
template <class T>
__global__ void __launch_bounds__(BLOCK) rmsnorm_backward_dx_kernel(kb_rmsnorm_backward_args a)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= a.R)
        return;
    const T *x = (const T *)a.x + (size_t)row * a.C, *dy = (const T *)a.dy + (size_t)row * a.C;
    const T *gamma = (const T *)a.gamma;
    const float rstd = a.rstd[row];
    float s = 0.0f;
    for (int j = 0; j < a.C; ++j)
        s += kb_to_float(dy[j]) * kb_to_float(gamma[j]) * kb_to_float(x[j]) * rstd;
    s /= a.C;
    T *dx = (T *)a.dx + (size_t)row * a.C;
    for (int j = 0; j < a.C; ++j)
        dx[j] = kb_from_float<T>(rstd * (kb_to_float(dy[j]) * kb_to_float(gamma[j]) - kb_to_float(x[j]) * rstd * s));
}

template <class T>
__global__ void __launch_bounds__(BLOCK) rmsnorm_backward_dgamma_kernel(kb_rmsnorm_backward_args a)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= a.C)
        return;
    const T *x = (const T *)a.x, *dy = (const T *)a.dy;
    float dg = 0.0f;
    for (int r = 0; r < a.R; ++r) {
        const size_t i = (size_t)r * a.C + col;
        dg += kb_to_float(dy[i]) * kb_to_float(x[i]) * a.rstd[r];
    }
    ((T *)a.dgamma)[col] = kb_from_float<T>(dg);
}

template <class T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_backward_args *a = (const kb_rmsnorm_backward_args *)args;
    (void)ctx;
    rmsnorm_backward_dx_kernel<T><<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(*a);
    rmsnorm_backward_dgamma_kernel<T><<<KB_CEIL_DIV(a->C, BLOCK), BLOCK, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant rmsnorm_backward_naive[] = {
    {
        .name = "naive",
        .summary = "a thread a row for dx, a thread a column for dgamma",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "a thread a row for dx, a thread a column for dgamma; bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
