/* layernorm warp: one warp per row, four rows per 128-thread block; the
 * lanes stride the row and reduce the mean and the variance of
 * d = x - x[0] by butterfly shuffles (kb_warp_allreduce in
 * kernels/reduce.cuh): no shared memory, no barriers.
 *
 * Builds on smem_block: a row's reductions stay inside one warp, so short
 * rows (C <= 1024, the transformer widths) no longer pay for 256 threads and
 * 16 barriers, and a block carries 4 rows.  Still three passes, 4-byte loads.
 * Prediction: 2-4x smem_block for C <= 1024; about equal or worse for long
 * rows, where one warp's scalar loads keep too few bytes in flight.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,365 GB/s
 * at 65536x4096, 45.4% of the run's 3005 GB/s memory ceiling, 5.96x naive.
 * Gap to the limit: 2.2x, the re-reads of x and 4-byte loads (fixed by
 * welford).  History: docs/notes/softmax-layernorm.md. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define BLOCK 128
#define ROWS_PER_BLOCK (BLOCK / 32)

__global__ void __launch_bounds__(BLOCK) layernorm_warp_kernel(int R, int C, float eps, const float *x,
                                                              const float *gamma, const float *beta, float *y)
{
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (row >= R) /* the whole warp leaves together */
        return;
    const float *in = x + (size_t)row * C;
    float *out = y + (size_t)row * C;
    const float shift = in[0];

    float sum = 0.0f;
    for (int j = lane; j < C; j += 32)
        sum += in[j] - shift;
    const float mean = kb_warp_allreduce<32>(sum, KbSum{}) / C;

    float sq = 0.0f;
    for (int j = lane; j < C; j += 32) {
        float d = in[j] - shift - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(kb_warp_allreduce<32>(sq, KbSum{}) / C + eps);

    for (int j = lane; j < C; j += 32)
        out[j] = (in[j] - shift - mean) * rstd * gamma[j] + beta[j];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    (void)ctx;
    layernorm_warp_kernel<<<KB_CEIL_DIV(a->R, ROWS_PER_BLOCK), BLOCK, 0, stream>>>(a->R, a->C, a->eps, a->x,
                                                                                   a->gamma, a->beta, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_warp[] = {
    {
        .name = "warp",
        .summary = "one warp per row, shuffle reductions, three passes",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
