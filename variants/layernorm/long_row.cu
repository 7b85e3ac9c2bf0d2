/* layernorm long_row: for C >= 32768, rows through thread-block clusters in
 * a persistent, pipelined loop (kernels/cluster_rows.cuh).  A cluster of CL
 * blocks (2..16) owns one row at a time, each block a slice of it in shared
 * memory (64 KiB where the cluster size allows).  Each block has three slice
 * buffers on H100: the row being worked on, the next row already streaming
 * in with one bulk copy (cp.async.bulk), and the previous row's output
 * draining to memory with one bulk store.  Statistics are of the row shifted
 * by its first element (d = x - x[0], as in welford, so that a row with mean
 * 1e4 and variance 1e-2 keeps its digits).  Each thread takes the exact mean
 * of its own values of d from shared memory, then the sum of squared
 * deviations from that mean (two passes over shared memory, none over HBM);
 * the threads' (n, mean, M2) triples merge by Chan's formula in a block
 * reduction, and the CL blocks' triples the same way through distributed
 * shared memory after one cluster barrier.  The block then overwrites its
 * slice with y = (d - mean) * rstd * gamma + beta, gamma and beta through
 * the read-only path (the same slice every row, so they stay in L2), and
 * stores it.  x read once, y written once.
 *
 * Idea over welford: its register path holds a row in one 1024-thread block,
 * one block per SM at C = 32768 with no loads in flight during its
 * reduction, and past 32768 it reads x twice; here a row of up to ~460k
 * floats sits in a cluster's shared memory, and the next row's loads and
 * the last row's stores are in flight through the reduction and the
 * barrier.
 * Prediction: ~90% of the copy ceiling from 1024x32768 to 128x262144
 * (welford: 82.5% at 1024x32768, 64/58/58% at 512x65536 .. 128x262144).
 * Measured on H100 (cold L2, % of the 3009 GB/s copy ceiling; welford
 * measured in the same session beside it): 2,170 GB/s (72.1%) at
 * 1024x32768 (welford 84.7%); 2,020 (67.1%) at 512x65536 (welford 64.2%);
 * 1,776 (59.0%) at 256x131072 (welford 58.0%); 1,374 (45.6%) at
 * 128x262144 (welford 57.8%).  C < 32768 (e.g. 16384x4096) is welford's.
 * The prediction missed: the pipeline does not hide what a row costs
 * besides its bytes.
 * Gap to the limit: roughly 2.5 us per row (the block reduction, the
 * cluster barrier and the merge, one block per SM) adds to the row's time
 * at the memory's rate instead of overlapping it; kernels/cluster_rows.cuh
 * lists what was tried against it.  At 128x262144 only 7 clusters of 16
 * are resident (112 of 132 SMs), 19 rounds for 128 rows. */
#include <stdlib.h>
#include "kernels/layernorm.h"
#include "kernels/reduce.cuh"
#include "kernels/cluster_rows.cuh"

#define MIN_C 32768

struct LayernormRow {
    using Stat = KbWelford;
    int C;
    float eps;
    const float *__restrict__ gamma;
    const float *__restrict__ beta;

    static __device__ __forceinline__ Stat identity() { return {0.0f, 0.0f, 0.0f}; }
    __device__ __forceinline__ Stat merge(Stat a, Stat b) const { return kb_welford_merge(a, b); }

    /* lead: the row's first element, the shift. */
    template <int VEC>
    __device__ __forceinline__ Stat slice_stat(const float *s, int n, float lead) const
    {
        float sum = 0.0f;
        int count = 0;
#pragma unroll 4
        for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
            float v[VEC];
            kb_smem_pack(v, s + col);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                sum += v[j] - lead;
            count += VEC;
        }
        const float mean = count > 0 ? sum / (float)count : 0.0f;
        float m2 = 0.0f;
#pragma unroll 4
        for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
            float v[VEC];
            kb_smem_pack(v, s + col);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const float dev = (v[j] - lead) - mean;
                m2 = fmaf(dev, dev, m2);
            }
        }
        return kb_block_allreduce(Stat{(float)count, mean, m2}, KbWelfordMerge{}, identity());
    }

    template <int VEC>
    __device__ __forceinline__ void finish(float *s, int n, int col0, Stat row, float lead) const
    {
        const float rstd = kb_welford_rstd(row, C, eps);
#pragma unroll 4
        for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
            float v[VEC], g[VEC], b[VEC];
            kb_smem_pack(v, s + col);
            kb_load_cached(g, gamma + col0 + col);
            kb_load_cached(b, beta + col0 + col);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                v[j] = fmaf(((v[j] - lead) - row.mean) * rstd, g[j], b[j]);
            kb_smem_store_pack(s + col, v);
        }
    }
};

template <int VEC>
__global__ void __launch_bounds__(KB_CLUSTER_ROWS_BLOCK, 1)
    layernorm_long_row_kernel(int R, int C, int slice, int stages, float eps, const float *__restrict__ x,
                              const float *__restrict__ gamma, const float *__restrict__ beta,
                              float *__restrict__ y)
{
    kb_cluster_rows<VEC>(LayernormRow{C, eps, gamma, beta}, R, C, slice, stages, x, y);
}

typedef void (*long_row_kernel_t)(int, int, int, int, float, const float *, const float *, const float *, float *);

typedef struct {
    long_row_kernel_t kernel;
    KbClusterRowsPlan plan;
} long_row_ctx;

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] < MIN_C ? "long_row is for C >= 32768 (shorter rows fit one block: see welford)" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    if (a->C < MIN_C)
        return "long_row is for C >= 32768";
    long_row_ctx *c = (long_row_ctx *)calloc(1, sizeof *c);
    c->kernel = a->C % 4 == 0 ? layernorm_long_row_kernel<4> : layernorm_long_row_kernel<1>;
    const char *why = kb_cluster_rows_plan(c->kernel, a->R, a->C, &c->plan);
    if (why) {
        free(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

static void teardown(void *ctx)
{
    free(ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    const long_row_ctx *c = (const long_row_ctx *)ctx;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = kb_cluster_rows_config(&c->plan, stream, &attr);
    return kb_cuda_status(cudaLaunchKernelEx(&cfg, c->kernel, a->R, a->C, c->plan.slice, c->plan.stages, a->eps, a->x, a->gamma,
                                             a->beta, a->y));
}

extern "C" const kb_variant layernorm_long_row = {
    .name = "long_row",
    .summary = "C >= 32768: persistent clusters, a row's slices in shared memory, next row prefetched, DSMEM merge",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .min_cc = 90,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
