/* matmul smem_tiled: a 32x32 block of threads computes a 32x32 tile of C.  It
 * walks K in steps of 32, each time staging a 32x32 tile of A and one of B in
 * shared memory, so each element loaded from global memory is used 32 times.
 *
 * Builds on coalesced: ~1.5-2x predicted.  Global traffic drops 32x, but the
 * inner loop still does two shared-memory loads per FMA, so shared-memory
 * bandwidth, not DRAM, becomes the limit.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 8.7
 * TFLOP/s at 4096^3, 13.9% of the run's 62.9 TFLOP/s fp32 ceiling, 0.17x
 * cublas; 8.8 TFLOP/s (14.0%) at 8192^3, 0.17x cublas.
 * Gap to the limit: 7.2x; one output per thread gives no register reuse.
 * History: docs/notes/matmul.md. */
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

constexpr int kTile = 32;

__global__ void __launch_bounds__(kTile * kTile)
matmul_smem_tiled_kernel(int M, int N, int K, const float *__restrict__ A,
                         const float *__restrict__ B, float *__restrict__ C)
{
    __shared__ float As[kTile][kTile];
    __shared__ float Bs[kTile][kTile];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * kTile + ty;
    const int col = blockIdx.x * kTile + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
        /* Out-of-range elements are stored as zero so the inner loop needs no
         * bounds checks: they add 0 * x to the sum. */
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        /* As[ty][k] is one address for the whole warp (a broadcast) and
         * Bs[k][tx] is 32 consecutive words: no bank conflicts. */
#pragma unroll
        for (int k = 0; k < kTile; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  /* before the next iteration overwrites the tiles */
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    dim3 block(kTile, kTile);
    dim3 grid(KB_CEIL_DIV(a->N, kTile), KB_CEIL_DIV(a->M, kTile));
    matmul_smem_tiled_kernel<<<grid, block, 0, stream>>>(a->M, a->N, a->K, a->A, a->B, a->C);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_smem_tiled[] = {
    {
        .name = "smem_tiled",
        .summary = "32x32 shared-memory tiles of A and B, one output per thread",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
