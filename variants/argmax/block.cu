/* argmax block: one 1024-thread block per row: each thread keeps the
 * largest key over a stride of the row (the value and its index packed in
 * 64 bits so that one max orders both, ties to the lower index:
 * kernels/llama.cuh), then the warps' maxima by shuffles, then the
 * block's: the fp32 stages' greedy pick (model/stage_gpu.cu).
 *
 * Builds on naive: the row read by 1024 threads at once, coalesced.
 * Prediction: a decode step's row of 32000-128256 logits (128-512 KB) in a
 * few microseconds, one SM's bandwidth: latency, not the copy ceiling,
 * bounds one row; many rows fill the GPU.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 22.1 GB/s
 * at 1x128256 (23.2 us), 0.5% of the run's 4237 GB/s memory ceiling, 131.12x
 * naive; 13.7 GB/s (9.4 us, 81.12x) at 1x32000; 0.84x naive at 1x1, a launch.
 * Gap to the limit: 99.5 points at 1x128256, and 9-23 us a row rather than a
 * few microseconds: one SM per row; the Llama model folds its pick into the
 * LM head's GEMV instead (lm_head gemv). */
#include "ops/argmax.h"
#include "kernels/cuda_util.h"
#include "kernels/llama.cuh"

#define PICK_THREADS 1024

/* One block a row: each thread's best over a stride, then the warps', then the block's. */
__global__ void __launch_bounds__(PICK_THREADS) argmax_block_kernel(const float *__restrict__ logits, int n,
                                                                    int *out)
{
    const float *x = logits + (int64_t)blockIdx.x * n;
    unsigned long long best = 0;
    for (int i = threadIdx.x; i < n; i += PICK_THREADS) {
        const unsigned long long k = kb_pick_key(x[i], i);
        best = k > best ? k : best;
    }
    best = kb_block_max_key(best);
    if (threadIdx.x == 0)
        out[blockIdx.x] = kb_pick_index(best);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_argmax_args *a = (const kb_argmax_args *)args;
    (void)ctx;
    argmax_block_kernel<<<a->R, PICK_THREADS, 0, stream>>>(a->x, a->C, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant argmax_block[] = {
    {
        .name = "block",
        .summary = "a 1024-thread block per row, packed (value, index) keys (the fp32 stages' pick)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
