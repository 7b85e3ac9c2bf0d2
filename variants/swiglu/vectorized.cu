/* swiglu vectorized: the Llama model's prefill kernel (model/llama_gpu.cu),
 * one thread per 8 outputs: a 16-byte load of 8 gates and one of 8 ups,
 * silu with the fast exponential (__expf) in fp32, and one 16-byte store
 * of 8 bf16 results.  bf16 only; needs C a multiple of 8 (every row's
 * halves then start on 16 bytes), else SKIPs.
 *
 * Builds on naive: 16-byte accesses, an eighth of the load and store
 * instructions, and __expf's single MUFU op for expf's longer sequence.
 * Prediction: ~90% of the copy ceiling at the models' widths.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,961 GB/s
 * at 4096x14336, 93.5% of the run's 4237 GB/s memory ceiling, 2.52x naive;
 * 3,430 GB/s (81.0%, 2.32x) at 2048x8192; 784 GB/s (18.5%, 1.22x) at 512x1536,
 * 6.0 us.
 * Gap to the limit: 6.5 points at 4096x14336, a copy kernel's; the grid's last
 * wave is small at these sizes; 512x1536 is a launch. */
#include <cuda_bf16.h>
#include "ops/swiglu.h"
#include "kernels/cuda_util.h"
#include "kernels/llama.cuh"

/* gu [n, 2 ff] (gate | up) -> h [n, ff] = silu(gate) * up, 8 values a thread. */
__global__ void swiglu_vectorized_kernel(const __nv_bfloat16 *__restrict__ gu, int n, int ff,
                                         __nv_bfloat16 *__restrict__ h)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, v = ff / 8;
    if (id >= (int64_t)n * v)
        return;
    const int64_t t = id / v, c = id % v;
    const uint4 g8 = reinterpret_cast<const uint4 *>(gu + t * 2 * ff)[c];
    const uint4 u8 = reinterpret_cast<const uint4 *>(gu + t * 2 * ff + ff)[c];
    const __nv_bfloat162 *g = reinterpret_cast<const __nv_bfloat162 *>(&g8),
                         *u = reinterpret_cast<const __nv_bfloat162 *>(&u8);
    uint4 r8;
    __nv_bfloat162 *r = reinterpret_cast<__nv_bfloat162 *>(&r8);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const float2 fg = __bfloat1622float2(g[e]), fu = __bfloat1622float2(u[e]);
        r[e] = __floats2bfloat162_rn(kb_swiglu_fast(fg.x, fu.x), kb_swiglu_fast(fg.y, fu.y));
    }
    reinterpret_cast<uint4 *>(h)[id] = r8;
}

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] % 8 ? "needs C a multiple of 8 (16-byte loads of bf16)" : NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_swiglu_args *a = (const kb_swiglu_args *)args;
    (void)ctx;
    swiglu_vectorized_kernel<<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C / 8, 256), 256, 0, stream>>>(
        (const __nv_bfloat16 *)a->gu16, a->R, a->C, (__nv_bfloat16 *)a->h16);
    KB_LAUNCHED();
}

extern "C" const kb_variant swiglu_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "8 outputs a thread, 16-byte loads and stores, __expf (the Llama prefill's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .launch = launch,
    },
    KB_VARIANT_END,
};
