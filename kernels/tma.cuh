/* The Tensor Memory Accelerator's tensor copies (sm_90) and the
 * thread-block cluster pieces that go with them, for the TMA matmul rungs
 * and flash_wgmma.  One thread's instruction moves a box of a tensor map
 * (made on the host: tma_host.h; a __grid_constant__ kernel parameter)
 * between global and shared memory, in the map's swizzle.  A load counts
 * its bytes on an mbarrier of the receiving block (cp_async.cuh's
 * kb_mbar_*: the issuing thread announces them with kb_mbar_arrive_expect,
 * the readers wait for the phase); rows and columns outside the tensor
 * arrive as zeros.  A store is one of the issuing thread's bulk groups,
 * and writes nothing outside the tensor.  Shared addresses are 32-bit
 * (kb_smem_u32), as the rungs compute them. */
#ifndef KBENCH_TMA_CUH
#define KBENCH_TMA_CUH

#include <stdint.h>
#include <cuda.h>
#include "kernels/cp_async.cuh"

/* The box of `map` at element coordinates (x inner, y outer) into shared
 * dst, its bytes counted on bar when they land. */
__device__ __forceinline__ void kb_tma_load_2d(uint32_t dst, const CUtensorMap *map, int x, int y,
                                               unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst), "l"((uint64_t)map), "r"(x), "r"(y), "r"(kb_smem_u32(bar))
                 : "memory");
}

/* The box of `map` at (x, y) into shared dst of every block of the cluster
 * in cta_mask (bit r: rank r), its bytes counted on the mbarrier at bar's
 * offset in each of them. */
__device__ __forceinline__ void kb_tma_load_2d_multicast(uint32_t dst, const CUtensorMap *map, int x, int y,
                                                         unsigned long long *bar, uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 ::"r"(dst), "l"((uint64_t)map), "r"(x), "r"(y), "r"(kb_smem_u32(bar)),
                 "h"(cta_mask)
                 : "memory");
}

/* kb_tma_load_2d and kb_tma_load_2d_multicast, their lines in L2 under the
 * eviction policy `policy` (kb_l2_evict_first_policy,
 * kb_l2_evict_last_policy) where `hint`, else under L2's default. */
__device__ __forceinline__ void kb_tma_load_2d_hinted(uint32_t dst, const CUtensorMap *map, int x, int y,
                                                      unsigned long long *bar, bool hint, uint64_t policy)
{
    if (hint)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                     " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst), "l"((uint64_t)map), "r"(x), "r"(y),
                     "r"(kb_smem_u32(bar)), "l"(policy)
                     : "memory");
    else
        kb_tma_load_2d(dst, map, x, y, bar);
}
__device__ __forceinline__ void kb_tma_load_2d_multicast_hinted(uint32_t dst, const CUtensorMap *map, int x, int y,
                                                                unsigned long long *bar, uint16_t cta_mask,
                                                                bool hint, uint64_t policy)
{
    if (hint)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                     ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n"
                     ::"r"(dst), "l"((uint64_t)map), "r"(x), "r"(y), "r"(kb_smem_u32(bar)),
                     "h"(cta_mask), "l"(policy)
                     : "memory");
    else
        kb_tma_load_2d_multicast(dst, map, x, y, bar, cta_mask);
}

/* The box of `map` at (x, y, z) into shared dst, counted on bar. */
__device__ __forceinline__ void kb_tma_load_3d(uint32_t dst, const CUtensorMap *map, int x, int y, int z,
                                               unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(x), "r"(y), "r"(z), "r"(kb_smem_u32(bar))
                 : "memory");
}

/* Shared src into the box of `map` at (x inner, y outer), in this thread's
 * open bulk group; the parts of the box outside the tensor are not
 * written.  The shared writes it reads must be fenced to the async proxy
 * first (wgmma.cuh's kb_fence_proxy_async). */
__device__ __forceinline__ void kb_tma_store_2d(const CUtensorMap *map, int x, int y, uint32_t src)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                     (uint64_t)map),
                 "r"(x), "r"(y), "r"(src)
                 : "memory");
}

/* Close this thread's bulk group of stores. */
__device__ __forceinline__ void kb_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

/* This thread's bulk stores have read their shared memory (their writes
 * to global memory may still be on their way). */
__device__ __forceinline__ void kb_bulk_wait_read()
{
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

/* Fetch a tensor map into the TMA unit's cache ahead of its first use. */
__device__ __forceinline__ void kb_tma_prefetch_map(const CUtensorMap *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)map) : "memory");
}

/* ---- thread-block clusters ------------------------------------------------ */

/* This block's rank in its cluster. */
__device__ __forceinline__ int kb_cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return (int)r;
}

/* Every thread of the cluster's blocks arrives and waits (release/acquire:
 * what each wrote before is visible to all after). */
__device__ __forceinline__ void kb_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* The same with a relaxed arrival, where the one ordering the sync has to
 * carry is the release of something else: the mbarriers' initialisation
 * before the peer's first multicast or arrival is fence.mbarrier_init's
 * (a release arrival adds a GPU-wide MEMBAR). */
__device__ __forceinline__ void kb_cluster_sync_relaxed()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
}

/* An arrival on the mbarrier at bar's offset in block `rank` of the
 * cluster (CUTLASS's ClusterBarrier::arrive: the default .release.cta, as
 * the MMAs that read the stage have completed and the arrival publishes no
 * data; .release.cluster would add a GPU-wide MEMBAR to every arrival). */
__device__ __forceinline__ void kb_mbar_arrive_cluster(unsigned long long *bar, int rank)
{
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(kb_smem_u32(bar)),
                 "r"(rank)
                 : "memory");
}

#endif
