/* add_relu separate: the baseline, an add kernel writing x + r into y, then
 * a ReLU kernel clamping y in place (reading it back), as two framework ops
 * would run.
 * Prediction: 20 bytes moved per element for 12 counted: ~60% of fused.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,542 GB/s
 * at 65536x4096, 51.3% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 1.9x, the round trip of y (fused removes it). History:
 * docs/notes/elementwise.md. */
#include "ops/add_relu.h"
#include "kernels/cuda_util.h"

__global__ void add_relu_add_kernel(int64_t n, const float *x, const float *r, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] + r[i];
}

__global__ void add_relu_relu_kernel(int64_t n, float *y)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fmaxf(y[i], 0.0f);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_add_relu_args *a = (const kb_add_relu_args *)args;
    (void)ctx;
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t n = (int64_t)a->R * a->C, blocks = KB_CEIL_DIV(n, 256);
    const int grid = (int)(blocks < 16 * sms ? blocks : 16 * sms);
    add_relu_add_kernel<<<grid, 256, 0, stream>>>(n, a->x, a->r, a->y);
    add_relu_relu_kernel<<<grid, 256, 0, stream>>>(n, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant add_relu_separate[] = {
    {
        .name = "separate",
        .summary = "add kernel, then a ReLU kernel reading y back (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
