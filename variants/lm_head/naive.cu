/* lm_head naive: the baseline, two kernels: one 128-thread block per
 * logit, each computing the norm of x for itself and the dot product
 * with plain loads (kernels/decode_naive.cuh), writing the logit and its
 * kept copy; then one 1024-thread block finds the first largest logit by
 * packed (value, index) keys and advances the decode state, as the fused
 * kernel's last block does.
 *
 * Idea: logits, then argmax, as a framework runs them.
 * Prediction: some 20-40% of the copy ceiling on the head's weights
 * (2-byte loads, x and g re-read from L2 by every block), plus one more
 * launch and a pass over the logits.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 1,042 GB/s
 * at 128256x2048 (505 us), 24.6% of the run's 4237 GB/s memory ceiling; 637
 * GB/s (15.0%) at 49152x576.
 * Gap to the limit: 75.4 points at 128256x2048; as qkv_rope naive's, and the
 * second launch. */
#include <cuda_bf16.h>
#include "kernels/cuda_util.h"
#include "kernels/decode_naive.cuh"
#include "kernels/llama.cuh"
#include "ops/decode.h"

#define PICK_THREADS 1024

__global__ void __launch_bounds__(KB_NAIVE_THREADS) lm_head_logits_kernel(kb_lm_head_args a)
{
    const float r = kb_naive_rrms(a.x, a.K, a.eps);
    const float s = kb_naive_dot((const __nv_bfloat16 *)a.w, blockIdx.x, a.x, a.gamma, r, a.K);
    const int step = a.state[KB_DECODE_STEP];
    if (threadIdx.x)
        return;
    a.logits[blockIdx.x] = s;
    if (a.keep && step < a.max_tokens)
        a.keep[(size_t)step * a.V + blockIdx.x] = s;
}

__global__ void __launch_bounds__(PICK_THREADS) lm_head_pick_kernel(kb_lm_head_args a)
{
    unsigned long long best = 0;
    for (int i = threadIdx.x; i < a.V; i += PICK_THREADS) {
        const unsigned long long k = kb_pick_key(a.logits[i], i);
        best = k > best ? k : best;
    }
    best = kb_block_max_key(best);
    if (threadIdx.x == 0)
        kb_decode_advance(a.state, a.out, a.max_tokens, a.set_len, a.state[KB_DECODE_STEP], kb_pick_index(best));
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_lm_head_args *a = (const kb_lm_head_args *)args;
    (void)ctx;
    lm_head_logits_kernel<<<a->V, KB_NAIVE_THREADS, 0, stream>>>(*a);
    lm_head_pick_kernel<<<1, PICK_THREADS, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant lm_head_naive[] = {
    {
        .name = "naive",
        .summary = "a block per logit (the norm recomputed, plain loads), then a block for the pick",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch,
    },
    KB_VARIANT_END,
};
