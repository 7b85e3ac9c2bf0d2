/* The seeded inputs made on the GPU: kb_fill_uniform's values
 * (kb_uniform_at, the same definition), written straight into device
 * memory, so that a case's plain uniform inputs need no upload (case.c).
 * The host still makes its own copy for the reference. */
#include "harness/harness.h"
#include "kernels/dtype.cuh"

/* Elements first .. first + n - 1 of the stream into x[0 .. n - 1]. */
template <typename T>
__global__ void fill_uniform_kernel(T *x, int64_t n, int64_t first, uint64_t seed)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = kb_from_float<T>(kb_uniform_at(seed, first + i));
}

template <typename T>
__global__ void store_floats_kernel(const float *src, T *dst, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = kb_from_float<T>(src[i]);
}

extern "C" cudaError_t kb_device_store_floats(kb_dtype t, const float *src, void *dst, int64_t n)
{
    cudaError_t e = kb_with_dtype(t, [&](auto type) {
        store_floats_kernel<<<2048, 256>>>(src, (decltype(type) *)dst, n);
    });
    if (e == cudaSuccess)
        e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

extern "C" cudaError_t kb_device_fill_uniform(void *x, kb_dtype t, int64_t n, int64_t first, uint64_t seed)
{
    if (t == KB_I32)
        return cudaErrorInvalidValue; /* ids are an op's own fill */
    cudaError_t e = kb_with_dtype(t, [&](auto type) {
        fill_uniform_kernel<<<2048, 256>>>((decltype(type) *)x, n, first, seed);
    });
    if (e == cudaSuccess)
        e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaDeviceSynchronize();
}
