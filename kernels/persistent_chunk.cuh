/* How persistent_row (persistent_row.cuh) moves a thread's columns of a
 * chunk: global memory into a shared-memory buffer (cp.async per pack, or
 * one bulk copy for the block), the buffer into registers and back, and
 * registers out to y with evict-first stores.  The variants' ops call the
 * register moves; the kernel calls the fetches. */
#ifndef KBENCH_PERSISTENT_CHUNK_CUH
#define KBENCH_PERSISTENT_CHUNK_CUH

#include <cuda_runtime.h>
#include "kernels/cache_hints.cuh"
#include "kernels/cp_async.cuh"
#include "kernels/persistent_row_host.cuh"
#include "kernels/row_cfg.cuh"

/* This thread's packs of chunk `begin` (n floats) of the row at x_row into
 * the same columns of buf, and with LEAD, the row's first element into its
 * warp's slot after the chunk; one commit group per round, even an empty
 * one, so that wait_group counts rounds. */
template <class Cfg, bool LEAD>
__device__ __forceinline__ void kb_persist_fetch(float *buf, const float *x_row, int begin, int n, bool any)
{
    if (any) {
#pragma unroll
        for (int k = 0; k < Cfg::PACKS; ++k) {
            const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
            if (col < n) {
                if constexpr (Cfg::VEC == 4)
                    kb_cp_async16(buf + col, x_row + begin + col, 16);
                else
                    kb_cp_async4(buf + col, x_row + begin + col, 4);
            }
        }
        if (LEAD && threadIdx.x % 32 == 0)
            kb_cp_async4(buf + KB_PERSIST_CHUNK + threadIdx.x / 32, x_row, 4);
    }
    kb_cp_async_commit();
}

/* Chunk `begin` (n floats, n a multiple of 4) of the row at x_row into
 * buf by one bulk copy, and with LEAD, the row's first four floats after
 * it; both counted on bar, which this thread arrives on. */
template <bool LEAD>
__device__ __forceinline__ void kb_persist_bulk_fetch(float *buf, const float *x_row, int begin, int n,
                                                      unsigned long long *bar)
{
    const unsigned bytes = (unsigned)n * sizeof(float);
    kb_mbar_arrive_expect(bar, bytes + (LEAD ? 16u : 0u));
    kb_bulk_copy(buf, x_row + begin, bytes, bar);
    if (LEAD)
        kb_bulk_copy(buf + KB_PERSIST_CHUNK, x_row, 16, bar);
}

/* This thread's floats of the chunk in buf (n of them valid), in pack
 * order; `fill` past the end. */
template <class Cfg>
__device__ __forceinline__ void kb_persist_read(float (&v)[KB_PERSIST_ITEMS], const float *buf, int n, float fill)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        float *dst = v + k * Cfg::VEC;
        if constexpr (Cfg::VEC == 4) {
            const float4 t = col < n ? *reinterpret_cast<const float4 *>(buf + col)
                                     : make_float4(fill, fill, fill, fill);
            dst[0] = t.x, dst[1] = t.y, dst[2] = t.z, dst[3] = t.w;
        } else {
            dst[0] = col < n ? buf[col] : fill;
        }
    }
}

/* How many of this thread's floats are in a chunk of n. */
template <class Cfg>
__device__ __forceinline__ int kb_persist_count(int n)
{
    int count = 0;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
        count += kb_pack_col<Cfg>(k, (int)threadIdx.x) < n ? Cfg::VEC : 0;
    return count;
}

/* The thread's floats back to its columns of buf (shared memory). */
template <class Cfg>
__device__ __forceinline__ void kb_persist_write(float *buf, const float (&v)[KB_PERSIST_ITEMS], int n)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        if (col < n) {
            if constexpr (Cfg::VEC == 4)
                *reinterpret_cast<float4 *>(buf + col) =
                    make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
            else
                buf[col] = v[k];
        }
    }
}

/* The thread's floats to its columns of y's chunk (evict-first stores). */
template <class Cfg>
__device__ __forceinline__ void kb_persist_store(float *y, const float (&v)[KB_PERSIST_ITEMS], int n)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        if (col < n) {
            float t[Cfg::VEC];
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                t[j] = v[k * Cfg::VEC + j];
            kb_store_stream(y + col, t);
        }
    }
}

#endif
