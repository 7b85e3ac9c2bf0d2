/* embedding_backward atomic: the baseline, dE zeroed, then a thread per
 * element of dx adds it into its token's row with atomicAdd (RED.ADD.F32
 * in L2).  Not deterministic: the adds into one row land in whatever order
 * the threads reach L2, and fp32 addition is not associative, so two runs
 * can differ in the last bits of a row several tokens share (the check's
 * tolerance allows it; a bit-for-bit comparison of two runs would not).
 *
 * Builds on nothing: the scatter as written, what PyTorch's deterministic
 * algorithms are the alternative to.
 * Prediction: near the copy ceiling while ids are spread out (the adds of
 * a warp go to one row, 32 consecutive floats); the frequent token's row
 * serializes a quarter of the adds on the same addresses.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 3655
 * GB/s at 8192x128256x2048 (0.306 ms), 86.2% of the run's 4239 GB/s memory
 * ceiling (dE's memset and adds), 1.95x PyTorch eager; 2066 GB/s (48.7%) at
 * 8192x49152x576.
 * Gap to the limit: 13.8 points: dE is written twice (the memset, then the
 * adds' lines), against the op's count of once. */
#include "ops/embedding_backward.h"
#include "kernels/cuda_util.h"

__global__ void embedding_backward_atomic_kernel(kb_embedding_backward_args a)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)a.T * a.D)
        return;
    const int64_t t = id / a.D, j = id % a.D;
    atomicAdd(a.dE + (int64_t)a.ids[t] * a.D + j, a.dx[id]);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_embedding_backward_args *a = (const kb_embedding_backward_args *)args;
    (void)ctx;
    KB_CUDA_TRY(cudaMemsetAsync(a->dE, 0, (size_t)a->V * a->D * sizeof(float), stream));
    embedding_backward_atomic_kernel<<<(unsigned)KB_CEIL_DIV((int64_t)a->T * a->D, 256), 256, 0, stream>>>(*a);
    KB_LAUNCHED();
}

extern "C" const kb_variant embedding_backward_atomic[] = {
    {
        .name = "atomic",
        .summary = "zero dE, then atomicAdd of every element of dx (not deterministic)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
