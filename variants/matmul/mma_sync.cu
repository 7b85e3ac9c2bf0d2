/* matmul mma_sync (bf16): the Ampere way onto the tensor cores.  A block of
 * 8 warps (2 x 4) owns a 128x128 tile of C and walks K in steps of 32; each
 * warp owns 64x32 of it, 4 x 4 tiles of mma.sync.m16n8k16 (bf16 in, fp32
 * accumulate).  Per k16 step a warp loads its A fragments with 4
 * ldmatrix.x4 and its B fragments with 2 ldmatrix.x4.trans (B is K x N
 * row-major, so the transposing load yields the col-major fragments the MMA
 * wants), then issues 16 MMAs.  Tiles reach shared memory by 16-byte
 * cp.async, double-buffered: the copy of tile k+1 is in flight while the
 * warps multiply tile k, one barrier per tile.  Shared tiles are stored as
 * they are in global memory (A 128x32, B 32x128, no padding), so ldmatrix
 * has bank conflicts: 2-way on A's 64-byte rows, 8-way on B's 256-byte
 * rows; the next rung removes them.  ~130 registers, 32 KiB of static
 * shared memory.
 *
 * Edges: rows and columns outside A or B are zero-filled (cp.async with
 * source size 0), so the MMAs need no checks, and the store checks each
 * pair.  The 16-byte copies need K % 8 == 0 and N % 8 == 0 (aligned rows);
 * other shapes copy element by element (same kernel, Vec = false).  Every
 * shape runs.
 *
 * Builds on: double_buffered (the fp32 pipeline) and attention flash_mma
 * (the same MMA and ldmatrix), now a bf16 GEMM on the tensor cores.
 * Measured (results/h100/kbench-20261127-195738.csv): 113 TFLOP/s at 4096^3
 * (0.14x cublas), 115 at 8192^3 (0.15x); 0.13-0.20x at the transformer
 * shapes.
 * Gap to the limit: the dense bf16 tensor peak, ~990 TFLOP/s on H100 SXM;
 * mma.sync reaches at most about 2/3 of it on Hopper (the full rate needs
 * wgmma), and the bank conflicts and small warp tile keep this rung far
 * below that. */
#include <stdint.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "variants/matmul/bf16_common.cuh"

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 32;          /* block tile */
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN; /* warp tile 64 x 32 */
constexpr int kMT = kWM / 16, kNT = kWN / 8;           /* m16 and n8 tiles per warp */
constexpr int kStages = 2;
constexpr int kAElems = kBM * kBK, kBElems = kBK * kBN; /* one stage */
static_assert(kAElems / 8 % kThreads == 0 && kBElems / 8 % kThreads == 0, "equal chunks per thread");
}

