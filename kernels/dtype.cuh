/* The element types on the device: each kb_dtype's storage type, its
 * conversions to and from float (the hardware's: to nearest even, fp8
 * saturating), and kb_with_dtype, which calls a generic function with a
 * value of the storage type, so that code over tensors of any type (the
 * harness's fill and check, a variant's forms) is written once. */
#ifndef KBENCH_DTYPE_CUH
#define KBENCH_DTYPE_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include "ops/kbench.h"

__host__ __device__ inline float kb_to_float(float x) { return x; }
__host__ __device__ inline float kb_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__host__ __device__ inline float kb_to_float(__half x) { return __half2float(x); }
__host__ __device__ inline float kb_to_float(__nv_fp8_e4m3 x) { return (float)x; }
__host__ __device__ inline float kb_to_float(__nv_fp8_e5m2 x) { return (float)x; }
__host__ __device__ inline float kb_to_float(int32_t x) { return (float)x; }

/* float to T, as kb_store_floats rounds on the host. */
template <typename T> __device__ inline T kb_from_float(float x);
template <> __device__ inline float kb_from_float<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 kb_from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ inline __half kb_from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ inline __nv_fp8_e4m3 kb_from_float<__nv_fp8_e4m3>(float x) { return __nv_fp8_e4m3(x); }
template <> __device__ inline __nv_fp8_e5m2 kb_from_float<__nv_fp8_e5m2>(float x) { return __nv_fp8_e5m2(x); }
template <> __device__ inline int32_t kb_from_float<int32_t>(float x) { return (int32_t)x; }

/* The 16-bit types as pairs, two values in one 32-bit word (lo in the low
 * half): the pair type, its widening and its rounding to nearest. */
template <typename H> struct KbHalf2;
template <> struct KbHalf2<__half> {
    typedef __half2 pair;
    static __device__ __forceinline__ float2 widen(pair x) { return __half22float2(x); }
    static __device__ __forceinline__ pair round(float a, float b) { return __floats2half2_rn(a, b); }
};
template <> struct KbHalf2<__nv_bfloat16> {
    typedef __nv_bfloat162 pair;
    static __device__ __forceinline__ float2 widen(pair x) { return __bfloat1622float2(x); }
    static __device__ __forceinline__ pair round(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

/* The kb_dtype of storage type T (kb_with_dtype's inverse). */
template <typename T> struct KbDtypeOf;
template <> struct KbDtypeOf<float> { static constexpr kb_dtype value = KB_F32; };
template <> struct KbDtypeOf<__nv_bfloat16> { static constexpr kb_dtype value = KB_BF16; };
template <> struct KbDtypeOf<__half> { static constexpr kb_dtype value = KB_F16; };
template <> struct KbDtypeOf<__nv_fp8_e4m3> { static constexpr kb_dtype value = KB_E4M3; };
template <> struct KbDtypeOf<__nv_fp8_e5m2> { static constexpr kb_dtype value = KB_E5M2; };
template <> struct KbDtypeOf<int32_t> { static constexpr kb_dtype value = KB_I32; };

/* f(T()) for t's storage type T; cudaErrorInvalidValue for a dtype the
 * table has and this switch lacks, so a new type fails loudly. */
template <typename F>
inline cudaError_t kb_with_dtype(kb_dtype t, F &&f)
{
    switch (t) {
    case KB_F32: f(float()); return cudaSuccess;
    case KB_BF16: f(__nv_bfloat16()); return cudaSuccess;
    case KB_F16: f(__half()); return cudaSuccess;
    case KB_E4M3: f(__nv_fp8_e4m3()); return cudaSuccess;
    case KB_E5M2: f(__nv_fp8_e5m2()); return cudaSuccess;
    case KB_I32: f(int32_t()); return cudaSuccess;
    default: return cudaErrorInvalidValue;
    }
}

#endif
