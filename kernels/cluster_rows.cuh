/* Long rows through thread-block clusters (sm_90): a persistent, pipelined
 * row loop for rows too long for one SM's registers, used by
 * layernorm/long_row (a policy object supplies the row statistic and the
 * output, so another row op can reuse it; softmax measured slower on it
 * than its cluster-per-row long_row, see variants/softmax/long_row.cu).
 *
 * A cluster of CL blocks (2..16) owns one row at a time; block `rank` owns
 * the slice of `slice` floats at column rank * slice, held in its shared
 * memory.  The grid is persistent: as many clusters as can be resident (R
 * if fewer), cluster k taking rows k, k + nclusters, ...  Each block has
 * `stages` slice buffers used in turn: one holds the row being worked on,
 * one the previous row while its output drains to memory, and the others
 * (stages - 2) the next rows, already streaming in.
 *
 * Per row: wait for this row's slice; each block reduces its slice to a
 * partial statistic (Row::slice_stat) and publishes it in a shared slot;
 * one cluster barrier; every thread then merges the CL partials through
 * distributed shared memory in rank order, so that every block gets
 * bit-identical statistics; each thread overwrites its part of the slice
 * with the output (Row::finish), and the slice is stored.  The slot
 * alternates between two entries: a block writes row i+2's partial into
 * row i's entry only after row i+1's barrier, which every peer reaches
 * after it has read row i's partials, so one barrier per row suffices.  A
 * last barrier keeps shared memory alive while peers may still read it.
 *
 * With C % 4 == 0 every slice starts 16-byte aligned and moves as one bulk
 * copy each way (the Tensor Memory Accelerator: cp.async.bulk): a load
 * completing on the buffer's mbarrier, and a store that drains while the
 * block goes on with the next row, so that the reduction and the cluster
 * barrier overlap the previous row's writes as well as the next rows'
 * reads.  Other C (rows not 16-byte aligned) take per-thread 4-byte
 * cp.async loads and plain stores.  x is read once and y written once.
 *
 * What was measured on H100 (% of the copy ceiling at 1024x32768, cold
 * L2; variants/layernorm/long_row.cu has the other shapes): with per-thread
 * 16-byte cp.async loads and the threads storing after the barrier,
 * layernorm moved ~62% whether 1 or 2 rows were in flight; bulk stores made
 * it 72%, and the same without the prefetch (2 stages) 59%.  Twice the
 * cluster size with 32 KiB slices (up to 3 rows in flight): 50%.  Against
 * this loop in one build (layernorm / softmax, points): thread stores with
 * 2 rows in flight +3 / -7; each slice as 4 bulk copies from 4 warps +1 /
 * -3; 1024 threads -4 / -11; 2 blocks of 256 threads per SM with 32 KiB
 * slices -10 / -18; row k's cluster barrier overlapped with row k+1's slice
 * statistic -8 / -32 (row k then also waits for row k+1's load).  Each row
 * costs roughly 2.5 us beyond its bytes at the memory's rate (fitted from
 * the 64 and 32 KiB slices) that none of these hid; presumably the block
 * reduction, the cluster barrier and the merge, with one block per SM and
 * nothing else for it to issue meanwhile.
 *
 * The Row policy provides:
 *     using Stat = ...;                     the partial statistic
 *     static Stat identity();               the empty statistic
 *     Stat merge(Stat a, Stat b) const;     associative, for the cluster
 *     template <int VEC> Stat slice_stat(const float *s, int n, float lead) const;
 *         the block's statistic of its n floats at s (shared memory), on
 *         every thread; a block reduction, so every thread must call it
 *     template <int VEC> void finish(float *s, int n, int col, Stat row, float lead) const;
 *         replace this thread's packs of the n floats at s (which sit at
 *         column col of the row) by the output: the packs at s + t * VEC +
 *         k * KB_CLUSTER_ROWS_BLOCK * VEC for thread t
 * lead is the row's first element (layernorm shifts the row by it). */
#ifndef KBENCH_CLUSTER_ROWS_CUH
#define KBENCH_CLUSTER_ROWS_CUH

#include <cooperative_groups.h>
#include <math.h>
#include <stdint.h>
#include "kernels/cuda_util.h"
#include "kernels/cp_async.cuh"

#define KB_CLUSTER_ROWS_BLOCK 512  /* threads per block */
#define KB_CLUSTER_ROWS_SLICE 16384 /* floats per slice (64 KiB) the planner aims at */
#define KB_CLUSTER_ROWS_MIN_CLUSTER 2
#define KB_CLUSTER_ROWS_MAX_PORTABLE 8
#define KB_CLUSTER_ROWS_MAX_CLUSTER 16
#define KB_CLUSTER_ROWS_MAX_STAGES 5 /* up to 3 rows in flight */

/* ---- bulk copies and mbarriers (sm_90) ------------------------------------ */

