/* qkv_rope naive: the baseline, one 128-thread block per RoPE pair (two
 * rows of one head), each block computing the norm of x for itself, the
 * two dot products with plain loads (kernels/decode_naive.cuh), then
 * RoPE at the position from device memory and the store into q or the
 * cache, as the fused kernel's epilogue does.
 *
 * Idea: the product a first implementation writes, every output its own
 * reduction, so the fused gemv's speedup means something.
 * Prediction: some 20-40% of the copy ceiling: 2-byte loads, each block
 * re-reads x and g (from L2), and a block reduction per pair.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 496 GB/s
 * at 2048x32x8x64x1023 (25.4 us), 11.7% of the run's 4237 GB/s memory ceiling,
 * under the 20-40% predicted; 99.3 GB/s (2.3%) at 576x9x3x64x1023.
 * Gap to the limit: 88.3 points at 2048x32x8x64x1023: the narrow loads and the
 * per-block norm (gemv stages x once per block of a persistent grid). */
#include <cuda_bf16.h>
#include "kernels/cuda_util.h"
#include "kernels/decode_naive.cuh"
#include "kernels/llama.cuh"
#include "ops/decode.h"

typedef __nv_bfloat16 bf16;

__global__ void __launch_bounds__(KB_NAIVE_THREADS) qkv_rope_naive_kernel(kb_qkv_rope_args a)
{
    const int half = a.D / 2, head = blockIdx.x / half, i = blockIdx.x % half, pos = *a.len - 1;
    const bf16 *w = (const bf16 *)a.w;
    const float r = kb_naive_rrms(a.x, a.K, a.eps);
    float s0 = kb_naive_dot(w, (int64_t)head * a.D + i, a.x, a.gamma, r, a.K);
    float s1 = kb_naive_dot(w, (int64_t)head * a.D + i + half, a.x, a.gamma, r, a.K);
    if (threadIdx.x)
        return;
    bf16 *dst;
    if (head < a.H + a.KV) {
        kb_rope_rotate(s0, s1, pos, a.inv_freq[i]);
        dst = head < a.H ? (bf16 *)a.q + (size_t)head * a.D : (bf16 *)a.k + ((size_t)(head - a.H) * a.ld + pos) * a.D;
    } else
        dst = (bf16 *)a.v + ((size_t)(head - a.H - a.KV) * a.ld + pos) * a.D;
    dst[i] = __float2bfloat16_rn(s0);
    dst[i + half] = __float2bfloat16_rn(s1);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_qkv_rope_args *a = (const kb_qkv_rope_args *)args;
    (void)ctx;
    qkv_rope_naive_kernel<<<(a->H + 2 * a->KV) * (a->D / 2), KB_NAIVE_THREADS, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant qkv_rope_naive[] = {
    {
        .name = "naive",
        .summary = "a block per RoPE pair, the norm recomputed, plain loads",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch,
    },
    KB_VARIANT_END,
};
