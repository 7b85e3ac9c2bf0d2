/* cp.async (sm_80+): copies from global to shared memory that need no
 * registers, so a block can have a whole tile in flight while it computes on
 * another.  Shared by the SGEMM pipeline (gemm_pipeline.cuh), the fused
 * attention kernels and the long-row pipeline (persistent_row.cuh), which
 * also uses the bulk copies at the end; their mbarriers also count the
 * tensor copies of tma.cuh.  A thread's copies are visible to itself after
 * kb_cp_async_wait; to the block after that and a __syncthreads. */
#ifndef KBENCH_CP_ASYNC_CUH
#define KBENCH_CP_ASYNC_CUH

#include <stdint.h>

/* A shared-memory pointer as the 32-bit address of PTX's shared window,
 * as kb_mbar_arrive and tma.cuh's wrappers take theirs: through this
 * function, not cast inline on the typed pointer, which gives NVVM other
 * IR (wgmma_tma_store's producer loop came out unrolled differently). */
__device__ __forceinline__ uint32_t kb_smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* Copy 16 bytes global -> shared; src_bytes (0 or 16) are read, the rest of
 * the destination is zero-filled.  .cg: cached in L2 only. */
__device__ __forceinline__ void kb_cp_async16(void *dst, const void *src, int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

/* An L2 policy that marks the lines it fills as the first to evict: for
 * data read once (a KV cache, streamed weights), so that it replaces its own
 * lines instead of what L2 holds, dirty lines included, whose write-back
 * the stream would otherwise pay for. */
__device__ __forceinline__ uint64_t kb_l2_evict_first_policy()
{
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}

/* The opposite: lines to keep, for data that many blocks read again (a
 * GEMM's operand shared by a whole round of tiles). */
__device__ __forceinline__ uint64_t kb_l2_evict_last_policy()
{
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
    return policy;
}

/* kb_cp_async16 with an L2 cache policy (kb_l2_evict_first_policy). */
__device__ __forceinline__ void kb_cp_async16_policy(void *dst, const void *src, int src_bytes, uint64_t policy)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes), "l"(policy)
                 : "memory");
}

/* Same for one float (src_bytes 0 or 4); copies under 16 bytes must use .ca. */
__device__ __forceinline__ void kb_cp_async4(void *dst, const void *src, int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

/* Close the group of this thread's copies issued since the last commit. */
__device__ __forceinline__ void kb_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Wait until at most `Pending` committed groups are still in flight. */
template <int Pending>
__device__ __forceinline__ void kb_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

/* ---- bulk copies (sm_90): the TMA engine moves a whole contiguous block
 * global -> shared for one thread's instruction, and signals an mbarrier
 * with the bytes that landed.  Addresses and sizes: multiples of 16. */

/* An mbarrier that completes a phase when `count` threads have arrived (and
 * the bytes they announced have landed); before any use, the initialising
 * thread fences and the block synchronises. */
__device__ __forceinline__ void kb_mbar_init(unsigned long long *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)),
                 "r"(count)
                 : "memory");
}

__device__ __forceinline__ void kb_mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* This thread's arrival, announcing `bytes` of bulk copies to come. */
__device__ __forceinline__ void kb_mbar_arrive_expect(unsigned long long *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                     (unsigned)__cvta_generic_to_shared(bar)),
                 "r"(bytes)
                 : "memory");
}

/* This thread's plain arrival (release: its earlier reads and its
 * warpgroup's completed MMAs come before the phase completes). */
__device__ __forceinline__ void kb_mbar_arrive(unsigned long long *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(kb_smem_u32(bar)) : "memory");
}

/* Wait until the phase of parity `parity` has completed. */
__device__ __forceinline__ void kb_mbar_wait(unsigned long long *bar, unsigned parity)
{
    asm volatile("{\n.reg .pred done;\nKB_MBAR_WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra KB_MBAR_WAIT_%=;\n}\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)),
                 "r"(parity)
                 : "memory");
}

/* `bytes` from global src to shared dst, counted on bar when they land. */
__device__ __forceinline__ void kb_bulk_copy(void *dst, const void *src, unsigned bytes, unsigned long long *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     (unsigned)__cvta_generic_to_shared(dst)),
                 "l"(src), "r"(bytes), "r"((unsigned)__cvta_generic_to_shared(bar))
                 : "memory");
}

#endif
