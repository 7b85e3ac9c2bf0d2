/* An example of a kernel of one's own for `kbench run --kernel`: an f32
 * GEMM in 32 x 32 shared-memory tiles, each thread one element of C.
 *
 *     kbench run --kernel examples/matmul_tiled.cu --test-sizes
 *
 * The contract (ops/matmul.h): C = A B, all row-major, any M, N, K >= 1,
 * so the tiles load zeros past the edges and store only inside C; C is
 * poisoned with NaN before each check, so a kernel must write it, never
 * read it (the beta = 0 of BLAS). */
#include "ops/matmul.h"
#include "ops/kbench_own.h"
#include "kernels/cuda_util.h"

#define TILE 32

__global__ void own_matmul_tiled(int M, int N, int K, const float *A, const float *B, float *C)
{
    __shared__ float a[TILE][TILE], b[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        a[ty][tx] = row < M && k0 + tx < K ? A[(size_t)row * K + k0 + tx] : 0.0f;
        b[ty][tx] = k0 + ty < K && col < N ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += a[ty][k] * b[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    const dim3 block(TILE, TILE), grid(KB_CEIL_DIV(a->N, TILE), KB_CEIL_DIV(a->M, TILE));
    own_matmul_tiled<<<grid, block, 0, stream>>>(a->M, a->N, a->K, a->A, a->B, a->C);
    KB_LAUNCHED();
}

KB_OWN_VARIANT("matmul", {.name = "tiled32", .summary = "32 x 32 shared-memory tiles, one output a thread",
                          .dtype = KB_F32, .math = KB_MATH_F32, .launch = launch})