__device__ __forceinline__ unsigned kb_smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void kb_mbar_init(uint64_t *bar, unsigned arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(kb_smem_addr(bar)), "r"(arrivals) : "memory");
}

/* Arrive, and have the current phase also wait for `bytes` of bulk copies. */
__device__ __forceinline__ void kb_mbar_arrive_expect(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(kb_smem_addr(bar)), "r"(bytes)
                 : "memory");
}

/* Wait for the phase of the given parity to complete. */
__device__ __forceinline__ void kb_mbar_wait(uint64_t *bar, unsigned parity)
{
    unsigned done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(kb_smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* bytes (a multiple of 16, both addresses 16-byte aligned) global -> this
 * block's shared memory, completing on bar. */
__device__ __forceinline__ void kb_bulk_load(void *dst, const float *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     kb_smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(kb_smem_addr(bar))
                 : "memory");
}

/* bytes shared -> global as one bulk group of this thread.  The threads
 * that wrote src must have run kb_fence_proxy_async and a barrier with
 * this thread first. */
__device__ __forceinline__ void kb_bulk_store(float *dst, const float *src, unsigned bytes)
{
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(kb_smem_addr(src)),
                 "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* Until at most N of this thread's bulk stores still read shared memory. */
template <int N>
__device__ __forceinline__ void kb_bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

/* Until all of this thread's bulk stores are complete. */
__device__ __forceinline__ void kb_bulk_wait_all()
{
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/* This thread's shared-memory writes, ordered before later bulk copies. */
__device__ __forceinline__ void kb_fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* ---- the pipeline ---------------------------------------------------------- */

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

template <int VEC>
__device__ __forceinline__ void kb_smem_store_pack(float *s, const float (&v)[VEC])
{
    if constexpr (VEC == 4)
        *reinterpret_cast<float4 *>(s) = make_float4(v[0], v[1], v[2], v[3]);
    else
        *s = v[0];
}

/* Wait until at most `pending` (0..3) of this thread's cp.async groups are
 * in flight; wait_group takes an immediate. */
__device__ __forceinline__ void kb_cp_async_wait_pending(int pending)
{
    switch (pending) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    default: cp_async_wait<3>(); break;
    }
}

/* The kernel is launched with gridDim.x = nclusters * CL, nclusters <= R, a
 * cluster of CL blocks along x, KB_CLUSTER_ROWS_BLOCK threads and stages *
 * slice floats of dynamic shared memory, 2 <= stages <=
 * KB_CLUSTER_ROWS_MAX_STAGES. */
template <int VEC, class Row>
__device__ __forceinline__ void kb_cluster_rows(const Row &row, int R, int C, int slice, int stages,
                                                const float *__restrict__ x, float *__restrict__ y)
{
    using Stat = typename Row::Stat;
    extern __shared__ float4 kb_cluster_rows_smem[];
    __shared__ Stat partial[2];
    __shared__ float4 leads[KB_CLUSTER_ROWS_MAX_STAGES]; /* .x: the first element of buffer b's row */
    __shared__ uint64_t loaded[KB_CLUSTER_ROWS_MAX_STAGES]; /* bulk loads into buffer b (VEC == 4) */

    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int cl = (int)cluster.num_blocks();
    const int rank = (int)cluster.block_rank();
    const int nclusters = (int)gridDim.x / cl;
    const int begin = rank * slice;
    const int n = max(0, min(slice, C - begin)); /* the last slices may be short or empty */
    const int ahead = stages - 2;                /* rows in flight beyond the current one */
    float *const buffers = reinterpret_cast<float *>(kb_cluster_rows_smem);

    if constexpr (VEC == 4) {
        if (threadIdx.x == 0) {
            for (int b = 0; b < stages; ++b)
                kb_mbar_init(&loaded[b], 1);
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        }
        __syncthreads();
    }

    /* Start loading row r (if there is one) into buffer b, whose previous
     * row was the one before last: its store, the older of this thread's
     * two newest, must have read the buffer out first.  The cp.async path
     * commits a group per call, even an empty one, so that the row due
     * next is always the oldest group but `ahead`. */
    auto start = [&](int r, int b) {
        const float *src = x + (size_t)r * C;
        if constexpr (VEC == 4) {
            if (threadIdx.x == 0 && r < R) {
                kb_bulk_wait_read<1>();
                kb_mbar_arrive_expect(&loaded[b], (unsigned)n * 4u + 16u);
                if (n > 0)
                    kb_bulk_load(buffers + (size_t)b * slice, src + begin, (unsigned)n * 4u, &loaded[b]);
                kb_bulk_load(&leads[b], src, 16u, &loaded[b]);
            }
        } else {
            if (r < R) {
                for (int col = (int)threadIdx.x; col < n; col += KB_CLUSTER_ROWS_BLOCK)
                    cp_async4(buffers + (size_t)b * slice + col, src + begin + col, 4);
                if (threadIdx.x == 0)
                    cp_async4(&leads[b].x, src, 4);
            }
            cp_async_commit();
        }
    };

    int r = (int)blockIdx.x / cl; /* this cluster's first row: < R, as nclusters <= R */
    for (int s = 0; s < ahead; ++s)
        start(r + s * nclusters, s);
    unsigned parity = 0; /* of buffer b's current load: flips each round of the buffers */
    for (int i = 0, b = 0; r < R; ++i, r += nclusters) {
        start(r + ahead * nclusters, (b + ahead) % stages);
        if constexpr (VEC == 4) {
            kb_mbar_wait(&loaded[b], parity);
        } else {
            kb_cp_async_wait_pending(ahead);
            __syncthreads();
        }
        float *const cur = buffers + (size_t)b * slice;
        const float lead = leads[b].x;

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

        row.template finish<VEC>(cur, n, begin, total, lead);
        float *const out = y + (size_t)r * C + begin;
        if constexpr (VEC == 4) {
            kb_fence_proxy_async();
            __syncthreads();
            if (threadIdx.x == 0 && n > 0)
                kb_bulk_store(out, cur, (unsigned)n * 4u);
        } else {
            for (int col = (int)threadIdx.x; col < n; col += KB_CLUSTER_ROWS_BLOCK)
                out[col] = cur[col]; /* written by this thread in finish */
            __syncthreads();         /* buffer b is refilled two rows from now */
        }
        if (++b == stages) {
            b = 0;
            parity ^= 1u;
        }
    }
    if constexpr (VEC == 4) {
        if (threadIdx.x == 0)
            kb_bulk_wait_all();
    }
    cluster.sync(); /* peers may still be reading this block's partials */
}

/* ------------------------------------------------------------------------ */
/* Host side: the plan for rows of C columns, made once in a variant's setup. */

struct KbClusterRowsPlan {
    int cluster;   /* CL: blocks per cluster */
    int slice;     /* floats per block */
    int stages;    /* slice buffers per block: rows in flight + the one being worked on */
    int nclusters; /* clusters launched: min(R, resident clusters) */
};


static inline cudaLaunchConfig_t kb_cluster_rows_config(const KbClusterRowsPlan *p, cudaStream_t stream,
                                                        cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)p->nclusters * (unsigned)p->cluster);
    cfg.blockDim = dim3(KB_CLUSTER_ROWS_BLOCK);
    cfg.dynamicSmemBytes = (size_t)p->stages * (size_t)p->slice * sizeof(float);
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)p->cluster;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* Clusters of this plan's shape that can be resident at once (0: none, or
 * the device refused the shared memory or the cluster size). */
