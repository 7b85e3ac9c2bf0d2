/* layernorm long_row: for C >= 32768, a thread-block cluster per row with
 * the row in the cluster's registers (kernels/cluster_row.cuh): CL =
 * C / 16384 blocks of 512 threads, 32 floats per thread (float4 loads).
 * Values are shifted by the row's first element (d = x - x[0], as in
 * welford, so that a row with mean 1e4 and variance 1e-2 keeps its digits);
 * a block's chunk is a register-resident row of kernels/reduce.cuh, so
 * welford's own code takes its statistics (kb_row_welford: Welford per
 * thread, Chan's formula across the block) and writes y = (d - mean) * rstd
 * * gamma + beta (kb_row_layernorm_store, gamma and beta through the
 * read-only path).  The CL blocks' (n, mean, M2) triples merge by Chan's
 * formula through distributed shared memory after one cluster barrier.
 * x read once, y written once.
 *
 * Idea over welford (one 1024-thread block per row in registers up to
 * C = 32768, two reads of x past it): a cluster's registers hold rows of up
 * to 262144, in blocks half that size (two per SM).
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144
 * (welford 84.7/64.2/58.0/57.8%).
 * Measured on H100 (cold L2, % of the copy ceiling; the reference run
 * results/h100/kbench-20261122-rowwise-final.csv): 2,441 GB/s (81.2%) at
 * 1024x32768 (welford 82.8%); 2,253 (74.9%) at 512x65536, 1,978 (65.8%)
 * at 256x131072 and 1,426 (47.4%) at 128x262144, where split_row is ahead
 * (80.1%, 78.7%, 77.2%).
 * Gap to the limit: as for softmax long_row, the clusters of 8 and 16 of
 * the longest rows cannot all be placed and wait for their slowest block;
 * layernorm's two register passes and gamma/beta loads add ~6 points to
 * softmax's loss.  Tried: 1024-thread blocks (32768 floats, clusters half
 * as large) -2 points at 1024x32768, +9 at 128x262144 (56.3%).
 * History: a persistent, pipelined cluster loop with the rows in shared
 * memory (bulk copies in and out, the next row prefetched) measured
 * 72.1/67.1/59.0/45.6%: about 2.5 us per row of reduction and cluster
 * barrier that the pipeline did not hide. */
#include "kernels/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/cluster_row.cuh"

template <int VEC>
__global__ void __launch_bounds__(KB_CLUSTER_ROW_BLOCK, 2)
    layernorm_long_row_kernel(int C, float eps, const float *__restrict__ x, const float *__restrict__ gamma,
                              const float *__restrict__ beta, float *__restrict__ y)
{
    using Cfg = KbClusterRowCfg<VEC>;
    const KbClusterChunk c = kb_cluster_chunk(C);
    const float lead = __ldg(x + (size_t)c.row * C);
    const size_t at = (size_t)c.row * C + c.begin;
    const int rank = (int)threadIdx.x;
    float d[Cfg::PACKS][VEC];
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < c.n)
            kb_load_once(d[k], x + at + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            d[k][j] = col < c.n ? d[k][j] - lead : 0.0f; /* past the chunk: never pushed or stored */
    }
    const KbWelford empty = {0.0f, 0.0f, 0.0f};
    kb_cluster_row_finish(kb_row_welford<Cfg>(d, c.n, rank), KbWelfordMerge{}, empty, [&](KbWelford row) {
        kb_row_layernorm_store<Cfg>(d, row.mean, kb_welford_rstd(row, C, eps), gamma + c.begin, beta + c.begin,
                                    y + at, c.n, rank);
    });
}

typedef void (*long_row_kernel_t)(int, float, const float *, const float *, const float *, float *);

static long_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? layernorm_long_row_kernel<4> : layernorm_long_row_kernel<1>;
}

static const char *unsupported(const kb_shape *s)
{
    return kb_cluster_row_unsupported(s->d[1]);
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

extern "C" const kb_variant layernorm_long_row = {
    .name = "long_row",
    .summary = "C >= 32768: a thread-block cluster per row, the row in its registers, DSMEM merge",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .min_cc = 90,
    .unsupported = unsupported,
    .setup = setup,
    .launch = launch,
};
