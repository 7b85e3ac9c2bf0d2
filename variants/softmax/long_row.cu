/* softmax long_row: for C >= 65536, a thread-block cluster per row.  The
 * row is cut into CL slices (CL = 4, 8 or 16 blocks, one slice of at most
 * 16384 floats = 64 KiB each where the cluster size allows); each block
 * streams its slice into shared memory with float4 loads, folding it into a
 * running (max, sum) on the way (kb_softmax_stat_push).  The block merges its
 * threads' pairs, publishes its pair in shared memory, and after a cluster
 * barrier every block reads the CL pairs of its cluster through distributed
 * shared memory (cluster.map_shared_rank) and merges them into the row's.  It
 * then writes exp(x - max) / sum from its shared-memory slice.  x is read
 * once and y written once: 8 bytes moved per element, as for short rows.
 * This is the cluster version (sm_90, cudaLaunchKernelEx with a cluster
 * dimension attribute), not the multi-block fallback.  A second cluster
 * barrier (arrive after reading the peers' pairs, wait before exiting) keeps
 * every block's shared memory alive while a peer may still read it.
 *
 * Cluster size: 16 (a non-portable size, allowed by a function attribute in
 * setup) when the row needs more than 8 slices of 64 KiB and the device
 * accepts it; otherwise the 8 portable blocks take larger slices, up to the
 * device's opt-in shared memory per block (227 KiB on H100: C up to ~464k).
 * C % 4 != 0 (e.g. 65537) uses scalar accesses throughout.
 *
 * Idea over vectorized (whose rows past 32768 fall back to two reads of x):
 * a row too long for one SM's registers still fits a cluster's shared memory.
 * Prediction: ~85-90% of the copy ceiling for 512x65536 .. 128x262144,
 * against ~55-65% for vectorized's two-read fallback there.
 * Measured on H100 (results/h100/kbench-20261122-full.csv, cold L2):
 * 2,394 GB/s (79.6% of the copy ceiling) at 512x65536, 2,259 (75.1%) at
 * 256x131072, 1,916 (63.7%) at 128x262144.  Plain loads and stores gave
 * +1-5%.
 * Gap to the limit: the cluster barrier and the row's exps leave a block
 * without loads in flight for a while; 2-3 blocks per SM cover part of it.
 * A persistent cluster pipeline (kernels/cluster_rows.cuh, as in layernorm
 * long_row: the next row's slice prefetched by bulk copies, the output
 * drained by bulk stores) measured slower here: 60.2% at 512x65536, 56.6%
 * at 256x131072, 41.9% at 128x262144 (68.8% at 1024x32768, where
 * vectorized holds 90.4%). */
#include <cooperative_groups.h>
#include <stdlib.h>
#include "kernels/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/reduce.cuh"

namespace cg = cooperative_groups;

#define BLOCK 512
#define ITEMS 8               /* packs in flight per thread */
#define MIN_C 65536
#define TARGET_SLICE 16384    /* floats per block (64 KiB) when the cluster size allows */
#define MAX_PORTABLE_CLUSTER 8
#define MAX_CLUSTER 16

