/* matmul warptile: the tile hierarchy block -> warp -> thread.  A 256-thread
 * block owns a 128x128 tile of C and walks K in steps of BK = 16; its 8 warps
 * sit 2 x 4, each owning a 64x32 warp tile; inside a warp the 32 lanes sit
 * 8 x 4, and each lane owns 2 x 2 sub-tiles of 4x4 outputs spaced 32 rows and
 * 16 columns apart.  So for one k a warp reads 8 consecutive float4 of As
 * (128 bytes) and 4 consecutive float4 of Bs (64 bytes): each a single
 * conflict-free shared-memory wavefront, where vectorized's Bs reads took 4.
 * As (transposed, as in vectorized) is padded by 4 floats a row, which halves
 * the bank conflicts of the transposing stores.
 *
 * Edges and unaligned shapes: float4 where rows are 16-byte aligned and the
 * vector lies inside the matrix, guarded scalar accesses otherwise.
 *
 * Builds on vectorized: modest, ~1.05-1.2x predicted, from conflict-free
 * shared reads and half as many barriers per FMA (BK = 16); the larger
 * stall, loads waiting in line with the math, is left for the next file.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 32.8
 * TFLOP/s at 4096^3, 52.1% of the run's 62.9 TFLOP/s fp32 ceiling, 0.64x
 * cublas; 32.4 TFLOP/s (51.6%) at 8192^3, 0.63x cublas.
 * Gap to the limit: 1.9x; loads of the next tile still wait for the math of
 * this one (and vice versa); double_buffered overlaps them. History:
 * docs/notes/matmul.md. */
#include <stdint.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"

constexpr int kBM = 128, kBN = 128, kBK = 16;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kThreads = kWarpsM * kWarpsN * 32;  /* 256 */
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;  /* 64 x 32 warp tile */
constexpr int kLanesM = 8, kLanesN = 4;                  /* lanes in a warp */
constexpr int kSubM = kWM / kLanesM / 4, kSubN = kWN / kLanesN / 4;  /* 2 x 2 sub-tiles of 4x4 */
constexpr int kTM = kSubM * 4, kTN = kSubN * 4;          /* 8 x 8 outputs per thread */
constexpr int kPadA = 4;            /* keeps float4 alignment of As rows */
constexpr int kLdA = kBM + kPadA;   /* As is [kBK][kLdA]: A transposed */
constexpr int kLoadsA = kBM * kBK / 4 / kThreads;  /* float4 per thread: 2 */
constexpr int kLoadsB = kBK * kBN / 4 / kThreads;  /* 2 */
static_assert(kLanesM * kLanesN == 32, "a warp is 32 lanes");

__device__ __forceinline__ float4 load4(const float *__restrict__ p, int row,
                                        int col, int rows, int cols, bool vec)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row >= rows)
        return v;
    const float *src = p + (size_t)row * cols + col;
    if (vec && col + 3 < cols)
        return *reinterpret_cast<const float4 *>(src);
    if (col < cols) v.x = src[0];
    if (col + 1 < cols) v.y = src[1];
    if (col + 2 < cols) v.z = src[2];
    if (col + 3 < cols) v.w = src[3];
    return v;
}

__device__ __forceinline__ void store4(float *__restrict__ p, int row, int col,
                                       int rows, int cols, bool vec, float4 v)
{
    if (row >= rows)
        return;
    float *dst = p + (size_t)row * cols + col;
    if (vec && col + 3 < cols) {
        *reinterpret_cast<float4 *>(dst) = v;
        return;
    }
    if (col < cols) dst[0] = v.x;
    if (col + 1 < cols) dst[1] = v.y;
    if (col + 2 < cols) dst[2] = v.z;
    if (col + 3 < cols) dst[3] = v.w;
}

/* Global -> shared for one BK step: A transposed into As, B as is into Bs. */
__device__ __forceinline__ void load_tiles(float (*As)[kLdA], float (*Bs)[kBN],
                                           const float *__restrict__ A,
                                           const float *__restrict__ B, int M,
                                           int N, int K, int row0, int col0,
                                           int k0, bool vec_a, bool vec_b)
{
    const int tid = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
        const int e = tid + i * kThreads;
        const int r = e / (kBK / 4), c = (e % (kBK / 4)) * 4;
        const float4 v = load4(A, row0 + r, k0 + c, M, K, vec_a);
        As[c + 0][r] = v.x;
        As[c + 1][r] = v.y;
        As[c + 2][r] = v.z;
        As[c + 3][r] = v.w;
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
        const int e = tid + i * kThreads;
        const int r = e / (kBN / 4), c = (e % (kBN / 4)) * 4;
        *reinterpret_cast<float4 *>(&Bs[r][c]) = load4(B, k0 + r, col0 + c, K, N, vec_b);
    }
}

__global__ void __launch_bounds__(kThreads)
matmul_warptile_kernel(int M, int N, int K, const float *__restrict__ A,
                       const float *__restrict__ B, float *__restrict__ C,
                       bool vec_a, bool vec_b)
{
    __shared__ __align__(16) float As[kBK][kLdA];
    __shared__ __align__(16) float Bs[kBK][kBN];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
    /* First row/column of this lane's first 4x4 sub-tile, inside the block tile. */
    const int m_base = (warp / kWarpsN) * kWM + (lane / kLanesN) * 4;
    const int n_base = (warp % kWarpsN) * kWN + (lane % kLanesN) * 4;

    float acc[kTM][kTN] = {};
    for (int k0 = 0; k0 < K; k0 += kBK) {
        load_tiles(As, Bs, A, B, M, N, K, row0, col0, k0, vec_a, vec_b);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kBK; ++k) {
            float a_frag[kTM], b_frag[kTN];
            /* Sub-tile s of the warp is kWM / kSubM rows further down. */
#pragma unroll
            for (int s = 0; s < kSubM; ++s)
                *reinterpret_cast<float4 *>(&a_frag[s * 4]) =
                    *reinterpret_cast<const float4 *>(&As[k][m_base + s * (kWM / kSubM)]);
#pragma unroll
            for (int s = 0; s < kSubN; ++s)
                *reinterpret_cast<float4 *>(&b_frag[s * 4]) =
                    *reinterpret_cast<const float4 *>(&Bs[k][n_base + s * (kWN / kSubN)]);
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
        const int row = row0 + m_base + (i / 4) * (kWM / kSubM) + i % 4;
#pragma unroll
        for (int s = 0; s < kSubN; ++s) {
            const int col = col0 + n_base + s * (kWN / kSubN);
            const float *v = &acc[i][s * 4];
            store4(C, row, col, M, N, vec_b, make_float4(v[0], v[1], v[2], v[3]));
        }
    }
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    (void)ctx;
    const bool vec_a = a->K % 4 == 0 && aligned16(a->A);
    const bool vec_b = a->N % 4 == 0 && aligned16(a->B) && aligned16(a->C);
    dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    matmul_warptile_kernel<<<grid, kThreads, 0, stream>>>(a->M, a->N, a->K, a->A, a->B,
                                                          a->C, vec_a, vec_b);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_warptile[] = {
    {
        .name = "warptile",
        .summary = "block/warp/thread tiling (128x128, warp 64x32, 8x8 per thread), BK=16",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
