/* cp.async (sm_80+): copies from global to shared memory that need no
 * registers, so a block can have a whole tile in flight while it computes on
 * another.  Shared by the SGEMM pipeline (gemm_pipeline.cuh) and the fused
 * attention kernels.  A thread's copies are visible to itself after
 * kb_cp_async_wait; to the block after that and a __syncthreads. */
#ifndef KBENCH_CP_ASYNC_CUH
#define KBENCH_CP_ASYNC_CUH

/* Copy 16 bytes global -> shared; src_bytes (0 or 16) are read, the rest of
 * the destination is zero-filled.  .cg: cached in L2 only. */
__device__ __forceinline__ void kb_cp_async16(void *dst, const void *src, int src_bytes)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(src_bytes)
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

#endif
