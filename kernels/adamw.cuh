/* The AdamW step on the device, shared by the adamw variants so that the
 * rungs differ only in how they move memory and reduce the norm: the clip
 * factor from the gradient's sum of squares, and one element's step in
 * fp32 in the reference's order (ops/adamw.h). */
#ifndef KBENCH_ADAMW_CUH
#define KBENCH_ADAMW_CUH

#include <math.h>
#include <cuda_runtime.h>
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

#endif
