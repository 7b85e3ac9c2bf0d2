/* matmul blocktile_1d: each thread computes TM = 8 outputs of one column of C.
 * A 512-thread block owns a 64x64 tile of C and walks K in steps of BK = 8.
 * Per step a thread loads one value of B from shared memory into a register
 * and reuses it for 8 FMAs against 8 values of A.
 *
 * Builds on smem_tiled: ~2x predicted.  Shared-memory loads per FMA fall
 * from 2 to about 9/8, and the 8 independent accumulators hide FMA latency.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 16.3
 * TFLOP/s at 4096^3, 26.0% of the run's 62.9 TFLOP/s fp32 ceiling, 0.32x
 * cublas; 16.3 TFLOP/s (25.9%) at 8192^3, 0.32x cublas.
 * Gap to the limit: 3.9x; A values are still reloaded for every column; the 2D
 * tile in the next file reuses both operands from registers. History:
 * docs/notes/matmul.md. */
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 8;
constexpr int kThreads = kBM * kBN / kTM;  /* 512 */
static_assert(kThreads == kBM * kBK && kThreads == kBK * kBN,
              "each thread loads exactly one element of A and one of B");

__global__ void __launch_bounds__(kThreads)
matmul_blocktile_1d_kernel(int M, int N, int K, const float *__restrict__ A,
                           const float *__restrict__ B, float *__restrict__ C)
{
    __shared__ float As[kBM][kBK];
    __shared__ float Bs[kBK][kBN];
    const int tid = threadIdx.x;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;

    /* Output position: a column inside the tile and a group of kTM rows.
     * All threads of a warp share trow, so As reads below are broadcasts. */
    const int tcol = tid % kBN, trow = tid / kBN;
    /* Load position: consecutive threads read consecutive addresses. */
    const int a_r = tid / kBK, a_c = tid % kBK;
    const int b_r = tid / kBN, b_c = tid % kBN;

    float acc[kTM] = {};
    for (int k0 = 0; k0 < K; k0 += kBK) {
        const int ar = row0 + a_r, ak = k0 + a_c;
        const int bk = k0 + b_r, bc = col0 + b_c;
        As[a_r][a_c] = (ar < M && ak < K) ? A[(size_t)ar * K + ak] : 0.0f;
        Bs[b_r][b_c] = (bk < K && bc < N) ? B[(size_t)bk * N + bc] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBK; ++k) {
            const float b = Bs[k][tcol];  /* one load, kTM uses */
#pragma unroll
            for (int i = 0; i < kTM; ++i)
                acc[i] += As[trow * kTM + i][k] * b;
        }
        __syncthreads();
    }

    const int col = col0 + tcol;
#pragma unroll
    for (int i = 0; i < kTM; ++i) {
        const int row = row0 + trow * kTM + i;
        if (row < M && col < N)
            C[(size_t)row * N + col] = acc[i];
    }
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    matmul_blocktile_1d_kernel<<<grid, kThreads, 0, stream>>>(a->M, a->N, a->K, a->A, a->B, a->C);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_blocktile_1d[] = {
    {
        .name = "blocktile_1d",
        .summary = "64x64 block tile, each thread a column of 8 outputs",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
