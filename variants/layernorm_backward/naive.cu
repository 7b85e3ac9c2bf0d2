/* layernorm_backward naive: the baseline, two kernels of one thread an
 * item.  dx: a thread a row, two passes over its x and dy (the row sums of
 * dy gamma and dy gamma xhat, then dx), from the forward's mean and rstd.
 * dgamma and dbeta: a thread a column, a sum over all R rows (the loads of
 * a warp are 32 consecutive columns of one row: coalesced).
 *
 * Builds on nothing: the gradient as written, the rung a ladder starts from.
 * Prediction: far under the copy ceiling: dx's thread-per-row loads are
 * C floats apart across a warp (a 128-byte line a lane), and dgamma's R
 * sequential loads a thread leave a 65536x4096 shape's 4096 columns on 32
 * blocks.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 154 GB/s
 * at 65536x4096 (20.9 ms), 3.6% of the run's 4239 GB/s memory ceiling; 41.5
 * GB/s (1.0%) at 16384x768.
 * Gap to the limit: 96.4 points at 65536x4096; every later rung's. */
#include "ops/layernorm_backward.h"
#include "kernels/cuda_util.h"

#define BLOCK 128

__global__ void __launch_bounds__(BLOCK) layernorm_backward_dx_kernel(kb_layernorm_backward_args a)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= a.R)
        return;
    const float *x = a.x + (size_t)row * a.C, *dy = a.dy + (size_t)row * a.C;
    const float mean = a.mean[row], rstd = a.rstd[row];
    float s1 = 0.0f, s2 = 0.0f;
    for (int j = 0; j < a.C; ++j) {
        const float g = dy[j] * a.gamma[j];
        s1 += g;
        s2 += g * (x[j] - mean) * rstd;
    }
    s1 /= a.C, s2 /= a.C;
    float *dx = a.dx + (size_t)row * a.C;
    for (int j = 0; j < a.C; ++j)
        dx[j] = rstd * (dy[j] * a.gamma[j] - s1 - (x[j] - mean) * rstd * s2);
}

__global__ void __launch_bounds__(BLOCK) layernorm_backward_params_kernel(kb_layernorm_backward_args a)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= a.C)
        return;
    float dg = 0.0f, db = 0.0f;
    for (int r = 0; r < a.R; ++r) {
        const size_t i = (size_t)r * a.C + col;
        dg += a.dy[i] * (a.x[i] - a.mean[r]) * a.rstd[r];
        db += a.dy[i];
    }
    a.dgamma[col] = dg;
    a.dbeta[col] = db;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_backward_args *a = (const kb_layernorm_backward_args *)args;
    (void)ctx;
    layernorm_backward_dx_kernel<<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(*a);
    layernorm_backward_params_kernel<<<KB_CEIL_DIV(a->C, BLOCK), BLOCK, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_backward_naive[] = {
    {
        .name = "naive",
        .summary = "a thread a row for dx, a thread a column for dgamma and dbeta",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
