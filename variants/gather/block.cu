/* gather block: one 256-thread block per token, its threads striding over
 * the row: the Llama model's embedding (model/llama_gpu.cu), in both of
 * E's dtypes.  It starts the programmatic dependent launch handshake
 * (kernels/llama.cuh): the decode step's first GEMV, launched as its
 * dependent, may start while it runs; its own wait is a no-op unless it
 * too is launched with the attribute (the model launches it plainly).
 *
 * Builds on naive: the id read once per block and no division; a block a
 * row, so a decode step (T = 1) is one block.
 * Prediction: as naive on long prompts; a decode step's single row is a
 * latency, not a bandwidth (one DRAM round trip and the launch).
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 2,013
 * GB/s at 2048x32000x2048, 47.5% of the run's 4237 GB/s memory ceiling, 1.41x
 * naive; bf16 1,651 GB/s (39.0%), 1.47x.  At T = 1 (1x32000x4096) 9.9 and 9.6
 * us, 0.42x and 0.43x naive (4.1 us).
 * Gap to the limit: 52.5 points (f32) and 61.0 (bf16) at 2048x32000x2048, a
 * 15-17 us job; bf16's 2-byte loads; at T = 1 one 256-thread block strides
 * over the 4096-wide row, where naive runs a thread per element. */
#include "ops/gather.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"
#include "kernels/llama.cuh"

/* Rows of the embedding as fp32: x[t] = embed[ids[t]]. */
template <typename T>
__global__ void gather_block_kernel(const int *__restrict__ ids, const T *__restrict__ embed, float *__restrict__ x,
                                    int d)
{
    kb_pdl_release();
    kb_pdl_wait();
    const T *row = embed + (size_t)ids[blockIdx.x] * d;
    for (int c = threadIdx.x; c < d; c += blockDim.x)
        x[(size_t)blockIdx.x * d + c] = kb_to_float(row[c]);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_gather_args *a = (const kb_gather_args *)args;
    (void)ctx;
    gather_block_kernel<T><<<a->T, 256, 0, stream>>>(a->ids, (const T *)a->table, a->x, a->D);
    KB_LAUNCHED();
}

extern "C" const kb_variant gather_block[] = {
    {
        .name = "block",
        .summary = "a 256-thread block per token",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "block",
        .summary = "a 256-thread block per token, bf16 table (the Llama model's)",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
