/* gate_up naive: the baseline, one 128-thread block per output i, each
 * block computing the norm of x for itself, the gate and up rows' dot
 * products with plain loads (kernels/decode_naive.cuh), then
 * silu(gate) * up with the fast exponential, as the fused epilogue.
 *
 * Idea: every output its own reduction, as a first implementation has it.
 * Prediction: some 20-40% of the copy ceiling (2-byte loads, x and g
 * re-read from L2 by every block).
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 906 GB/s
 * at 8192x2048 (74.1 us), 21.4% of the run's 4237 GB/s memory ceiling; 309 GB/s
 * (7.3%) at 1536x576.
 * Gap to the limit: 78.6 points at 8192x2048; as qkv_rope naive's. */
#include <cuda_bf16.h>
#include "kernels/cuda_util.h"
#include "kernels/decode_naive.cuh"
#include "kernels/llama.cuh"
#include "ops/decode.h"

__global__ void __launch_bounds__(KB_NAIVE_THREADS) gate_up_naive_kernel(kb_gate_up_args a)
{
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)a.w;
    const float r = kb_naive_rrms(a.x, a.K, a.eps);
    const float g = kb_naive_dot(w, blockIdx.x, a.x, a.gamma, r, a.K);
    const float u = kb_naive_dot(w, (int64_t)a.F + blockIdx.x, a.x, a.gamma, r, a.K);
    if (threadIdx.x == 0)
        ((__nv_bfloat16 *)a.h)[blockIdx.x] = __float2bfloat16_rn(kb_swiglu_fast(g, u));
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_gate_up_args *a = (const kb_gate_up_args *)args;
    (void)ctx;
    gate_up_naive_kernel<<<a->F, KB_NAIVE_THREADS, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant gate_up_naive[] = {
    {
        .name = "naive",
        .summary = "a block per output, the norm recomputed, plain loads",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch,
    },
    KB_VARIANT_END,
};
