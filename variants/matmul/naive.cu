/* matmul naive: one thread per element of C, threads of a warp walk down a
 * column of C (threadIdx.x -> row), so each load of B is a broadcast and each
 * load of A is strided by K: uncoalesced.
 *
 * Idea: the starting point of the ladder; every later file fixes one thing.
 * Measured on H100 (results/h100/, cold L2): 0.5 TFLOP/s at 4096^3 (1% of cuBLAS
 * SGEMM), 0.5 at 8192^3 (1%), 0.5 at 4096x768x3072.
 * That is 1% of the fp32 FFMA peak (66.9 TFLOP/s at 1980 MHz) at 4096^3.
 * Gap to the limit: far (memory-bound on uncoalesced A reads). */
#include "kernels/matmul.h"
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

extern "C" const kb_variant matmul_naive = {
    .name = "naive",
    .summary = "one thread per output, uncoalesced A reads",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .launch = launch,
};
