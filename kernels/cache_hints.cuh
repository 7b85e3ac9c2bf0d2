/* Cache-hinted 16-byte (or scalar) loads and stores of a pack: plain ones
 * for data touched once (kb_load_once, kb_store_once), evict-first ones for
 * the two-read paths (kb_load_stream, kb_store_stream), and cached
 * read-only loads for data read again soon (kb_load_cached).  One place
 * for the choice of hint, which was measured per path (see each comment). */
#ifndef KBENCH_CACHE_HINTS_CUH
#define KBENCH_CACHE_HINTS_CUH

#include <cuda_runtime.h>
#include "kernels/dtype.cuh"

/* Packs: VEC consecutive floats, one 16-byte access when VEC == 4 (the
 * address must then be 16-byte aligned: C % 4 == 0 and a column % 4 == 0).
 * A 16-bit tensor (bf16, f16) takes the same packs, widened to float on the
 * load and rounded to nearest on the store: VEC == 4 is one 8-byte access
 * (8-byte aligned under the same conditions). */

/* Data touched once on a single-read path (a row held in registers, or in
 * a cluster's shared memory): plain loads through the read-only path and
 * plain stores.  On H100 (cold L2) these measured 2-5% faster than the
 * evict-first pair below on every single-read row op at C = 128..16384:
 * softmax 2,844 -> 2,928 GB/s and layernorm 2,762 -> 2,866 at 65536x768. */
__device__ __forceinline__ void kb_load_once(float (&v)[4], const float *p)
{
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_once(float (&v)[1], const float *p) { v[0] = __ldg(p); }

__device__ __forceinline__ void kb_store_once(float *p, const float (&v)[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void kb_store_once(float *p, const float (&v)[1]) { *p = v[0]; }

/* Streamed data on the two-read paths: evict-first loads (ld.global.cs) and
 * stores (st.global.cs) keep it from pushing the rows still to be read a
 * second time out of L2 (plain stores there measured 10-17% slower at
 * 512x65536). */
__device__ __forceinline__ void kb_load_stream(float (&v)[4], const float *p)
{
    float4 t = __ldcs(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_stream(float (&v)[1], const float *p) { v[0] = __ldcs(p); }

__device__ __forceinline__ void kb_store_stream(float *p, const float (&v)[4])
{
    __stcs(reinterpret_cast<float4 *>(p), make_float4(v[0], v[1], v[2], v[3]));
}
__device__ __forceinline__ void kb_store_stream(float *p, const float (&v)[1]) { __stcs(p, v[0]); }

/* Data read again soon (gamma, beta; the first of two reads of a row):
 * the read-only path, cached normally. */
__device__ __forceinline__ void kb_load_cached(float (&v)[4], const float *p)
{
    float4 t = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w;
}
__device__ __forceinline__ void kb_load_cached(float (&v)[1], const float *p) { v[0] = __ldg(p); }

/* The 16-bit packs: four elements as one 8-byte word, or one. */
template <typename H>
__device__ __forceinline__ void kb_widen_pack(float (&v)[4], uint2 w)
{
    typedef typename KbHalf2<H>::pair P;
    const float2 lo = KbHalf2<H>::widen(*reinterpret_cast<P *>(&w.x)), hi = KbHalf2<H>::widen(*reinterpret_cast<P *>(&w.y));
    v[0] = lo.x, v[1] = lo.y, v[2] = hi.x, v[3] = hi.y;
}

template <typename H>
__device__ __forceinline__ uint2 kb_round_pack(const float (&v)[4])
{
    typedef typename KbHalf2<H>::pair P;
    P lo = KbHalf2<H>::round(v[0], v[1]), hi = KbHalf2<H>::round(v[2], v[3]);
    return make_uint2(*reinterpret_cast<unsigned *>(&lo), *reinterpret_cast<unsigned *>(&hi));
}

#define KB_HALF_HINTS(H)                                                                                     \
    __device__ __forceinline__ void kb_load_once(float (&v)[4], const H *p)                               \
    {                                                                                                    \
        kb_widen_pack<H>(v, __ldg(reinterpret_cast<const uint2 *>(p)));                                  \
    }                                                                                                    \
    __device__ __forceinline__ void kb_load_once(float (&v)[1], const H *p) { v[0] = (float)__ldg(p); }   \
    __device__ __forceinline__ void kb_store_once(H *p, const float (&v)[4])                              \
    {                                                                                                    \
        *reinterpret_cast<uint2 *>(p) = kb_round_pack<H>(v);                                             \
    }                                                                                                    \
    __device__ __forceinline__ void kb_store_once(H *p, const float (&v)[1]) { *p = H(v[0]); }            \
    __device__ __forceinline__ void kb_load_stream(float (&v)[4], const H *p)                             \
    {                                                                                                    \
        kb_widen_pack<H>(v, __ldcs(reinterpret_cast<const uint2 *>(p)));                                 \
    }                                                                                                    \
    __device__ __forceinline__ void kb_load_stream(float (&v)[1], const H *p) { v[0] = (float)__ldcs(p); } \
    __device__ __forceinline__ void kb_store_stream(H *p, const float (&v)[4])                            \
    {                                                                                                    \
        __stcs(reinterpret_cast<uint2 *>(p), kb_round_pack<H>(v));                                       \
    }                                                                                                    \
    __device__ __forceinline__ void kb_store_stream(H *p, const float (&v)[1]) { __stcs(p, H(v[0])); }    \
    __device__ __forceinline__ void kb_load_cached(float (&v)[4], const H *p) { kb_load_once(v, p); }     \
    __device__ __forceinline__ void kb_load_cached(float (&v)[1], const H *p) { kb_load_once(v, p); }

KB_HALF_HINTS(__half)
KB_HALF_HINTS(__nv_bfloat16)
#undef KB_HALF_HINTS

/* A pack as stored (kb_raw_load, read-only cached like kb_load_once),
 * widened to floats where it is used (kb_raw_widen): a bf16 pack of 4
 * holds 2 registers where its floats take 4, so a kernel can keep twice
 * the loads in flight in the same registers (the norms' backward
 * fused_prefetch, softmax_backward packed). */
template <class T, int V> struct KbRawPack;
template <> struct KbRawPack<float, 4> { typedef float4 type; };
template <> struct KbRawPack<float, 1> { typedef float type; };
template <> struct KbRawPack<__nv_bfloat16, 4> { typedef uint2 type; };
template <> struct KbRawPack<__nv_bfloat16, 1> { typedef __nv_bfloat16 type; };

template <class T, int V>
__device__ __forceinline__ typename KbRawPack<T, V>::type kb_raw_load(const T *p)
{
    return __ldg(reinterpret_cast<const typename KbRawPack<T, V>::type *>(p));
}
__device__ __forceinline__ void kb_raw_widen(float (&v)[4], float4 t) { v[0] = t.x, v[1] = t.y, v[2] = t.z, v[3] = t.w; }
__device__ __forceinline__ void kb_raw_widen(float (&v)[1], float t) { v[0] = t; }
__device__ __forceinline__ void kb_raw_widen(float (&v)[4], uint2 t) { kb_widen_pack<__nv_bfloat16>(v, t); }
__device__ __forceinline__ void kb_raw_widen(float (&v)[1], __nv_bfloat16 t) { v[0] = __bfloat162float(t); }

#endif
