/* layernorm three_kernel: the textbook decomposition into three launches,
 * as a framework without fusion would run it:
 *   1. mean kernel: one 256-thread block per row, coalesced strided loads,
 *      a shared-memory tree sum; writes mean[row] (of d = x - x[row][0]);
 *   2. variance kernel: the same shape, sums (d - mean)^2; writes var[row];
 *   3. normalize kernel: elementwise over all R*C elements, one thread per
 *      element, y = (d - mean[row]) * rsqrt(var[row] + eps) * gamma + beta.
 * mean[] and var[] are R-float workspaces allocated in setup (outside the
 * timing) and freed in teardown.
 *
 * Builds on naive: coalesced loads and enough threads, without fusing:
 * every step is trivially parallel and simple.
 * Prediction: ~10x naive at least, but x is read three times, in three
 * separate kernels, so nothing stays in cache between them once the matrix
 * outgrows L2: 16 bytes moved per element for 8 counted, plus three launch
 * latencies: under half the copy ceiling.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,215 GB/s
 * at 65536x4096, 40.4% of the run's 3005 GB/s memory ceiling, 5.30x naive.
 * Gap to the limit: 2.5x, the two extra passes over x (fused by smem_block).
 * History: docs/notes/softmax-layernorm.md. */
#include <stdlib.h>
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define BLOCK 256

typedef struct {
    float *mean, *var;
} three_kernel_ctx;

__global__ void __launch_bounds__(BLOCK) layernorm_mean_kernel(int C, const float *x, float *mean)
{
    const float *in = x + (size_t)blockIdx.x * C;
    const float shift = in[0];
    float sum = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        sum += in[j] - shift;
    sum = kb_block_tree_allreduce<BLOCK>(sum, KbSum{});
    if (threadIdx.x == 0)
        mean[blockIdx.x] = sum / C;
}

__global__ void __launch_bounds__(BLOCK) layernorm_var_kernel(int C, const float *x, const float *mean, float *var)
{
    const float *in = x + (size_t)blockIdx.x * C;
    const float shift = in[0], m = mean[blockIdx.x];
    float sq = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK) {
        float d = in[j] - shift - m;
        sq += d * d;
    }
    sq = kb_block_tree_allreduce<BLOCK>(sq, KbSum{});
    if (threadIdx.x == 0)
        var[blockIdx.x] = sq / C;
}

__global__ void __launch_bounds__(BLOCK) layernorm_normalize_kernel(int64_t n, int C, float eps, const float *x,
                                                                   const float *gamma, const float *beta,
                                                                   const float *mean, const float *var, float *y)
{
    int64_t i = (int64_t)blockIdx.x * BLOCK + threadIdx.x;
    if (i >= n)
        return;
    int64_t row = i / C;
    int col = (int)(i - row * C);
    float d = x[i] - x[row * C] - mean[row];
    y[i] = d * rsqrtf(var[row] + eps) * gamma[col] + beta[col];
}

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    three_kernel_ctx *c = (three_kernel_ctx *)calloc(1, sizeof *c);
    cudaError_t e = cudaMalloc(&c->mean, (size_t)a->R * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc(&c->var, (size_t)a->R * sizeof(float));
    if (e != cudaSuccess) {
        cudaFree(c->mean);
        free(c);
        return cudaGetErrorString(e);
    }
    *ctx = c;
    return NULL;
}

static void teardown(void *ctx)
{
    three_kernel_ctx *c = (three_kernel_ctx *)ctx;
    if (!c)
        return;
    cudaFree(c->mean);
    cudaFree(c->var);
    free(c);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    const three_kernel_ctx *c = (const three_kernel_ctx *)ctx;
    int64_t n = (int64_t)a->R * a->C;
    layernorm_mean_kernel<<<a->R, BLOCK, 0, stream>>>(a->C, a->x, c->mean);
    layernorm_var_kernel<<<a->R, BLOCK, 0, stream>>>(a->C, a->x, c->mean, c->var);
    layernorm_normalize_kernel<<<(unsigned)KB_CEIL_DIV(n, BLOCK), BLOCK, 0, stream>>>(
        n, a->C, a->eps, a->x, a->gamma, a->beta, c->mean, c->var, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_three_kernel[] = {
    {
        .name = "three_kernel",
        .summary = "mean, variance and normalize kernels; per-row workspaces",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
