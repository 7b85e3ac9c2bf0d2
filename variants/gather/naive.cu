/* gather naive: one thread per element of x, x[i] = E[ids[i / D], i % D]
 * widened to fp32, in both of E's dtypes.
 *
 * Idea: the starting point and the baseline (as a framework's embedding
 * lookup runs): every id is read by the D threads of its row, from L1.
 * Prediction: near the copy ceiling for rows of D >= 256; the division
 * by D costs a few instructions an element.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 1,426
 * GB/s at 2048x32000x2048 (23.5 us), 33.7% of the run's 4237 GB/s memory
 * ceiling, far from the near-ceiling predicted; bf16 1,125 GB/s (26.6%); f32
 * 412 GB/s (9.7%) at 512x49152x576; 4.1 us at T = 1 (1x32000x4096).
 * Gap to the limit: 66.3 points (f32) and 73.4 (bf16) at 2048x32000x2048: rows
 * are random in E, so each starts a new DRAM page; a short T (a decode step)
 * leaves the GPU idle. */
#include "ops/gather.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

template <typename T>
__global__ void gather_naive_kernel(const int *__restrict__ ids, int64_t n, int D, const T *__restrict__ table,
                                    float *__restrict__ x)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = kb_to_float(table[(int64_t)ids[i / D] * D + i % D]);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_gather_args *a = (const kb_gather_args *)args;
    (void)ctx;
    const int64_t n = (int64_t)a->T * a->D;
    gather_naive_kernel<T><<<(unsigned)KB_CEIL_DIV(n, 256), 256, 0, stream>>>(a->ids, n, a->D,
                                                                              (const T *)a->table, a->x);
    KB_LAUNCHED();
}

extern "C" const kb_variant gather_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per element, bf16 table widened to fp32",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
