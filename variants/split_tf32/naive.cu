/* split_tf32 naive: one thread per element of x: cvt.rna.tf32.f32 for
 * the head, the exact difference for the tail, three stores into the
 * row of 3K: the fp32 transformer's kernel (model/forward_gpu.cu).
 *
 * Idea: the only rung: the split is a pass over each product's input
 * (the weights are split once, on the host), 16 bytes moved per element.
 * Prediction: near the copy ceiling on the transformer's 4096-row inputs.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,253 GB/s
 * at 4096x2048 (41.3 us), 76.8% of the run's 4237 GB/s memory ceiling; 2,439
 * GB/s (57.5%) at 4096x512.
 * Gap to the limit: 23.2 points at 4096x2048, more than a copy kernel's
 * (memcpy: 88.7% at the same 134 MB); fusing the split into the previous
 * kernel's store would remove the pass. */
#include "ops/split_tf32.h"
#include "kernels/cuda_util.h"

/* x (M x K) -> [xh xh xl] (M x 3K): xh is x rounded to tf32, xl = x - xh
 * exactly.  The tensor cores then lose only xl's own tf32 rounding. */
__global__ void split_tf32_naive_kernel(const float *__restrict__ x, int64_t M, int K, float *__restrict__ out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= M * K)
        return;
    const float v = x[i];
    uint32_t bits;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(v));
    const float hi = __uint_as_float(bits);
    float *row = out + (i / K) * 3 * K + i % K;
    row[0] = hi;
    row[K] = hi;
    row[2 * K] = v - hi;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_split_tf32_args *a = (const kb_split_tf32_args *)args;
    (void)ctx;
    split_tf32_naive_kernel<<<(unsigned)KB_CEIL_DIV(a->M * a->K, 256), 256, 0, stream>>>(a->x, a->M, a->K, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant split_tf32_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element, cvt.rna (the fp32 transformer's 3xtf32 path)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