/* One block = one slice of one row; blocks of a cluster are consecutive in x. */
template <int VEC>
__global__ void __launch_bounds__(BLOCK, 2) softmax_long_row_kernel(int C, int slice, const float *__restrict__ x,
                                                                    float *__restrict__ y)
{
    extern __shared__ float4 slice_smem[];
    float *part = reinterpret_cast<float *>(slice_smem);
    __shared__ KbSoftmaxStat block_stat;

    cg::cluster_group cluster = cg::this_cluster();
    const int nblocks = (int)cluster.num_blocks();
    const int rank = (int)cluster.block_rank();
    const int row = (int)blockIdx.x / nblocks;
    const int begin = rank * slice;
    const int n = max(0, min(slice, C - begin));
    const float *in = x + (size_t)row * C + begin;
    float *out = y + (size_t)row * C + begin;

    /* Stream the slice into shared memory: ITEMS loads in flight per thread
     * before the first is used, then fold them into (max, sum). */
    KbSoftmaxStat st = {-INFINITY, 0.0f};
    for (int base = 0; base < n; base += BLOCK * ITEMS * VEC) {
        float v[ITEMS][VEC];
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int col = base + (i * BLOCK + (int)threadIdx.x) * VEC;
            if (col < n)
                kb_load_once(v[i], in + col);
        }
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int col = base + (i * BLOCK + (int)threadIdx.x) * VEC;
            if (col < n) {
                if constexpr (VEC == 4)
                    slice_smem[col / 4] = make_float4(v[i][0], v[i][1], v[i][2], v[i][3]);
                else
                    part[col] = v[i][0];
                kb_softmax_stat_push(st, v[i]);
            }
        }
    }

    /* Block, then cluster: each block publishes its pair, and every thread
     * merges the CL pairs in the same order, so all agree on the result. */
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});
    if (threadIdx.x == 0)
        block_stat = st;
    cluster.sync();
    KbSoftmaxStat row_stat = {-INFINITY, 0.0f};
    for (int r = 0; r < nblocks; ++r)
        row_stat = kb_softmax_stat_merge(row_stat, *cluster.map_shared_rank(&block_stat, r));
    auto done_reading = cluster.barrier_arrive();

    const float mx = row_stat.m == -INFINITY ? 0.0f : row_stat.m;
    const float inv = row_stat.s > 0.0f ? 1.0f / row_stat.s : 0.0f;
    for (int col = threadIdx.x * VEC; col < n; col += BLOCK * VEC) {
        float v[VEC];
        if constexpr (VEC == 4) {
            float4 t = slice_smem[col / 4];
            v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
        } else {
            v[0] = part[col];
        }
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] = expf(v[j] - mx) * inv;
        kb_store_once(out + col, v);
    }
    cluster.barrier_wait(std::move(done_reading)); /* peers are done with block_stat */
}

typedef void (*long_row_kernel_t)(int, int, const float *, float *);

typedef struct {
    long_row_kernel_t kernel;
    int cluster, slice;
} long_row_ctx;

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] < MIN_C ? "long_row is for C >= 65536 (shorter rows fit one block: see vectorized)" : NULL;
}

static cudaLaunchConfig_t launch_config(int R, int cluster, int slice, cudaStream_t stream,
                                        cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)R * (unsigned)cluster);
    cfg.blockDim = dim3(BLOCK);
    cfg.dynamicSmemBytes = (size_t)slice * sizeof(float);
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* Slice length for a cluster size: a multiple of 4 so float4 slices stay aligned. */
static int slice_for(int C, int cluster)
{
    return (KB_CEIL_DIV(C, cluster) + 3) / 4 * 4;
}

/* Whether at least one cluster of this shape can be resident. */
static bool cluster_fits(long_row_kernel_t k, int cluster, int slice, int smem_optin)
{
    if ((size_t)slice * sizeof(float) + 1024 > (size_t)smem_optin)
        return false;
    if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, slice * (int)sizeof(float)) !=
        cudaSuccess)
        return false;
    if (cluster > MAX_PORTABLE_CLUSTER &&
        cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        return false;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = launch_config(1, cluster, slice, 0, &attr);
    int active = 0;
    return cudaOccupancyMaxActiveClusters(&active, k, &cfg) == cudaSuccess && active > 0;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    int dev = 0, smem_optin = 0;
    if (a->C < MIN_C)
        return "long_row is for C >= 65536";
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return "cannot query the device";

    long_row_ctx *c = (long_row_ctx *)calloc(1, sizeof *c);
    c->kernel = a->C % 4 == 0 ? softmax_long_row_kernel<4> : softmax_long_row_kernel<1>;
    /* Smallest power-of-two cluster with slices of <= TARGET_SLICE floats. */
    int cluster = 4;
    while (cluster < MAX_CLUSTER && KB_CEIL_DIV(a->C, cluster) > TARGET_SLICE)
        cluster *= 2;
    for (; cluster >= 4; cluster /= 2) {
        if (cluster_fits(c->kernel, cluster, slice_for(a->C, cluster), smem_optin))
            break;
        cudaGetLastError(); /* clear a refused attribute */
    }
    if (cluster < 4) {
        free(c);
        return "no cluster of 4..16 blocks holds this row in shared memory on this device";
    }
    c->cluster = cluster;
    c->slice = slice_for(a->C, cluster);
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
    cudaLaunchConfig_t cfg = launch_config(a->R, c->cluster, c->slice, stream, &attr);
    return kb_cuda_status(cudaLaunchKernelEx(&cfg, c->kernel, a->C, c->slice, a->x, a->y));
}

extern "C" const kb_variant softmax_long_row = {
    .name = "long_row",
    .summary = "C >= 65536: a thread-block cluster per row, slices in shared memory, DSMEM merge",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .min_cc = 90,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
