/* matmul_fp8 naive: one thread per element of C, which decodes each e4m3
 * pair to float and sums the products in fp32 (exact products, a wider
 * accumulator than the tensor cores'), then scales once and rounds to bf16.
 * Threads of a warp take neighbouring columns of C: each load of A is a
 * broadcast, each of B strided by K (both operands are K-major).
 *
 * Idea: the ladder's starting point, and the one rung that runs every
 * shape: wgmma_promoted falls back on it where no tensor map describes
 * the operands (K or N not a multiple of 16 or 8).
 * Measured: not yet on a GPU (no machine was lent after it was written).
 * Gap to the limit: the CUDA cores' fp32 rate, about 1/30 of fp8's tensor
 * rate, and uncoalesced reads of B. */
#include <cuda_fp8.h>
#include "ops/matmul_fp8.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

__global__ void matmul_fp8_naive_kernel(int M, int N, int K, const __nv_fp8_e4m3 *A, const __nv_fp8_e4m3 *B,
                                        const float *scale_a, const float *scale_b, __nv_bfloat16 *C)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    const __nv_fp8_e4m3 *a = A + (size_t)row * K, *b = B + (size_t)col * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += kb_to_float(a[k]) * kb_to_float(b[k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_fp8_args *a = (const kb_matmul_fp8_args *)args;
    (void)ctx;
    const dim3 block(32, 8), grid(KB_CEIL_DIV(a->N, 32), KB_CEIL_DIV(a->M, 8));
    matmul_fp8_naive_kernel<<<grid, block, 0, stream>>>(a->M, a->N, a->K, (const __nv_fp8_e4m3 *)a->A,
                                                        (const __nv_fp8_e4m3 *)a->B, a->scale_a, a->scale_b,
                                                        (__nv_bfloat16 *)a->C);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_fp8_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per output, e4m3 decoded to fp32 on the CUDA cores, B reads strided",
        .dtype = KB_E4M3,
        .math = KB_MATH_FP8,
        .launch = launch,
    },
    KB_VARIANT_END,
};
