/* A partial statistic published across blocks as two 64-bit words, each a
 * float tagged with a launch's epoch, stored and loaded relaxed: a reader
 * knows a pair is this launch's by its tags, so there is no fence and
 * nothing to reset between launches (persistent_row.cuh). */
#ifndef KBENCH_TAGGED_PAIR_CUH
#define KBENCH_TAGGED_PAIR_CUH

#include <cuda_runtime.h>

__device__ __forceinline__ unsigned long long kb_tag(float v, unsigned epoch)
{
    return (unsigned long long)epoch << 32 | __float_as_uint(v);
}

__device__ __forceinline__ void kb_publish_pair(unsigned long long *p, float a, float b, unsigned epoch)
{
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};\n" ::"l"(p), "l"(kb_tag(a, epoch)),
                 "l"(kb_tag(b, epoch))
                 : "memory");
}

__device__ __forceinline__ ulonglong2 kb_load_pair(const unsigned long long *p)
{
    ulonglong2 w;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];\n" : "=l"(w.x), "=l"(w.y) : "l"(p) : "memory");
    return w;
}

__device__ __forceinline__ bool kb_pair_is(ulonglong2 w, unsigned epoch)
{
    return (unsigned)(w.x >> 32) == epoch && (unsigned)(w.y >> 32) == epoch;
}

#endif
