/* The decode ops' naive baselines (ops/decode.h): one block of
 * KB_NAIVE_THREADS per output row (or RoPE / SwiGLU pair), which computes
 * the norm of x again for itself, then each dot product W[r] . xn with xn
 * made on the fly as the contract rounds it; block sums by shuffles
 * (kernels/reduce.cuh).  Plain 2-byte loads, no staging, no overlap. */
#ifndef KBENCH_DECODE_NAIVE_CUH
#define KBENCH_DECODE_NAIVE_CUH

#include <cuda_bf16.h>
#include "kernels/reduce.cuh"

#define KB_NAIVE_THREADS 128

/* 1 / sqrt(mean(x^2) + eps) over the K entries of x, on every thread. */
__device__ __forceinline__ float kb_naive_rrms(const float *x, int K, float eps)
{
    float ss = 0;
    for (int k = threadIdx.x; k < K; k += blockDim.x)
        ss += x[k] * x[k];
    return rsqrtf(kb_block_allreduce(ss, KbSum{}, 0.0f) / K + eps);
}

/* W[row] . xn, xn_k = bf16(x_k r g_k), on every thread. */
__device__ __forceinline__ float kb_naive_dot(const __nv_bfloat16 *w, int64_t row, const float *x, const float *g,
                                              float r, int K)
{
    float s = 0;
    for (int k = threadIdx.x; k < K; k += blockDim.x)
        s = fmaf(__bfloat162float(w[row * K + k]), __bfloat162float(__float2bfloat16_rn(x[k] * r * g[k])), s);
    return kb_block_allreduce(s, KbSum{}, 0.0f);
}

#endif