template <class Kernel>
static int kb_cluster_rows_resident(Kernel kernel, KbClusterRowsPlan *p)
{
    const size_t dynamic = (size_t)p->stages * (size_t)p->slice * sizeof(float);
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
 * slices are at most KB_CLUSTER_ROWS_SLICE floats (up to 16 blocks), with as
 * many slice buffers as a block's shared memory holds (up to
 * KB_CLUSTER_ROWS_MAX_STAGES); if the device cannot hold two buffers of that
 * cluster's slices, smaller clusters with longer slices.  Returns NULL, or
 * why no cluster of 2..16 blocks can run these rows. */
template <class Kernel>
static const char *kb_cluster_rows_plan(Kernel kernel, int R, int C, KbClusterRowsPlan *p)
{
    int dev = 0, smem_optin = 0;
    cudaFuncAttributes fa;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, kernel) != cudaSuccess)
        return "cannot query the device";
    const size_t smem_free = (size_t)smem_optin - fa.sharedSizeBytes;
    int cluster = KB_CLUSTER_ROWS_MIN_CLUSTER;
    while (cluster < KB_CLUSTER_ROWS_MAX_CLUSTER && KB_CEIL_DIV(C, cluster) > KB_CLUSTER_ROWS_SLICE)
        cluster *= 2;
    for (; cluster >= KB_CLUSTER_ROWS_MIN_CLUSTER; cluster /= 2) {
        p->cluster = cluster;
        p->slice = (KB_CEIL_DIV(C, cluster) + 3) / 4 * 4; /* float4 slices stay aligned */
        const size_t stages = smem_free / ((size_t)p->slice * sizeof(float));
        if (stages < 2)
            continue;
        p->stages = stages < KB_CLUSTER_ROWS_MAX_STAGES ? (int)stages : KB_CLUSTER_ROWS_MAX_STAGES;
        const int resident = kb_cluster_rows_resident(kernel, p);
        if (resident > 0) {
            p->nclusters = resident < R ? resident : R;
            return NULL;
        }
        cudaGetLastError(); /* clear a refused attribute */
    }
    return "no cluster of 2..16 blocks holds two slices of this row in shared memory on this device";
}

#endif
