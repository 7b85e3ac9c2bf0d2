/* layernorm smem_block: three_kernel's three steps fused into one kernel,
 * one 256-thread block per row: the mean (shared-memory tree sum of
 * d = x - x[0]), the variance (tree sum of (d - mean)^2), then the normalized
 * row, all from the same block (kb_block_tree_allreduce in kernels/reduce.cuh).
 *
 * Builds on three_kernel: one launch instead of three and no workspaces;
 * passes 2 and 3 follow pass 1 within microseconds, so they find the row in
 * L1/L2 instead of DRAM for rows up to tens of KiB.
 * Prediction: ~2x three_kernel on large matrices (8 bytes moved per element
 * from DRAM instead of 16, the re-reads coming from cache), but still
 * 4-byte loads, 16 barriers per row, and 256 threads idling on short rows.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,858 GB/s
 * at 65536x4096, 95.1% of the run's 3005 GB/s memory ceiling, 12.47x naive.
 * Gap to the limit: 5 points at 65536x4096, far more where the re-reads miss L1
 * (36.7% at 1024x32768) and on short rows, which waste most of the block.
 * History: docs/notes/softmax-layernorm.md. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"

#define BLOCK 256

__global__ void __launch_bounds__(BLOCK) layernorm_smem_block_kernel(int C, float eps, const float *x,
                                                                    const float *gamma, const float *beta, float *y)
{
    const float *in = x + (size_t)blockIdx.x * C;
    float *out = y + (size_t)blockIdx.x * C;
    const float shift = in[0];

    float sum = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        sum += in[j] - shift;
    const float mean = kb_block_tree_allreduce<BLOCK>(sum, KbSum{}) / C;

    float sq = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK) {
        float d = in[j] - shift - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(kb_block_tree_allreduce<BLOCK>(sq, KbSum{}) / C + eps);

    for (int j = threadIdx.x; j < C; j += BLOCK)
        out[j] = (in[j] - shift - mean) * rstd * gamma[j] + beta[j];
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    (void)ctx;
    layernorm_smem_block_kernel<<<a->R, BLOCK, 0, stream>>>(a->C, a->eps, a->x, a->gamma, a->beta, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_smem_block[] = {
    {
        .name = "smem_block",
        .summary = "one block per row, shared-memory tree reductions, three passes",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
