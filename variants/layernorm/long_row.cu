/* layernorm long_row: for C >= 32768, a thread-block cluster per row with
 * the row in the cluster's registers (kernels/cluster_row.cuh): CL =
 * C / 16384 blocks of 512 threads, 32 floats per thread (float4 loads).
 * Values are shifted by the row's first element (d = x - x[0], as in
 * welford, so that a row with mean 1e4 and variance 1e-2 keeps its digits);
 * each thread takes the exact mean of its own d and then their squared
 * deviations from it (two passes over registers); the threads' (n, mean,
 * M2) triples merge by Chan's formula in a block reduction, and the CL
 * blocks' triples the same way through distributed shared memory after one
 * cluster barrier.  y = (d - mean) * rstd * gamma + beta is written from the
 * registers, gamma and beta through the read-only path (the same columns for
 * every row: L2-resident).  x read once, y written once.
 *
 * Builds on welford (one 1024-thread block per row in registers up to
 * C = 32768, two reads of x past it): a cluster's registers hold rows of up
 * to 262144, in blocks half that size (two per SM).
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,462 GB/s
 * at 1024x32768, 81.9% of the run's 3005 GB/s memory ceiling, 97.85x naive;
 * 1,442 GB/s (48.0%) at 128x262144, 460.63x naive.
 * Gap to the limit: 18 points at 1024x32768 (just behind split_row there,
 * 82.5%, and behind welford's 84.3%), 52 at 128x262144, where
 * split_row is ahead; persistent_row leads at both: as for softmax long_row,
 * the clusters of 8 and 16 of the longest rows cannot all be placed and wait
 * for their slowest block; layernorm's two register passes and gamma/beta
 * loads add 4 (1024x32768) to 15 (128x262144) points to softmax's loss.
 * History: docs/notes/softmax-layernorm.md. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/cluster_row.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_layernorm.cuh"

template <int VEC>
__global__ void __launch_bounds__(KB_CLUSTER_ROW_BLOCK, 2)
    layernorm_long_row_kernel(int C, float eps, const float *__restrict__ x, const float *__restrict__ gamma,
                              const float *__restrict__ beta, float *__restrict__ y)
{
    constexpr int PACKS = KB_CLUSTER_ROW_ITEMS / VEC;
    const KbClusterChunk c = kb_cluster_chunk(C);
    const float lead = __ldg(x + (size_t)c.row * C);
    const size_t at = (size_t)c.row * C + c.begin;
    float d[PACKS][VEC];
    float sum = 0.0f, count = 0.0f;
#pragma unroll
    for (int k = 0; k < PACKS; ++k)
        if (kb_cluster_row_col<VEC>(k) < c.n) {
            kb_load_once(d[k], x + at + kb_cluster_row_col<VEC>(k));
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                d[k][j] -= lead;
                sum += d[k][j];
            }
            count += VEC;
        }
    const float mean = count > 0.0f ? sum / count : 0.0f;
    float m2 = 0.0f;
#pragma unroll
    for (int k = 0; k < PACKS; ++k)
        if (kb_cluster_row_col<VEC>(k) < c.n)
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                m2 = fmaf(d[k][j] - mean, d[k][j] - mean, m2);
    const KbWelford empty = {0.0f, 0.0f, 0.0f};
    const KbWelford w = kb_block_allreduce(KbWelford{count, mean, m2}, KbWelfordMerge{}, empty);
    kb_cluster_row_finish(w, KbWelfordMerge{}, empty, [&](KbWelford row) {
        const float rstd = kb_welford_rstd(row, C, eps);
#pragma unroll
        for (int k = 0; k < PACKS; ++k) {
            const int col = kb_cluster_row_col<VEC>(k);
            if (col < c.n) {
                float g[VEC], b[VEC];
                kb_load_cached(g, gamma + c.begin + col);
                kb_load_cached(b, beta + c.begin + col);
#pragma unroll
                for (int j = 0; j < VEC; ++j)
                    d[k][j] = fmaf((d[k][j] - row.mean) * rstd, g[j], b[j]);
                kb_store_once(y + at + col, d[k]);
            }
        }
    });
}

typedef void (*long_row_kernel_t)(int, float, const float *, const float *, const float *, float *);

static long_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? layernorm_long_row_kernel<4> : layernorm_long_row_kernel<1>;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    *ctx = NULL;
    return kb_cluster_row_setup((const void *)kernel_for(a->C), a->C);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    (void)ctx;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = kb_cluster_row_config(a->R, a->C, stream, &attr);
    return kb_cuda_status(
        cudaLaunchKernelEx(&cfg, kernel_for(a->C), a->C, a->eps, a->x, a->gamma, a->beta, a->y));
}

extern "C" const kb_variant layernorm_long_row[] = {
    {
        .name = "long_row",
        .summary = "C >= 32768: a thread-block cluster per row, the row in its registers, DSMEM merge",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 90,
        .unsupported = kb_unsupported_cols<kb_cluster_row_unsupported>,
        .setup = setup,
        .launch = launch,
    },
    KB_VARIANT_END,
};
