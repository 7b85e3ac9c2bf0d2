/* copy vec4: our own copy kernel.  Each thread moves 16-byte vectors
 * (LDG.128/STG.128), several in flight before the first store, over a
 * grid-stride loop sized to fill every SM; a scalar tail handles n % 4 and
 * a misaligned start never happens (cudaMalloc is 256-byte aligned).
 * Builds on nothing: the plainest kernel that should reach the memory roof.
 * Prediction: within a few % of cudaMemcpy, ~2.9-3.0 TB/s on H100.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,770 GB/s
 * at 268435456, 92.2% of the run's 3005 GB/s memory ceiling, 0.92x memcpy.
 * Gap to the limit: 8 points to memcpy's copy kernels, which reach the ceiling.
 * History: docs/notes/elementwise.md. */
#include "ops/copy.h"
#include "kernels/cuda_util.h"

#define UNROLL 4

__global__ void copy_vec4_kernel(int64_t n4, const float4 *__restrict__ src, float4 *__restrict__ dst)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* UNROLL independent loads first, then the stores: more bytes in flight per thread. */
    for (; i + (UNROLL - 1) * stride < n4; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            v[u] = __ldcs(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            __stcs(dst + i + u * stride, v[u]);
    }
    for (; i < n4; i += stride)
        dst[i] = src[i];
}

__global__ void copy_tail_kernel(int64_t start, int64_t n, const float *src, float *dst)
{
    int64_t i = start + threadIdx.x;
    if (i < n)
        dst[i] = src[i];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_copy_args *a = (const kb_copy_args *)args;
    (void)ctx;
    int64_t n4 = a->n / 4;
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (n4 > 0) {
        int64_t blocks = KB_CEIL_DIV(n4, 256);
        int grid = (int)(blocks < 8 * sms ? blocks : 8 * sms);
        copy_vec4_kernel<<<grid, 256, 0, stream>>>(n4, (const float4 *)a->src, (float4 *)a->dst);
    }
    if (a->n % 4)
        copy_tail_kernel<<<1, 4, 0, stream>>>(n4 * 4, a->n, a->src, a->dst);
    KB_LAUNCHED();
}

extern "C" const kb_variant copy_vec4[] = {
    {
        .name = "vec4",
        .summary = "grid-stride float4 copy, 4 loads in flight per thread",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
