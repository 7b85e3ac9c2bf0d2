/* Long rows held in the registers of a thread-block cluster (sm_90), shared
 * by softmax/long_row and layernorm/long_row.
 *
 * A row of C floats is cut into CL = ceil(C / KB_CLUSTER_ROW_CHUNK) chunks
 * of 16384 floats, one 512-thread block per chunk and one cluster of CL
 * blocks per row (up to 8 portable blocks, 16 where the device allows a
 * non-portable size: C up to 262144).  Each thread holds 32 floats of its
 * chunk in registers (float4 loads), as softmax/vectorized holds a whole
 * row of up to 32768 in one block.  The block reduces its chunk to a partial
 * statistic, publishes it in its shared memory, and after one cluster
 * barrier every block merges the CL partials in rank order through
 * distributed shared memory, so that all get bit-identical statistics; it
 * then writes its output from its registers: x read once, y written once.
 * A second barrier, arrived at after the merge and waited on at exit, keeps
 * each block's shared memory alive while its peers may still read it. */
#ifndef KBENCH_CLUSTER_ROW_CUH
#define KBENCH_CLUSTER_ROW_CUH

#include <stdint.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"

#define KB_CLUSTER_ROW_BLOCK 512
#define KB_CLUSTER_ROW_ITEMS 32 /* floats per thread */
#define KB_CLUSTER_ROW_CHUNK (KB_CLUSTER_ROW_BLOCK * KB_CLUSTER_ROW_ITEMS)
#define KB_CLUSTER_ROW_MAX 16
#define KB_CLUSTER_ROW_MAX_PORTABLE 8

/* A block's chunk as a register-resident row of reduce.cuh (thread t holds
 * packs at columns (k * 512 + t) * VEC), so its row helpers apply. */
template <int VEC>
using KbClusterRowCfg = KbRowCfg<VEC, KB_CLUSTER_ROW_ITEMS / VEC, KB_CLUSTER_ROW_BLOCK>;

template <int VEC>
__device__ __forceinline__ int kb_cluster_row_col(int k)
{
    return kb_pack_col<KbClusterRowCfg<VEC>>(k, (int)threadIdx.x);
}

/* This block's place: the row, and its chunk's first column and length. */
struct KbClusterChunk {
    int row, begin, n;
};

__device__ __forceinline__ KbClusterChunk kb_cluster_chunk(int C)
{
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int rank = (int)cluster.block_rank(), begin = rank * KB_CLUSTER_ROW_CHUNK;
    return {(int)(blockIdx.x / cluster.num_blocks()), begin, min(KB_CLUSTER_ROW_CHUNK, C - begin)};
}

/* Merges the cluster's partials (`mine`: this block's, on every thread) in
 * rank order and calls out(row_stat); every thread of every block of the
 * cluster must call it. */
template <class Stat, class Merge, class Out>
__device__ __forceinline__ void kb_cluster_row_finish(Stat mine, Merge merge, Stat identity, Out out)
{
    __shared__ Stat slot;
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    if (threadIdx.x == 0)
        slot = mine;
    cluster.sync();
    Stat row = identity;
    for (int r = 0; r < (int)cluster.num_blocks(); ++r)
        row = merge(row, *cluster.map_shared_rank(&slot, r));
    auto peers_read = cluster.barrier_arrive();
    out(row);
    cluster.barrier_wait(std::move(peers_read));
}

/* ---- host side --------------------------------------------------------------- */

static inline int kb_cluster_row_size(int64_t C)
{
    return (int)((C + KB_CLUSTER_ROW_CHUNK - 1) / KB_CLUSTER_ROW_CHUNK);
}

static inline cudaLaunchConfig_t kb_cluster_row_config(int64_t R, int64_t C, cudaStream_t stream,
                                                       cudaLaunchAttribute *attr)
{
    const int cl = kb_cluster_row_size(C);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(R * cl));
    cfg.blockDim = dim3(KB_CLUSTER_ROW_BLOCK);
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)cl;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* Why rows of C floats are not for a cluster, or NULL. */
static inline const char *kb_cluster_row_unsupported(int64_t C)
{
    if (C < KB_LONG_ROW_MIN_C)
        return "long_row is for C >= 32768 (shorter rows fit one block's registers)";
    if (kb_cluster_row_size(C) > KB_CLUSTER_ROW_MAX)
        return "long_row holds rows of up to 262144 (16 blocks per cluster)";
    return NULL;
}

/* In setup: allows a non-portable cluster where C needs one and checks that
 * a cluster fits; NULL or a reason. */
static inline const char *kb_cluster_row_setup(const void *kernel, int64_t C)
{
    const int cl = kb_cluster_row_size(C);
    const char *why = kb_cluster_row_unsupported(C);
    if (why)
        return why;
    if (cl > KB_CLUSTER_ROW_MAX_PORTABLE &&
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
        cudaGetLastError();
        return "this device refuses clusters of more than 8 blocks";
    }
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = kb_cluster_row_config(1, C, 0, &attr);
    int active = 0;
    if (cudaOccupancyMaxActiveClusters(&active, kernel, &cfg) != cudaSuccess || active < 1) {
        cudaGetLastError();
        return "no cluster of this size fits on this device";
    }
    return NULL;
}

#endif
