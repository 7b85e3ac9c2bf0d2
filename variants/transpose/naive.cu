/* transpose naive: one thread per element of x, y[c][r] = x[r][c]: the
 * basic stage's kernel (model/stage_basic.cu).
 *
 * Idea: the starting point and the baseline.  Reads are coalesced;
 * consecutive threads write R floats apart, a 32-byte sector for each
 * 4-byte store.
 * Prediction: some 1/4 to 1/8 of the copy ceiling on large matrices.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 475 GB/s
 * at 16384x1024 and 518 GB/s at 4096x4096 (the same 134 MB), 11.2% and 12.2% of
 * the run's 4237 GB/s memory ceiling, about the 1/8 predicted.
 * Gap to the limit: 87.8-88.8 points on the large matrices: the scattered
 * stores (tiled fixes them). */
#include "ops/transpose.h"
#include "kernels/cuda_util.h"

/* out (C x R) = in (R x C)^T. */
__global__ void transpose_naive_kernel(const float *__restrict__ in, int R, int C, float *__restrict__ out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (int64_t)R * C)
        out[(i % C) * R + i / C] = in[i];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_transpose_args *a = (const kb_transpose_args *)args;
    (void)ctx;
    transpose_naive_kernel<<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(a->x, a->R, a->C,
                                                                                                a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant transpose_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element, coalesced reads, scattered writes (the basic stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