template <bool Vec>
__global__ void __launch_bounds__(kThreads) matmul_mma_sync_kernel(int M, int N, int K, bool pair,
                                                                   const uint16_t *__restrict__ A,
                                                                   const uint16_t *__restrict__ B,
                                                                   uint16_t *__restrict__ C)
{
    __shared__ __align__(128) bf16 As[kStages][kAElems]; /* As[s][m][k] */
    __shared__ __align__(128) bf16 Bs[kStages][kBElems]; /* Bs[s][k][n] */
    const int m0 = blockIdx.y * kBM, n0 = blockIdx.x * kBN;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = warp / kWarpsN, wn = warp % kWarpsN;
    const uint32_t a_s = bf16_smem_addr(As), b_s = bf16_smem_addr(Bs);
    constexpr uint32_t kAStageBytes = kAElems * 2, kBStageBytes = kBElems * 2;

    /* Tile kt of A (rows m0.., columns 32kt..) and of B (rows 32kt..,
     * columns n0..) into stage s, 16 bytes a copy. */
    auto load_tile = [&](int s, int kt) {
        const int k0 = kt * kBK;
#pragma unroll
        for (int i = 0; i < kAElems / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / (kBK / 8), ch = c % (kBK / 8);
            bf16_load_chunk<Vec>(a_s + s * kAStageBytes + (r * kBK + ch * 8) * 2, A, m0 + r, k0 + ch * 8, M, K, K);
        }
#pragma unroll
        for (int i = 0; i < kBElems / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / (kBN / 8), ch = c % (kBN / 8);
            bf16_load_chunk<Vec>(b_s + s * kBStageBytes + (r * kBN + ch * 8) * 2, B, k0 + r, n0 + ch * 8, K, N, N);
        }
    };

    /* ldmatrix row addresses of this lane (matrix mi = lane / 8, row lr):
     * A (m16k16): (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
     *   (rows 8-15, k 8-15) = a0..a3 of the MMA;
     * B (k16n16, .trans): (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15),
     *   (k 8-15, n 8-15) = b0, b1 of n tile 2np, then of 2np + 1. */
    const int mi = lane / 8, lr = lane % 8;
    const uint32_t a_lane = a_s + ((wm * kWM + (mi & 1) * 8 + lr) * kBK + (mi >> 1) * 8) * 2;
    const uint32_t b_lane = b_s + (((mi & 1) * 8 + lr) * kBN + wn * kWN + (mi >> 1) * 8) * 2;

    float acc[kMT][kNT][4] = {};
    const int k_tiles = KB_CEIL_DIV(K, kBK);
    load_tile(0, 0);
    bf16_cp_async_commit();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        bf16_cp_async_wait<0>();
        __syncthreads(); /* tile kt is in; every warp is done with tile kt - 1 */
        if (kt + 1 < k_tiles)
            load_tile((kt + 1) % kStages, kt + 1);
        bf16_cp_async_commit();
#pragma unroll
        for (int ks = 0; ks < kBK / 16; ++ks) {
            uint32_t af[kMT][4], bfr[kNT][2];
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt)
                bf16_ldsm_x4(af[mt], a_lane + s * kAStageBytes + (mt * 16 * kBK + ks * 16) * 2);
#pragma unroll
            for (int np = 0; np < kNT / 2; ++np) {
                uint32_t r[4];
                bf16_ldsm_x4_trans(r, b_lane + s * kBStageBytes + (ks * 16 * kBN + np * 16) * 2);
                bfr[2 * np][0] = r[0];
                bfr[2 * np][1] = r[1];
                bfr[2 * np + 1][0] = r[2];
                bfr[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
                    bf16_mma16816(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
        }
    }

    /* The m16n8 accumulator: c0, c1 at (row g, columns 2t, 2t+1), c2, c3 at
     * row g + 8, where g = lane / 4, t = lane % 4. */
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
            const int r = m0 + wm * kWM + mt * 16 + g, c = n0 + wn * kWN + nt * 8 + 2 * t;
            bf16_store_pair(C, M, N, pair, r, c, acc[mt][nt][0], acc[mt][nt][1]);
            bf16_store_pair(C, M, N, pair, r + 8, c, acc[mt][nt][2], acc[mt][nt][3]);
        }
}

static bool aligned(const void *p, uintptr_t bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    (void)ctx;
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const bool vec = a->K % 8 == 0 && a->N % 8 == 0 && aligned(a->A16, 16) && aligned(a->B16, 16);
    const bool pair = a->N % 2 == 0 && aligned(a->C16, 4);
    const dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    if (vec)
        matmul_mma_sync_kernel<true><<<grid, kThreads, 0, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16, a->C16);
    else
        matmul_mma_sync_kernel<false><<<grid, kThreads, 0, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16, a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_mma_sync[] = {
    {
        .name = "mma_sync",
        .summary = "bf16 mma.sync m16n8k16 + ldmatrix, 2-stage cp.async, 128x128x32 block, 64x32 per warp",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .launch = launch,
    },
    KB_VARIANT_END,
};
