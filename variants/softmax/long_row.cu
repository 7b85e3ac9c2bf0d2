/* softmax long_row: for C >= 32768, rows through thread-block clusters, a
 * persistent and double-buffered pipeline (kernels/cluster_rows.cuh).  A
 * cluster of CL blocks (2..16) owns one row at a time, each block a slice of
 * it in shared memory (64 KiB where the cluster size allows); while a row
 * is reduced and written, the cluster's next row is already streaming into
 * each block's second buffer with cp.async.  Each block folds its slice into
 * a (max, sum) pair (kb_softmax_stat_push), the CL pairs are merged through
 * distributed shared memory after one cluster barrier, and the block writes
 * exp(x - max) / sum from its slice.  x is read once and y written once: 8
 * bytes moved per element, as for short rows.  C % 4 != 0 (e.g. 65537)
 * moves scalars.
 *
 * Idea over vectorized (whose rows past 32768 fall back to two reads of x)
 * and over the previous long_row (a cluster per row, no persistence): a row
 * too long for one SM's registers still fits a cluster's shared memory, and
 * prefetching the next row keeps loads in flight through the reduction and
 * the cluster barrier, where a cluster per row left its SMs without loads.
 * Prediction: ~90% of the copy ceiling from 1024x32768 to 128x262144 (the
 * previous long_row: 79.6% at 512x65536, 75.1% at 256x131072, 63.7% at
 * 128x262144).
 * Measured on H100: not yet.
 * Gap to the limit: not yet measured. */
#include <stdlib.h>
#include "kernels/softmax.h"
#include "kernels/reduce.cuh"
#include "kernels/cluster_rows.cuh"

#define MIN_C 32768

struct SoftmaxRow {
    using Stat = KbSoftmaxStat;

    static __device__ __forceinline__ Stat identity() { return {-INFINITY, 0.0f}; }
    __device__ __forceinline__ Stat merge(Stat a, Stat b) const { return kb_softmax_stat_merge(a, b); }

    template <int VEC>
    __device__ __forceinline__ Stat slice_stat(const float *s, int n, float) const
    {
        Stat st = identity();
#pragma unroll 4
        for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
            float v[VEC];
            kb_smem_pack(v, s + col);
            kb_softmax_stat_push(st, v);
        }
        return kb_block_allreduce(st, KbSoftmaxMerge{}, identity());
    }

    /* An all -inf row has {-inf, 0}: write zeros, not NaN. */
    template <int VEC>
    __device__ __forceinline__ void finish(float *s, int n, int, Stat row, float) const
    {
        const float mx = row.m == -INFINITY ? 0.0f : row.m;
        const float inv = row.s > 0.0f ? 1.0f / row.s : 0.0f;
#pragma unroll 4
        for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
            float v[VEC];
            kb_smem_pack(v, s + col);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                v[j] = expf(v[j] - mx) * inv;
            kb_smem_store_pack(s + col, v);
        }
    }
};

template <int VEC>
__global__ void __launch_bounds__(KB_CLUSTER_ROWS_BLOCK, 1)
    softmax_long_row_kernel(int R, int C, int slice, int stages, const float *__restrict__ x, float *__restrict__ y)
{
    kb_cluster_rows<VEC>(SoftmaxRow{}, R, C, slice, stages, x, y);
}

typedef void (*long_row_kernel_t)(int, int, int, int, const float *, float *);

typedef struct {
    long_row_kernel_t kernel;
    KbClusterRowsPlan plan;
} long_row_ctx;

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] < MIN_C ? "long_row is for C >= 32768 (shorter rows fit one block: see vectorized)" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    if (a->C < MIN_C)
        return "long_row is for C >= 32768";
    long_row_ctx *c = (long_row_ctx *)calloc(1, sizeof *c);
    c->kernel = a->C % 4 == 0 ? softmax_long_row_kernel<4> : softmax_long_row_kernel<1>;
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
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    const long_row_ctx *c = (const long_row_ctx *)ctx;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = kb_cluster_rows_config(&c->plan, stream, &attr);
    return kb_cuda_status(cudaLaunchKernelEx(&cfg, c->kernel, a->R, a->C, c->plan.slice, c->plan.stages, a->x, a->y));
}

extern "C" const kb_variant softmax_long_row = {
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
