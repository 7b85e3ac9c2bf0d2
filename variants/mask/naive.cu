/* mask naive: one thread per entry of s, writing value where the key is
 * after the query: the basic stage's kernel (model/stage_basic.cu, where
 * R = C), for any R x C.
 *
 * Idea: the only rung: the basic stage masks its T x T scores between the
 * score product and the softmax, as the document's first implementation
 * would (the other stages mask inside attention).
 * Prediction: launch-bound at small T; at large T half the threads write a
 * float each, some 50-70% of the copy ceiling by the counted bytes.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 831 GB/s
 * at 8192x8192, 19.6% of the run's 4237 GB/s memory ceiling by the counted
 * bytes, well under the 50-70% predicted; 621 GB/s (14.7%) at 2048x2048; 4.1
 * us (3.0%) at the basic stage's 512x512.
 * Gap to the limit: 80.4 points at 8192x8192: threads that write nothing still
 * run (a row-wise launch over the masked triangle would start none). */
#include "ops/mask.h"
#include "kernels/cuda_util.h"

/* The causal mask on s (R x C), s[i][j] = query i . key j: keys after the query get value. */
__global__ void mask_naive_kernel(float *s, int R, int C, float value)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (int64_t)R * C && i % C > i / C + (C - R))
        s[i] = value;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_mask_args *a = (const kb_mask_args *)args;
    (void)ctx;
    mask_naive_kernel<<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(a->s, a->R, a->C,
                                                                                           a->value);
    KB_LAUNCHED();
}

extern "C" const kb_variant mask_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per entry (the basic stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
