/* Helpers shared by the attention_backward variants (a header of this
 * folder, not a variant): the causal mask's key count and the
 * preprocessing every rung starts with, D_i = do_i . o_i. */
#ifndef KBENCH_ATTENTION_BACKWARD_COMMON_CUH
#define KBENCH_ATTENTION_BACKWARD_COMMON_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include "ops/attention_backward.h"
#include "kernels/cuda_util.h"

/* Keys 0 .. n - 1 of query row i survive the mask: all Tk, or under the
 * causal mask (bottom right) i + Tk - Tq + 1 clamped to [0, Tk]. */
__device__ __forceinline__ int atb_keys(int i, int Tq, int Tk, int causal)
{
    if (!causal)
        return Tk;
    const int64_t n = (int64_t)i + 1 + Tk - Tq;
    return n < 0 ? 0 : n > Tk ? Tk : (int)n;
}

/* Query heads per KV head: KV head b*Hkv + h/group serves query heads
 * b*H + h, so a KV head's group*Tq query rows are contiguous. */
__host__ __device__ static inline int atb_group(const kb_attention_backward_args *a) { return a->H / a->Hkv; }

#define ATB_ROWDOT_WARPS 8

/* dot[r] = do_r . o_r in fp32, one warp per query row. */
static __global__ void __launch_bounds__(ATB_ROWDOT_WARPS * 32)
atb_rowdot_kernel(int64_t rows, int D, const __nv_bfloat16 *dout, const __nv_bfloat16 *o, float *dot)
{
    const int64_t r = (int64_t)blockIdx.x * ATB_ROWDOT_WARPS + threadIdx.x / 32;
    if (r >= rows)
        return;
    const int lane = threadIdx.x % 32;
    float s = 0;
    for (int d = lane; d < D; d += 32)
        s += __bfloat162float(dout[r * D + d]) * __bfloat162float(o[r * D + d]);
    for (int off = 16; off; off /= 2)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if (!lane)
        dot[r] = s;
}

static inline const char *atb_row_dots(const kb_attention_backward_args *a, float *dot, cudaStream_t stream)
{
    const int64_t rows = (int64_t)a->B * a->H * a->Tq;
    atb_rowdot_kernel<<<(unsigned)KB_CEIL_DIV(rows, ATB_ROWDOT_WARPS), ATB_ROWDOT_WARPS * 32, 0, stream>>>(
        rows, a->D, (const __nv_bfloat16 *)a->dout, (const __nv_bfloat16 *)a->o, dot);
    KB_LAUNCHED();
}

#endif
