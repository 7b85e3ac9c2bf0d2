/* The seeded inputs made on the GPU: kb_fill_uniform's values
 * (kb_uniform_at, the same definition), written straight into device
 * memory, so that a case's plain uniform inputs need no upload (case.c).
 * The host still makes its own copy for the reference. */
#include <cuda_bf16.h>
#include "harness/harness.h"

/* Stored as the host stores it: bf16 rounded to nearest even (kb_float_to_bf16). */
__device__ static void put(float *x, float v) { *x = v; }
__device__ static void put(__nv_bfloat16 *x, float v) { *x = __float2bfloat16_rn(v); }

/* Elements first .. first + n - 1 of the stream into x[0 .. n - 1]. */
template <typename T>
__global__ void fill_uniform_kernel(T *x, int64_t n, int64_t first, uint64_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        put(&x[i], kb_uniform_at(seed, first + i));
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
