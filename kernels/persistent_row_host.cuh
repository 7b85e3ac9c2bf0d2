/* The host side of persistent_row (persistent_row.cuh): the chunk geometry
 * (KB_PERSIST_*, which the device side shares), the per-shape context
 * KbPersistRow, and the steps that need no kernel instantiation -- which C
 * it takes, the grid and partials checked against the device, the
 * cooperative launch and the teardown. */
#ifndef KBENCH_PERSISTENT_ROW_HOST_CUH
#define KBENCH_PERSISTENT_ROW_HOST_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "kernels/cuda_util.h"

#define KB_PERSIST_CHUNK 8192
#define KB_PERSIST_BLOCK 512 /* threads that own columns */
#define KB_PERSIST_THREADS (KB_PERSIST_BLOCK + 32) /* and one warp that merges and publishes */
#define KB_PERSIST_ITEMS (KB_PERSIST_CHUNK / KB_PERSIST_BLOCK) /* floats per thread per chunk */
#define KB_PERSIST_STAGE (KB_PERSIST_CHUNK + 32) /* floats per buffer; then a float per warp */
#define KB_PERSIST_LAG 3    /* rounds between a chunk's reduction and its store */
#define KB_PERSIST_MAX_S 32 /* one warp merges a row's partials */
#define KB_PERSIST_DEALT_TAIL 4 /* rounds dealt at the end of a launch whose classes are small */

typedef struct {
    unsigned long long *partials; /* R * S pairs of tagged words */
    unsigned long long *tickets;  /* two sets of S row counters: a launch's, and the next one's */
    int R, S;
    int width; /* S rounded up to a power of two: the lanes that merge a row's partials */
    int ahead; /* rounds whose chunks are asked for before the first round */
    int dealt; /* the first round whose rows a block asks its class's counter for */
    unsigned grid, epoch;
    const void *kernel; /* the instantiation for this C */
    size_t smem;
} KbPersistRow;

/* A variant's teardown. */
static inline void kb_persist_row_teardown(void *ctx)
{
    KbPersistRow *p = (KbPersistRow *)ctx;
    cudaFree(p->partials);
    free(p);
}

/* Why rows of C floats are not for persistent_row, or NULL. */
static inline const char *kb_persist_row_unsupported(int64_t C)
{
    if (C < KB_PERSIST_CHUNK) /* at 2048x16384 layernorm: 91.5% of the ceiling, welford 89.8 */
        return "persistent_row is for C >= 8192 (a block streams chunks of 8192 floats)";
    if (C > (int64_t)KB_PERSIST_MAX_S * KB_PERSIST_CHUNK)
        return "persistent_row is for C <= 262144 (one warp merges a row's partials)";
    return NULL;
}

/* Grid and partials for R rows of C floats, checked against what the
 * device holds at once; NULL or a reason (and nothing left allocated). */
static inline const char *kb_persist_row_alloc(int64_t R, int64_t C, KbPersistRow *p)
{
    int dev = 0, sms = 0, per_sm = 0, coop = 0, optin = 0;
    const void *kernel = p->kernel;
    const size_t smem = p->smem;
    p->R = (int)R;
    p->S = (int)KB_CEIL_DIV(C, KB_PERSIST_CHUNK);
    for (p->width = 1; p->width < p->S; p->width *= 2) {
    }
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        cudaGetLastError();
        return "cannot query the device";
    }
    if ((size_t)optin < smem)
        return "persistent_row's chunk buffers need more shared memory per block than the device has";
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, KB_PERSIST_THREADS, smem) != cudaSuccess) {
        cudaGetLastError();
        return "cannot query the device";
    }
    if (!coop)
        return "the device has no cooperative launch";
    p->grid = (unsigned)(sms * per_sm / p->S * p->S);
    if ((int)p->grid < p->S)
        return "too few resident blocks for the chunks of one row";
    /* Rows dealt for the whole launch when a class has 16 blocks or more
     * (S <= 8 on an H100), else for its last KB_PERSIST_DEALT_TAIL rounds */
    const int per_class = (int)p->grid / p->S, rounds = (int)KB_CEIL_DIV(R, (int64_t)per_class);
    p->dealt = per_class >= 16 ? 0 : rounds - KB_PERSIST_DEALT_TAIL;
    if (p->dealt < p->ahead + 1) /* the prologue's rows are static */
        p->dealt = p->ahead + 1;
    p->epoch = 0;
    const size_t words = (size_t)R * (size_t)p->S * 2;
    const size_t bytes = (words + 2 * KB_PERSIST_MAX_S) * sizeof(unsigned long long);
    if (cudaMalloc((void **)&p->partials, bytes) != cudaSuccess) {
        cudaGetLastError();
        return "out of device memory for the persistent-row partials";
    }
    p->tickets = p->partials + words;
    if (cudaMemset(p->partials, 0, bytes) != cudaSuccess) { /* epoch 0: never a launch's */
        cudaFree(p->partials);
        return "cudaMemset of the persistent-row partials failed";
    }
    return NULL;
}

/* Launch p->kernel on `stream` with the next epoch; NULL or the error. */
template <class Args>
static inline const char *kb_persist_row_launch(KbPersistRow *p, Args a, cudaStream_t stream)
{
    p->epoch++;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p->grid);
    cfg.blockDim = dim3(KB_PERSIST_THREADS);
    cfg.dynamicSmemBytes = p->smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    void *params[] = {p, &a};
    return kb_cuda_status(cudaLaunchKernelExC(&cfg, p->kernel, params));
}

#endif
