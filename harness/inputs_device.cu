/* The seeded inputs made on the GPU: kb_fill_uniform's values, element for
 * element, written straight into device memory, so that a case's plain
 * uniform inputs need no upload (case.c).  The host still makes its own
 * copy for the reference; the check fails on any element that differs. */
#include <cuda_bf16.h>
#include "harness/harness.h"

/* Element i of the stream `seed`: splitmix64 of (seed, i + 1), its top 24
 * bits as k / 2^23 - 1 in [-1, 1), exact in float as in inputs.c's double. */
__device__ static float uniform_at(uint64_t seed, int64_t i)
{
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((int32_t)(z >> 40) - (1 << 23)) * 0x1p-23f;
}

/* Stored as the host stores it: bf16 rounded to nearest even (kb_float_to_bf16). */
__device__ static void put(float *x, float v) { *x = v; }
__device__ static void put(__nv_bfloat16 *x, float v) { *x = __float2bfloat16_rn(v); }

/* Elements first .. first + n - 1 of the stream into x[0 .. n - 1]. */
template <typename T>
__global__ void fill_uniform_kernel(T *x, int64_t n, int64_t first, uint64_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        put(&x[i], uniform_at(seed, first + i));
}

extern "C" cudaError_t kb_device_fill_uniform(void *x, kb_dtype t, int64_t n, int64_t first, uint64_t seed)
{
    if (t == KB_BF16)
        fill_uniform_kernel<<<2048, 256>>>((__nv_bfloat16 *)x, n, first, seed);
    else if (t == KB_F32)
        fill_uniform_kernel<<<2048, 256>>>((float *)x, n, first, seed);
    else
        return cudaErrorInvalidValue;
    cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
}
