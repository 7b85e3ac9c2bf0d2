/* Long rows split over several ordinary blocks that trade their partial
 * statistics through global memory, shared by softmax/split_row and
 * layernorm/split_row.
 *
 * A row of C floats is cut into S = ceil(C / KB_SPLIT_ROW_CHUNK) chunks, one
 * 256-thread block per chunk.  A block copies its chunk into its shared
 * memory by cp.async (in flight without holding registers, so six blocks
 * fit on an SM), reduces it to a partial statistic and publishes it (a
 * store, then a release add to the row's `published` counter); it then
 * waits until the row's S partials are all there, merges them in chunk
 * order with one warp (so that every block of the row gets bit-identical
 * statistics) and writes its chunk's output from shared memory: x read once
 * and y written once, with no cluster to place.
 *
 * Waiting on other blocks is safe only if they run.  Each block takes a
 * ticket (an atomic counter) when it starts and works on chunk ticket % S of
 * row ticket / S, so tickets go out in the order blocks actually run: every
 * row but the newest has all of its chunks held by running blocks, which
 * wait on nothing later, and the newest row's missing chunks go to the next
 * blocks to start.  This needs only more resident blocks than S (the host
 * checks it), not any launch order.
 *
 * The counters return to zero inside each launch: the last block of a row
 * to read its partials clears the row's two counters, and the last block of
 * the grid clears the ticket counters, so back-to-back launches (and graph
 * replays) need no memset. */
#ifndef KBENCH_SPLIT_ROW_CUH
#define KBENCH_SPLIT_ROW_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "kernels/reduce.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/cp_async.cuh"
#include "kernels/cuda_util.h"

#define KB_SPLIT_ROW_BLOCK 256
#define KB_SPLIT_ROW_ITEMS 32 /* floats per thread */
#define KB_SPLIT_ROW_CHUNK (KB_SPLIT_ROW_BLOCK * KB_SPLIT_ROW_ITEMS)

/* Device memory of one shape: counters, then R * S partials. */
typedef struct {
    unsigned *counters; /* ticket, finished, then published[R], consumed[R] */
    void *partials;
    int R, S;
} KbSplitRow;

static inline int kb_split_row_chunks(int64_t C)
{
    return (int)((C + KB_SPLIT_ROW_CHUNK - 1) / KB_SPLIT_ROW_CHUNK);
}

static inline void kb_split_row_free(KbSplitRow *s)
{
    cudaFree(s->counters);
    cudaFree(s->partials);
}

/* A variant's teardown: frees what kb_split_row_setup made. */
static inline void kb_split_row_teardown(void *ctx)
{
    kb_split_row_free((KbSplitRow *)ctx);
    free(ctx);
}

/* Blocks to launch: one per chunk. */
static inline unsigned kb_split_row_blocks(const KbSplitRow *s)
{
    return (unsigned)((int64_t)s->R * s->S);
}

/* Allocates and zeroes the counters and partials (in setup, outside the
 * timed launches) after checking that more than S blocks of `kernel` can be
 * resident; NULL or a reason. */
static inline const char *kb_split_row_alloc(const void *kernel, int64_t R, int64_t C, size_t stat_bytes,
                                             KbSplitRow *s)
{
    int dev = 0, sms = 0, per_sm = 0;
    s->R = (int)R;
    s->S = kb_split_row_chunks(C);
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, KB_SPLIT_ROW_BLOCK, 0) != cudaSuccess) {
        cudaGetLastError();
        return "cannot query the device";
    }
    if ((int64_t)sms * per_sm <= s->S)
        return "too few resident blocks for the chunks of one row";
    const size_t counter_bytes = (2 + 2 * (size_t)R) * sizeof(unsigned);
    const size_t partial_bytes = (size_t)R * (size_t)s->S * stat_bytes;
    if (cudaMalloc((void **)&s->counters, counter_bytes) != cudaSuccess) {
        cudaGetLastError();
        return "out of device memory for the split-row counters";
    }
    if (cudaMalloc(&s->partials, partial_bytes) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(s->counters);
        return "out of device memory for the split-row partials";
    }
    if (cudaMemset(s->counters, 0, counter_bytes) != cudaSuccess) {
        kb_split_row_free(s);
        return "cudaMemset of the split-row counters failed";
    }
    return NULL;
}

/* Why rows of C floats are not for split_row, or NULL. */
static inline const char *kb_split_row_unsupported(int64_t C)
{
    return C < KB_LONG_ROW_MIN_C ? "split_row is for C >= 32768 (shorter rows fit one block's registers)" : NULL;
}

/* A variant's setup: the shape's counters and partials in *ctx, or a
 * reason (and nothing allocated). */
