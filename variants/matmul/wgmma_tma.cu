/* matmul wgmma_tma (bf16): wgmma's kernel with its loads moved to the
 * Tensor Memory Accelerator.  One thread issues a tile's copies: a 2-D
 * tensor-map load of A's 128x64 box and four of B's 64x64 panels (tensor
 * maps made in setup by cuTensorMapEncodeTiled, reached through the
 * runtime's driver entry point), each written to shared memory already in
 * the 128-byte swizzle the wgmma descriptors read, rows and columns outside
 * the matrix filled with zeros by the TMA unit.  Each stage has an mbarrier:
 * the issuing thread announces the stage's 48 KiB (arrive.expect_tx), the
 * copies count their bytes down on it, and the warps wait on its phase
 * instead of on cp.async groups, with no proxy fence (TMA and wgmma both
 * use the async proxy).  The 256 threads no longer spend issue slots and
 * registers on 12 copies a tile.  The ring, the MMAs and the one barrier a
 * tile (which frees the stage two tiles back) are wgmma's.
 *
 * Edges: TMA's zero fill covers partial tiles; stores are checked.  Tensor
 * maps need 16-byte aligned rows (K % 8 == 0 and N % 8 == 0) and bases:
 * other shapes take wgmma's kernel (element-wise copies) inside this
 * variant.  Every shape runs.  Needs sm_90a, as wgmma.
 *
 * Builds on wgmma: TMA + an mbarrier per stage replace cp.async.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2): 691 TFLOP/s
 * at 4096^3 (0.88x cublas), 748 at 8192^3 (0.96x), 0.60-0.62x at the
 * transformer shapes.
 * Gap to the limit: cublas (781 TFLOP/s at 4096^3), the run's bf16
 * ceiling 967, ~990 dense peak on H100 SXM.
 * What is left: both warpgroups still wait at one block barrier a tile
 * (a producer warp with empty/full barriers removes it: warp
 * specialization), only two tiles are in flight, and the epilogue stores C
 * from registers. */
#include <stdint.h>
#include <cuda.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"

namespace {
constexpr int kBM = 128, kBN = 256, kBK = 64;          /* block tile */
constexpr int kWarpgroups = 2, kThreads = kWarpgroups * 128;
constexpr int kStages = 4;
constexpr int kAStageBytes = kBM * kBK * 2, kBStageBytes = kBK * kBN * 2;
constexpr int kSmemBytes = kStages * (kAStageBytes + kBStageBytes) + 1024; /* + alignment */
static_assert(kBK * 2 == 128, "A's rows and B's panels are one 128-byte swizzle line wide");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kWarpgroups;                /* 64 rows per warpgroup: one m64 MMA */
constexpr int kAhead = kStages - 2, kGroupM = 16;      /* tiles loaded ahead; block order */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

#endif
}

__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a,
                                                                     const __grid_constant__ CUtensorMap map_b,
                                                                     int M, int N, int K, bool pair,
                                                                     uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ unsigned long long full[kStages]; /* stage s holds its tile: one phase per use */
    extern __shared__ __align__(128) unsigned char smem[];
    int tile_m, tile_n;
    bf16_block_tile<kGroupM>(&tile_m, &tile_n);
    const int m0 = tile_m * kBM, n0 = tile_n * kBN;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + kStages * kAStageBytes;

    /* Tile kt into stage s, by thread 0: A's box (columns 64kt.., rows m0..)
     * and B's four panels (columns n0 + 64p.., rows 64kt..). */
    auto load_tile = [&](int s, int kt) {
        kb_mbar_arrive_expect(&full[s], kAStageBytes + kBStageBytes);
        kb_tma_load_2d(a_s + s * kAStageBytes, &map_a, kt * kBK, m0, &full[s]);
#pragma unroll
        for (int p = 0; p < kBN / 64; ++p)
            kb_tma_load_2d(b_s + s * kBStageBytes + p * kPanelBytes, &map_b, n0 + p * 64, kt * kBK, &full[s]);
    };

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < kStages; ++s)
            kb_mbar_init(&full[s], 1);
        kb_mbar_init_fence();
    }
    __syncthreads();
    if (tid == 0)
        for (int s = 0; s < kAhead && s < k_tiles; ++s)
            load_tile(s, s);

    float d[128]; /* set by the first MMA (accumulate = 0), never by other code: that would serialize the MMAs */
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        kb_mbar_wait(&full[s], (kt / kStages) & 1); /* tile kt is in */
        __syncthreads(); /* both warpgroups' MMAs of tile kt - 2 are done: its stage is free */
        if (tid == 0 && kt + kAhead < k_tiles)
            load_tile((kt + kAhead) % kStages, kt + kAhead);

        /* Descriptors as in wgmma. */
        const uint32_t a_base = a_s + s * kAStageBytes + wg * kWgM * 128, b_base = b_s + s * kBStageBytes;
        kb_fence_regs(d);
        kb_wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBK / 16; ++j)
            kb_wgmma_ss<kBN, KbWgmmaType::bf16, KbWgmmaB::n_major>(
                d, kb_wgmma_desc(a_base + j * 32, 16, 1024), kb_wgmma_desc(b_base + j * 2048, kPanelBytes, 1024),
                kt > 0 || j > 0);
        kb_wgmma_commit();
        kb_wgmma_wait<1>();
        kb_fence_regs(d);
    }
    kb_wgmma_wait<0>();
    kb_fence_regs(d);

    /* The accumulator as in wgmma. */
    const int w = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int r = m0 + wg * kWgM + w * 16 + g;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
        const int c = n0 + j * 8 + 2 * t;
        bf16_store_pair(C, M, N, pair, r, c, d[4 * j], d[4 * j + 1]);
        bf16_store_pair(C, M, N, pair, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
#else
    (void)map_a, (void)map_b, (void)M, (void)N, (void)K, (void)pair, (void)C;
    __trap(); /* no wgmma or TMA on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

/* A: boxes of 64 x 128 (kBK x kBM); B: four 64 x 64 panels a tile. */
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_tma_rung rung = {.dtype = KB_BF16, .bm = kBM, .bk = kBK, .b_rows = kBK,
                                     .kernels = {(const void *)matmul_wgmma_tma_kernel}, .smem = {kSmemBytes}};
    return kb_matmul_tma_setup(args, &rung, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    kb_matmul_tma *c = (kb_matmul_tma *)ctx;
    const char *err;
    if (!kb_matmul_tma_begin(c, args, stream, &err))
        return err;
    const dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    matmul_wgmma_tma_kernel<<<grid, kThreads, kSmemBytes, stream>>>(c->map_a, c->map_b, a->M, a->N, a->K,
                                                                    kb_matmul_pair_stores(a), a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma_tma[] = {
    {
        .name = "wgmma_tma",
        .summary = "wgmma with TMA tensor-map loads and an mbarrier per stage, 4 stages, 128x256x64; unaligned rows: wgmma's kernel",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 90,
        .unsupported = kb_sm90a_only,
        .setup = setup,
        .teardown = kb_matmul_tma_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
