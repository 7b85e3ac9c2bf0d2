/* matmul blocktile_2d: each thread computes an 8x8 block of C (TM x TN).  A
 * 256-thread block owns a 128x128 tile of C and walks K in steps of BK = 8.
 * Per step a thread loads 8 values of A and 8 of B from shared memory into
 * registers and does their 64 FMAs as an outer product.
 *
 * Builds on blocktile_1d: ~1.3-1.5x predicted.  Shared-memory loads per FMA
 * fall from ~9/8 to 1/4, and the larger block tile halves global/L2
 * traffic; but ~150 registers a thread leave one block (8 warps) per SM to
 * hide latency.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 21.4
 * TFLOP/s at 4096^3, 34.1% of the run's 62.9 TFLOP/s fp32 ceiling, 0.42x
 * cublas; 21.7 TFLOP/s (34.6%) at 8192^3, 0.42x cublas.
 * Gap to the limit: 2.9x; loads are scalar (4 bytes per instruction), and the
 * Bs reads of a warp are spread over 512 bytes (4-way bank conflicts). History:
 * docs/notes/matmul.md. */
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  /* 256 */
constexpr int kLoadsA = kBM * kBK / kThreads;        /* 4 elements per thread */
constexpr int kLoadsB = kBK * kBN / kThreads;        /* 4 elements per thread */

__global__ void __launch_bounds__(kThreads)
matmul_blocktile_2d_kernel(int M, int N, int K, const float *__restrict__ A,
                           const float *__restrict__ B, float *__restrict__ C)
{
    __shared__ float As[kBM][kBK];
    __shared__ float Bs[kBK][kBN];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
    /* This thread's 8x8 block of outputs: rows trow*kTM.., columns tcol*kTN.. */
    const int trow = tid / (kBN / kTN), tcol = tid % (kBN / kTN);

    float acc[kTM][kTN] = {};
    float a_frag[kTM], b_frag[kTN];
    for (int k0 = 0; k0 < K; k0 += kBK) {
        /* Consecutive threads load consecutive addresses; zero outside C's
         * range so the math below needs no checks. */
#pragma unroll
        for (int i = 0; i < kLoadsA; ++i) {
            const int e = tid + i * kThreads;
            const int r = e / kBK, c = e % kBK;
            const int gr = row0 + r, gk = k0 + c;
            As[r][c] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < kLoadsB; ++i) {
            const int e = tid + i * kThreads;
            const int r = e / kBN, c = e % kBN;
            const int gk = k0 + r, gc = col0 + c;
            Bs[r][c] = (gk < K && gc < N) ? B[(size_t)gk * N + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBK; ++k) {
#pragma unroll
            for (int i = 0; i < kTM; ++i)
                a_frag[i] = As[trow * kTM + i][k];
#pragma unroll
            for (int j = 0; j < kTN; ++j)
                b_frag[j] = Bs[k][tcol * kTN + j];
#pragma unroll
            for (int i = 0; i < kTM; ++i)
#pragma unroll
                for (int j = 0; j < kTN; ++j)
                    acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < kTM; ++i) {
        const int row = row0 + trow * kTM + i;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
            const int col = col0 + tcol * kTN + j;
            if (row < M && col < N)
                C[(size_t)row * N + col] = acc[i][j];
        }
    }
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    matmul_blocktile_2d_kernel<<<grid, kThreads, 0, stream>>>(a->M, a->N, a->K, a->A, a->B, a->C);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_blocktile_2d[] = {
    {
        .name = "blocktile_2d",
        .summary = "128x128 block tile, 8x8 outputs per thread",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