static inline const char *kb_split_row_setup(const void *kernel, int64_t R, int64_t C, size_t stat_bytes,
                                             void **ctx)
{
    const char *why = kb_split_row_unsupported(C);
    if (why)
        return why;
    KbSplitRow *s = (KbSplitRow *)calloc(1, sizeof *s);
    if (!s)
        return "out of host memory";
    why = kb_split_row_alloc(kernel, R, C, stat_bytes, s);
    if (why) {
        free(s);
        return why;
    }
    *ctx = s;
    return NULL;
}

/* ---- device side ----------------------------------------------------------- */

/* A partial another SM wrote: through L2, never a stale L1 line. */
template <class T>
__device__ __forceinline__ T kb_load_l2(const T *p)
{
    static_assert(sizeof(T) % sizeof(float) == 0, "a struct of floats");
    T v;
    const float *src = reinterpret_cast<const float *>(p);
    float *dst = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / sizeof(float)); ++i)
        dst[i] = __ldcg(src + i);
    return v;
}

/* This block's chunk. */
struct KbSplitRowWork {
    int row, chunk;
};

/* This block's chunk, on every thread, from its ticket. */
__device__ __forceinline__ KbSplitRowWork kb_split_row_work(const KbSplitRow &s)
{
    __shared__ int ticket;
    if (threadIdx.x == 0)
        ticket = (int)atomicAdd(s.counters, 1u);
    __syncthreads();
    return {ticket / s.S, ticket % s.S};
}

/* Publishes this block's partial `mine` (the same on every thread) and
 * returns the row's statistic, merged in chunk order, on every thread. */
template <class Stat, class Merge>
__device__ Stat kb_split_row_exchange(const KbSplitRow &s, KbSplitRowWork w, Stat mine, Merge merge, Stat identity)
{
    __shared__ Stat row_stat;
    unsigned *published = s.counters + 2 + w.row, *consumed = s.counters + 2 + s.R + w.row;
    Stat *part = reinterpret_cast<Stat *>(s.partials) + (size_t)w.row * s.S;
    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            part[w.chunk] = mine;
            kb_add_release(published, 1u); /* the partial is visible before the count */
            while (kb_load_acquire(published) < (unsigned)s.S)
                __nanosleep(64);
        }
        __syncwarp();
        Stat acc = identity;
        for (int i = (int)threadIdx.x; i < s.S; i += 32)
            acc = merge(acc, kb_load_l2(part + i));
        acc = kb_warp_allreduce<32>(acc, merge);
        if (threadIdx.x == 0) {
            row_stat = acc;
            if (atomicAdd(consumed, 1u) == (unsigned)s.S - 1) { /* every block of the row is past its wait */
                *published = 0;
                *consumed = 0;
            }
        }
    }
    __syncthreads();
    return row_stat;
}

/* The grid's last block clears the tickets for the next launch. */
__device__ __forceinline__ void kb_split_row_retire(const KbSplitRow &s)
{
    if (threadIdx.x == 0 && atomicAdd(s.counters + 1, 1u) == gridDim.x - 1) {
        s.counters[0] = 0;
        s.counters[1] = 0;
    }
}

/* Column of pack k of this thread in its chunk, laid out as a
 * register-resident row of reduce.cuh: each load instruction is coalesced. */
template <int VEC>
__device__ __forceinline__ int kb_split_row_col(int k)
{
    return kb_pack_col<KbRowCfg<VEC, KB_SPLIT_ROW_ITEMS / VEC, KB_SPLIT_ROW_BLOCK>>(k, (int)threadIdx.x);
}

/* This thread's packs of the n floats at src into the same columns of buf
 * (shared memory), by cp.async: in flight without holding registers, so
 * that more blocks fit on an SM. */
template <int VEC>
__device__ __forceinline__ void kb_split_row_fetch(float *buf, const float *src, int n)
{
#pragma unroll
    for (int k = 0; k < KB_SPLIT_ROW_ITEMS / VEC; ++k) {
        const int col = kb_split_row_col<VEC>(k);
        if (col < n) {
            if constexpr (VEC == 4)
                kb_cp_async16(buf + col, src + col, 16);
            else
                kb_cp_async4(buf + col, src + col, 4);
        }
    }
    kb_cp_async_commit();
}

/* Pack k of this thread from buf, once its copies are in (kb_cp_async_wait:
 * a thread reads back only what it copied, so no barrier is needed). */
template <int VEC>
__device__ __forceinline__ void kb_split_row_pack(float (&v)[VEC], const float *buf, int k)
{
    const int col = kb_split_row_col<VEC>(k);
    if constexpr (VEC == 4) {
        const float4 t = *reinterpret_cast<const float4 *>(buf + col);
        v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
    } else {
        v[0] = buf[col];
    }
}

#endif
