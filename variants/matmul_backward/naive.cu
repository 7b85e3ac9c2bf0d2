/* matmul_backward naive: the two products as plain loops, one thread per
 * output element.
 *   dA[m][k] = dC[m] . B[k]: the threads of a warp take neighbouring k, so
 *     each reads its own row of B (uncoalesced, 32 rows a step);
 *   dB[k][n] = sum_m A[m][k] dC[m][n]: neighbouring n, so dC's reads are
 *     coalesced and A's element is one broadcast.
 *
 * Idea: the starting point of the ladder, every operand read from global
 * memory per multiply-add.
 * Prediction: a few TFLOP/s at most at 8192x4096x4096, dB's loop near the
 * forward naive's speed and dA's far below it (strided rows of B).
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 1.5
 * TFLOP/s at every large shape in f32 and bf16 (2.4-2.5% of the run's 62.7
 * TFLOP/s fp32 ceiling, 0.2% of its 961 TFLOP/s bf16 tensor ceiling; 365 ms
 * at 8192x4096x4096 in bf16).
 * Gap to the limit: far: no reuse of any tile in shared memory or
 * registers. */
#include "ops/matmul_backward.h"
#include "kernels/cuda_util.h"
#include <cuda_bf16.h>

#define NAIVE_SIDE 16

static __device__ float load(const float *x, size_t i) { return x[i]; }
static __device__ float load(const __nv_bfloat16 *x, size_t i) { return __bfloat162float(x[i]); }
static __device__ void store(float *x, size_t i, float v) { x[i] = v; }
static __device__ void store(__nv_bfloat16 *x, size_t i, float v) { x[i] = __float2bfloat16(v); }

/* grid (K / 16, M / 16): x along k */
template <typename T>
__global__ void mmb_naive_da_kernel(int M, int N, int K, const T *b, const T *dc, T *da)
{
    const int k = blockIdx.x * NAIVE_SIDE + threadIdx.x, m = blockIdx.y * NAIVE_SIDE + threadIdx.y;
    if (m >= M || k >= K)
        return;
    float acc = 0;
    for (int n = 0; n < N; ++n)
        acc += load(dc, (size_t)m * N + n) * load(b, (size_t)k * N + n);
    store(da, (size_t)m * K + k, acc);
}

/* grid (N / 16, K / 16): x along n */
template <typename T>
__global__ void mmb_naive_db_kernel(int M, int N, int K, const T *a, const T *dc, T *db)
{
    const int n = blockIdx.x * NAIVE_SIDE + threadIdx.x, k = blockIdx.y * NAIVE_SIDE + threadIdx.y;
    if (k >= K || n >= N)
        return;
    float acc = 0;
    for (int m = 0; m < M; ++m)
        acc += load(a, (size_t)m * K + k) * load(dc, (size_t)m * N + n);
    store(db, (size_t)k * N + n, acc);
}

/* Grids' y spans: M and K up to 16 * 65535. */
static const char *unsupported(const kb_shape *s)
{
    return s->d[0] > 16 * 65535 || s->d[2] > 16 * 65535 ? "M and K must be at most 1048560: the grid's y limit"
                                                         : NULL;
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_backward_args *a = (const kb_matmul_backward_args *)args;
    (void)ctx;
    const dim3 block(NAIVE_SIDE, NAIVE_SIDE);
    mmb_naive_da_kernel<T><<<dim3(KB_CEIL_DIV(a->K, NAIVE_SIDE), KB_CEIL_DIV(a->M, NAIVE_SIDE)), block, 0,
                             stream>>>(a->M, a->N, a->K, (const T *)a->b, (const T *)a->dc, (T *)a->da);
    KB_CUDA_TRY(cudaGetLastError());
    mmb_naive_db_kernel<T><<<dim3(KB_CEIL_DIV(a->N, NAIVE_SIDE), KB_CEIL_DIV(a->K, NAIVE_SIDE)), block, 0,
                             stream>>>(a->M, a->N, a->K, (const T *)a->a, (const T *)a->dc, (T *)a->db);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_backward_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element of dA and of dB, operands from global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = unsupported,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per element of dA and of dB, bf16 operands, fp32 sums",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
