/* Long rows through thread-block clusters (sm_90): a persistent,
 * double-buffered row pipeline shared by softmax/long_row and
 * layernorm/long_row, for rows too long for one SM's registers.
 *
 * A cluster of CL blocks (2..16) owns one row at a time; block `rank` owns
 * the slice of `slice` floats at column rank * slice, held in its shared
 * memory.  The grid is persistent: as many clusters as can be resident (R
 * if fewer), cluster k taking rows k, k + nclusters, ...  Each block has two
 * slice buffers.  While row i is reduced and written from one, the block's
 * slice of the cluster's next row is already streaming into the other with
 * cp.async, so the SM keeps loads in flight through the reduction, the
 * cluster barrier and the write phase, which a cluster per row (one row's
 * blocks, then exit) leaves without loads.
 *
 * Per row: wait for this row's copies; each block reduces its slice to a
 * partial statistic (Row::slice_stat) and publishes it in a shared slot;
 * one cluster barrier; every thread then merges the CL partials through
 * distributed shared memory in rank order, so that every block gets
 * bit-identical statistics, and writes its slice (Row::write).  The slot
 * alternates between two entries: a block writes row i+2's partial into
 * row i's entry only after row i+1's barrier, which every peer reaches
 * after it has read row i's partials, so one barrier per row suffices.  A
 * last barrier keeps shared memory alive while peers may still read it.
 *
 * x is read once and y written once.  Slices are a multiple of 4 floats:
 * with C % 4 == 0 every slice starts 16-byte aligned and moves as float4
 * (16-byte cp.async, 16-byte stores); other C move as scalars.
 *
 * The Row policy (softmax and layernorm each define one) provides:
 *     using Stat = ...;                     the partial statistic
 *     static Stat identity();               the empty statistic
 *     Stat merge(Stat a, Stat b) const;     associative, for the cluster
 *     template <int VEC> Stat slice_stat(const float *s, int n, float lead) const;
 *         the block's statistic of its n floats at s (shared memory), on
 *         every thread; a block reduction, so every thread must call it
 *     template <int VEC> void write(const float *s, int n, int col, float *y,
 *                                   Stat row, float lead) const;
 *         this thread's part of the output for the n floats at s, which
 *         sit at column col of the row; y is the slice's output
 * lead is the row's first element (layernorm shifts the row by it). */
#ifndef KBENCH_CLUSTER_ROWS_CUH
#define KBENCH_CLUSTER_ROWS_CUH

#include <cooperative_groups.h>
#include <math.h>
#include "kernels/cuda_util.h"
#include "kernels/cp_async.cuh"

#define KB_CLUSTER_ROWS_BLOCK 512  /* threads per block */
#define KB_CLUSTER_ROWS_SLICE 16384 /* floats per slice (64 KiB) the planner aims at */
#define KB_CLUSTER_ROWS_MIN_CLUSTER 2
#define KB_CLUSTER_ROWS_MAX_PORTABLE 8
#define KB_CLUSTER_ROWS_MAX_CLUSTER 16

/* VEC floats of shared memory at s (16-byte aligned when VEC == 4). */
template <int VEC>
__device__ __forceinline__ void kb_smem_pack(float (&v)[VEC], const float *s)
{
    if constexpr (VEC == 4) {
        const float4 t = *reinterpret_cast<const float4 *>(s);
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
        v[0] = *s;
    }
}

/* Start copying this thread's packs of the n floats at src into dst. */
template <int VEC>
__device__ __forceinline__ void kb_slice_copy(float *dst, const float *src, int n)
{
    for (int col = (int)threadIdx.x * VEC; col < n; col += KB_CLUSTER_ROWS_BLOCK * VEC) {
        if constexpr (VEC == 4)
            cp_async16(dst + col, src + col, 16);
        else
            cp_async4(dst + col, src + col, 4);
    }
}

/* The pipeline; the kernel is launched with gridDim.x = nclusters * CL,
 * nclusters <= R, a cluster of CL blocks along x, KB_CLUSTER_ROWS_BLOCK
 * threads and 2 * slice floats of dynamic shared memory. */
