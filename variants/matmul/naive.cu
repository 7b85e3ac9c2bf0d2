/* matmul naive: one thread per element of C, threads of a warp walk down a
 * column of C (threadIdx.x -> row), so each load of B is a broadcast and each
 * load of A is strided by K: uncoalesced.
 *
 * Idea: the starting point of the ladder; every later file fixes one thing.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 0.50
 * TFLOP/s at 4096^3, 0.8% of the run's 62.9 TFLOP/s fp32 ceiling, 0.01x cublas;
 * 0.50 TFLOP/s (0.8%) at 8192^3, 0.01x cublas.
 * Gap to the limit: 126.2x; memory-bound on uncoalesced A reads. History:
 * docs/notes/matmul.md. */
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

__global__ void matmul_naive_kernel(int M, int N, int K, const float *A,
                                    const float *B, float *C)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    dim3 block(32, 32);
    dim3 grid(KB_CEIL_DIV(a->M, 32), KB_CEIL_DIV(a->N, 32));
    matmul_naive_kernel<<<grid, block, 0, stream>>>(a->M, a->N, a->K, a->A, a->B, a->C);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per output, uncoalesced A reads",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
