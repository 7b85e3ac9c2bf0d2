/* Counting NaN and Inf in an output on the device, so a check reads back
 * only the rows it compares, not the whole (possibly GB-sized) output. */
#include <cuda_bf16.h>
#include "harness/harness.h"

__device__ static bool is_bad(float v) { return !isfinite(v); }

template <typename T>
__global__ void count_nonfinite_kernel(const T *x, int64_t n, unsigned long long *count)
{
    unsigned long long local = 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        local += is_bad((float)x[i]);
    /* One atomic per warp that saw something: cheap when the output is clean. */
    local = __reduce_add_sync(0xffffffffu, (unsigned)local);
    if ((threadIdx.x & 31) == 0 && local)
        atomicAdd(count, local);
}

extern "C" cudaError_t kb_device_count_nonfinite(const void *x, int64_t n, kb_dtype t, int64_t *out)
{
    static unsigned long long *count;
    cudaError_t e = count ? cudaSuccess : cudaMalloc(&count, sizeof *count);
    if (e == cudaSuccess)
        e = cudaMemset(count, 0, sizeof *count);
    if (e != cudaSuccess)
        return e;
    if (t == KB_BF16)
        count_nonfinite_kernel<<<1024, 256>>>((const __nv_bfloat16 *)x, n, count);
    else
        count_nonfinite_kernel<<<1024, 256>>>((const float *)x, n, count);
    unsigned long long host = 0;
    e = cudaMemcpy(&host, count, sizeof host, cudaMemcpyDeviceToHost);
    *out = (int64_t)host;
    return e;
}

/* Whether this binary's kernels load on the current device: an error such as
 * cudaErrorNoKernelImageForDevice when it holds neither machine code for the
 * device nor PTX that the driver can compile for it.  Every .cu file is
 * built for the same archs, so one kernel stands for all. */
extern "C" cudaError_t kb_device_code_loads(void)
{
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, count_nonfinite_kernel<float>);
}
