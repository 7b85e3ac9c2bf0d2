/* Helpers shared by variant files: error strings for launchers and a few
 * device-side utilities.  Every launcher ends with KB_LAUNCHED(), which turns
 * the launch's error (bad configuration, missing kernel image) into the
 * status string the harness reports. */
#ifndef KBENCH_CUDA_UTIL_H
#define KBENCH_CUDA_UTIL_H

#include <stdio.h>
#include <cuda_runtime.h>

#define KB_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

static inline const char *kb_cuda_status(cudaError_t e)
{
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

/* Return the failure of a step that gives NULL or one line (a launcher, a
 * setup, kb_cuda_status of a call), so that host code chains its steps. */
#define KB_TRY(call)                                                                               \
    do {                                                                                           \
        const char *kb_try_err_ = (call);                                                          \
        if (kb_try_err_)                                                                           \
            return kb_try_err_;                                                                    \
    } while (0)
#define KB_CUDA_TRY(call) KB_TRY(kb_cuda_status(call))

/* Status of the launch just made. */
#define KB_LAUNCHED() return kb_cuda_status(cudaGetLastError())

/* A device workspace of `bytes` for a variant's setup, or why not ("<what>
 * needs 4.0 GiB: out of memory"), checked against the free memory first so
 * that a shape too big becomes a SKIP instead of a sticky CUDA error. */
static inline const char *kb_alloc_workspace(void **p, size_t bytes, const char *what)
{
    static char why[128];
    const double gib = (double)bytes / (1024.0 * 1024.0 * 1024.0);
    size_t free_b = 0, total_b = 0;
    *p = NULL;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        return "cudaMemGetInfo failed";
    }
    /* Leave a little for the runtime and the libraries. */
    if (bytes + ((size_t)256 << 20) > free_b) {
        snprintf(why, sizeof why, "%s needs %.1f GiB: out of memory", what, gib);
        return why;
    }
    if (cudaMalloc(p, bytes) != cudaSuccess) {
        cudaGetLastError(); /* clear it: the next launch must not see it */
        *p = NULL;
        snprintf(why, sizeof why, "%s needs %.1f GiB: cudaMalloc failed", what, gib);
        return why;
    }
    return NULL;
}

#ifdef __CUDACC__
/* 2^x in one MUFU instruction (ex2.approx: 2 ulp, denormals flushed):
 * exp(x) as 2^(x log2 e) where the log2 e is folded into an FMA. */
__device__ __forceinline__ float kb_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* A GPU-scope count between blocks (after __syncthreads, one thread's
 * release publishes the block's writes; one thread's acquire, then
 * __syncthreads, makes the others' writes visible to its block). */
__device__ __forceinline__ unsigned kb_load_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void kb_add_release(unsigned *p, unsigned v)
{
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

/* The GPU's nanosecond clock, the same on every SM (clock64 counts each
 * SM's own cycles). */
__device__ __forceinline__ unsigned long long kb_globaltimer_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

#endif
