/* The AdamW step on the device, shared by the adamw variants so that the
 * rungs differ only in how they move memory and reduce the norm: the clip
 * factor from the gradient's sum of squares, and one element's step in
 * fp32 in the reference's order (ops/adamw.h). */
#ifndef KBENCH_ADAMW_CUH
#define KBENCH_ADAMW_CUH

#include <math.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "ops/adamw.h"

/* The step's constants, rounded to fp32 once on the host. */
struct KbAdamwStep {
    float beta1, beta2, one_minus_beta1, one_minus_beta2, decay, step_size, inv_sqrt_bc2, eps;
};

static inline KbAdamwStep kb_adamw_step_consts(void)
{
    const double bc1 = 1 - pow(KB_ADAMW_BETA1, KB_ADAMW_STEP), bc2 = 1 - pow(KB_ADAMW_BETA2, KB_ADAMW_STEP);
    return {(float)KB_ADAMW_BETA1,       (float)KB_ADAMW_BETA2,
            (float)(1 - KB_ADAMW_BETA1), (float)(1 - KB_ADAMW_BETA2),
            (float)(1 - KB_ADAMW_LR * KB_ADAMW_WEIGHT_DECAY), (float)(KB_ADAMW_LR / bc1),
            (float)(1 / sqrt(bc2)),      (float)KB_ADAMW_EPS};
}

/* clip_grad_norm_'s factor, in double from the double sum (once a block). */
__device__ __forceinline__ float kb_adamw_clip_scale(double sumsq)
{
    return (float)fmin(1.0, KB_ADAMW_MAX_NORM / (sqrt(sumsq) + KB_ADAMW_CLIP_EPS));
}

/* One element: g is the clipped gradient; master, m and v are updated. */
__device__ __forceinline__ void kb_adamw_update(float g, float &master, float &m, float &v, const KbAdamwStep &k)
{
    m = k.beta1 * m + k.one_minus_beta1 * g;
    v = k.beta2 * v + k.one_minus_beta2 * g * g;
    master = master * k.decay - k.step_size * m / (sqrtf(v) * k.inv_sqrt_bc2 + k.eps);
}

/* A double sum over a warp by shuffles, every lane getting it. */
__device__ __forceinline__ double kb_adamw_warp_sum(double x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* A range of n elements, 4 at a time (16-byte loads and stores of fp32,
 * 8-byte of bf16; every pointer 16-byte aligned, bf16 ones 8-byte), then
 * its last n % 4 one at a time: thread `first` of `stride` takes chunks
 * first, first + stride, ...  The vectorized rung walks the whole buffer
 * with the grid; multi_tensor walks a table's chunks with a block each. */
__device__ __forceinline__ void kb_adamw_load4(const float *p, int64_t c, float (&g)[4])
{
    const float4 x = reinterpret_cast<const float4 *>(p)[c];
    g[0] = x.x, g[1] = x.y, g[2] = x.z, g[3] = x.w;
}

__device__ __forceinline__ void kb_adamw_load4(const __nv_bfloat16 *p, int64_t c, float (&g)[4])
{
    const uint2 u = reinterpret_cast<const uint2 *>(p)[c];
    const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.x));
    const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.y));
    g[0] = lo.x, g[1] = lo.y, g[2] = hi.x, g[3] = hi.y;
}

__device__ __forceinline__ float kb_adamw_load1(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float kb_adamw_load1(const __nv_bfloat16 *p, int64_t i) { return __bfloat162float(p[i]); }

/* This thread's sum of squares over its share of the range, in double. */
template <typename G>
__device__ __forceinline__ double kb_adamw_sumsq_range(const G *__restrict__ grad, int64_t n, int64_t first,
                                                       int64_t stride)
{
    double sum = 0;
    for (int64_t c = first; c < n / 4; c += stride) {
        float g[4];
        kb_adamw_load4(grad, c, g);
#pragma unroll
        for (int e = 0; e < 4; ++e)
            sum += (double)g[e] * g[e];
    }
    for (int64_t i = n / 4 * 4 + first; i < n; i += stride) {
        const double g = kb_adamw_load1(grad, i);
        sum += g * g;
    }
    return sum;
}

/* The step over this thread's share of the range, the gradient times scale. */
template <typename G>
__device__ __forceinline__ void kb_adamw_step_range(const G *__restrict__ grad, int64_t n, int64_t first, int64_t stride,
                                                    float scale, const KbAdamwStep &k, float *__restrict__ master,
                                                    float *__restrict__ m, float *__restrict__ v,
                                                    __nv_bfloat16 *__restrict__ param)
{
    for (int64_t c = first; c < n / 4; c += stride) {
        float g[4];
        kb_adamw_load4(grad, c, g);
        float4 p = reinterpret_cast<const float4 *>(master)[c], m4 = reinterpret_cast<const float4 *>(m)[c],
               v4 = reinterpret_cast<const float4 *>(v)[c];
        kb_adamw_update(scale * g[0], p.x, m4.x, v4.x, k);
        kb_adamw_update(scale * g[1], p.y, m4.y, v4.y, k);
        kb_adamw_update(scale * g[2], p.z, m4.z, v4.z, k);
        kb_adamw_update(scale * g[3], p.w, m4.w, v4.w, k);
        reinterpret_cast<float4 *>(master)[c] = p;
        reinterpret_cast<float4 *>(m)[c] = m4;
        reinterpret_cast<float4 *>(v)[c] = v4;
        const __nv_bfloat162 lo = __floats2bfloat162_rn(p.x, p.y), hi = __floats2bfloat162_rn(p.z, p.w);
        reinterpret_cast<uint2 *>(param)[c] =
            make_uint2(*reinterpret_cast<const unsigned *>(&lo), *reinterpret_cast<const unsigned *>(&hi));
    }
    for (int64_t i = n / 4 * 4 + first; i < n; i += stride) {
        float p = master[i], mi = m[i], vi = v[i];
        kb_adamw_update(scale * kb_adamw_load1(grad, i), p, mi, vi, k);
        master[i] = p;
        m[i] = mi;
        v[i] = vi;
        param[i] = __float2bfloat16_rn(p);
    }
}

/* The block's sum, in a fixed order, in thread 0. */
template <int Threads>
__device__ __forceinline__ double kb_adamw_block_sum(double x)
{
    __shared__ double warps[Threads / 32];
    x = kb_adamw_warp_sum(x);
    if (threadIdx.x % 32 == 0)
        warps[threadIdx.x / 32] = x;
    __syncthreads();
    double sum = 0;
    if (threadIdx.x == 0)
        for (int w = 0; w < Threads / 32; ++w)
            sum += warps[w];
    return sum;
}

/* The clip factor from the grid's partials (one a block), summed by warp 0
 * in a fixed order (lane l takes partials l, l + 32, ...; then the
 * butterfly, whose every lane ends with the same bits), so that every
 * block and every run get the same bits; block 0 writes the norm. */
__device__ __forceinline__ float kb_adamw_grid_scale(const double *partials, float *norm)
{
    __shared__ float scale;
    if (threadIdx.x < 32) {
        double s = 0;
        for (unsigned b = threadIdx.x; b < gridDim.x; b += 32)
            s += partials[b];
        s = kb_adamw_warp_sum(s);
        if (threadIdx.x == 0) {
            scale = kb_adamw_clip_scale(s);
            if (blockIdx.x == 0)
                *norm = (float)sqrt(s);
        }
    }
    __syncthreads();
    return scale;
}

#endif