template <int VEC, class Row>
__device__ __forceinline__ void kb_cluster_rows(const Row &row, int R, int C, int slice,
                                                const float *__restrict__ x, float *__restrict__ y)
{
    using Stat = typename Row::Stat;
    extern __shared__ float4 kb_cluster_rows_smem[];
    __shared__ Stat partial[2];

    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int cl = (int)cluster.num_blocks();
    const int rank = (int)cluster.block_rank();
    const int nclusters = (int)gridDim.x / cl;
    const int begin = rank * slice;
    const int n = max(0, min(slice, C - begin)); /* the last slices may be short or empty */
    float *const buffers = reinterpret_cast<float *>(kb_cluster_rows_smem);

    int r = (int)blockIdx.x / cl; /* this cluster's first row: < R, as nclusters <= R */
    kb_slice_copy<VEC>(buffers, x + (size_t)r * C + begin, n);
    cp_async_commit();
    float lead = __ldg(x + (size_t)r * C);
    for (int i = 0; r < R; ++i, r += nclusters) {
        float *const cur = buffers + (i & 1) * slice;

        /* Row i+1 into the other buffer, whose last reader (row i-1's write
         * phase) ended at the __syncthreads closing the previous iteration.
         * The group is committed even when empty, so that waiting for all
         * groups but the newest always means this row's. */
        const int next = r + nclusters;
        float next_lead = 0.0f;
        if (next < R) {
            kb_slice_copy<VEC>(buffers + ((i + 1) & 1) * slice, x + (size_t)next * C + begin, n);
            next_lead = __ldg(x + (size_t)next * C);
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();

        const Stat part = row.template slice_stat<VEC>(cur, n, lead);
        if (threadIdx.x == 0)
            partial[i & 1] = part;
        cluster.sync();

        /* All CL loads first (independent remote reads), then the merges in
         * rank order. */
        Stat parts[KB_CLUSTER_ROWS_MAX_CLUSTER];
#pragma unroll
        for (int q = 0; q < KB_CLUSTER_ROWS_MAX_CLUSTER; ++q)
            if (q < cl)
                parts[q] = *cluster.map_shared_rank(&partial[i & 1], q);
        Stat total = Row::identity();
#pragma unroll
        for (int q = 0; q < KB_CLUSTER_ROWS_MAX_CLUSTER; ++q)
            if (q < cl)
                total = row.merge(total, parts[q]);

        row.template write<VEC>(cur, n, begin, y + (size_t)r * C + begin, total, lead);
        __syncthreads(); /* cur is refilled next iteration */
        lead = next_lead;
    }
    cluster.sync(); /* peers may still be reading this block's partials */
}

/* ------------------------------------------------------------------------ */
/* Host side: the plan for rows of C columns, made once in a variant's setup. */

struct KbClusterRowsPlan {
    int cluster;   /* CL: blocks per cluster */
    int slice;     /* floats per block */
    int nclusters; /* clusters launched: min(R, resident clusters) */
};

static inline cudaLaunchConfig_t kb_cluster_rows_config(const KbClusterRowsPlan *p, cudaStream_t stream,
                                                        cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)p->nclusters * (unsigned)p->cluster);
    cfg.blockDim = dim3(KB_CLUSTER_ROWS_BLOCK);
    cfg.dynamicSmemBytes = 2 * (size_t)p->slice * sizeof(float);
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)p->cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* Slice length for a cluster size: a multiple of 4 so float4 slices stay aligned. */
static inline int kb_cluster_rows_slice(int C, int cluster)
{
    return (KB_CEIL_DIV(C, cluster) + 3) / 4 * 4;
}

/* Clusters of this plan's shape that can be resident at once (0: none, or
 * the device refused the shared memory or the cluster size). */
template <class Kernel>
static int kb_cluster_rows_resident(Kernel kernel, KbClusterRowsPlan *p, size_t smem_optin)
{
    cudaFuncAttributes fa;
    const size_t dynamic = 2 * (size_t)p->slice * sizeof(float);
    if (cudaFuncGetAttributes(&fa, kernel) != cudaSuccess || fa.sharedSizeBytes + dynamic > smem_optin)
        return 0;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dynamic) != cudaSuccess)
        return 0;
    if (p->cluster > KB_CLUSTER_ROWS_MAX_PORTABLE &&
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        return 0;
    cudaLaunchAttribute attr;
    p->nclusters = 1;
    cudaLaunchConfig_t cfg = kb_cluster_rows_config(p, 0, &attr);
    int active = 0;
    if (cudaOccupancyMaxActiveClusters(&active, kernel, &cfg) != cudaSuccess)
        return 0;
    return active;
}

/* Fill *p for R rows of C columns: the smallest power-of-two cluster whose
 * slices are at most KB_CLUSTER_ROWS_SLICE floats (up to 16 blocks), or, if
 * the device cannot hold that cluster, smaller clusters with longer slices.
 * Returns NULL, or why no cluster of 2..16 blocks can run these rows. */
template <class Kernel>
static const char *kb_cluster_rows_plan(Kernel kernel, int R, int C, KbClusterRowsPlan *p)
{
    int dev = 0, smem_optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return "cannot query the device";
    int cluster = KB_CLUSTER_ROWS_MIN_CLUSTER;
    while (cluster < KB_CLUSTER_ROWS_MAX_CLUSTER && KB_CEIL_DIV(C, cluster) > KB_CLUSTER_ROWS_SLICE)
        cluster *= 2;
    for (; cluster >= KB_CLUSTER_ROWS_MIN_CLUSTER; cluster /= 2) {
        p->cluster = cluster;
        p->slice = kb_cluster_rows_slice(C, cluster);
        const int resident = kb_cluster_rows_resident(kernel, p, (size_t)smem_optin);
        if (resident > 0) {
            p->nclusters = resident < R ? resident : R;
            return NULL;
        }
        cudaGetLastError(); /* clear a refused attribute */
    }
    return "no cluster of 2..16 blocks holds two slices of this row in shared memory on this device";
}

#endif
