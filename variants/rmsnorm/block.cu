/* rmsnorm block: the Llama model's prefill norm (model/llama_gpu.cu), one
 * 256-thread block per row: float4 loads of x for the sum of squares, the
 * block's sum (warp shuffles, then the warps' sums in order), then a
 * second pass over x and gamma storing y as pairs of bf16.  The bf16 form
 * only: x is the model's fp32 residual stream, y the bf16 input of the
 * QKV or gate/up product.
 *
 * Builds on naive: coalesced 16-byte loads and a block per row, so a row
 * of the model's widths (576 to 8192) is read by 256 threads at once.
 * Needs C a multiple of 4 (float4 loads; bf16 pairs); SKIPs other shapes.
 * Prediction: near the copy ceiling at thousands of rows (6 bytes moved
 * per element plus a re-read of x from L2); a few rows, as a short
 * prefill has, leave most SMs idle.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,988 GB/s
 * at 65536x4096, 94.1% of the run's 4237 GB/s memory ceiling, 14.14x naive;
 * 72.9% at 16384x8192, 49.3% at 1024x4096; 19.5% at 128x262144 and 4.7% at
 * 1048576x32 (0.44x naive).
 * Gap to the limit: 5.9 points at 65536x4096 (the second read of x is from
 * L2, so the counted bytes are what moves); not only at small R: 27.1 points
 * at 16384x8192, and short or long rows fall off (95.3 points at C = 32,
 * slower than naive), a 256-thread block per row of any width. */
#include <cuda_bf16.h>
#include "ops/rmsnorm.h"
#include "kernels/cuda_util.h"
#include "kernels/llama.cuh"

#define THREADS 256

/* h[row] = bf16(RMSNorm(x[row]) * w), one block a row, 4 values a load. */
__global__ void rmsnorm_block_kernel(const float *__restrict__ x, const float *__restrict__ w, float eps, int d,
                                     __nv_bfloat16 *__restrict__ h)
{
    const float4 *row = reinterpret_cast<const float4 *>(x + (size_t)blockIdx.x * d);
    const float4 *w4 = reinterpret_cast<const float4 *>(w);
    __nv_bfloat162 *out = reinterpret_cast<__nv_bfloat162 *>(h + (size_t)blockIdx.x * d);
    float ss = 0;
    for (int c = threadIdx.x; c < d / 4; c += blockDim.x) {
        const float4 v = row[c];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float r = rsqrtf(kb_llama_block_sum(ss) / d + eps);
    for (int c = threadIdx.x; c < d / 4; c += blockDim.x) {
        const float4 v = row[c], g = w4[c];
        out[2 * c] = __floats2bfloat162_rn(v.x * r * g.x, v.y * r * g.y);
        out[2 * c + 1] = __floats2bfloat162_rn(v.z * r * g.z, v.w * r * g.w);
    }
}

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] % 4 ? "needs C a multiple of 4 (float4 loads of x)" : NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_args *a = (const kb_rmsnorm_args *)args;
    (void)ctx;
    rmsnorm_block_kernel<<<a->R, THREADS, 0, stream>>>(a->x, a->gamma, a->eps, a->C, (__nv_bfloat16 *)a->y16);
    KB_LAUNCHED();
}

extern "C" const kb_variant rmsnorm_block[] = {
    {
        .name = "block",
        .summary = "a 256-thread block per row, float4 loads, bf16 pairs out (the Llama prefill's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .launch = launch,
    },
    KB_VARIANT_END,
};
