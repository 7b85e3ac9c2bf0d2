/* matmul wgmma_persistent (bf16): wgmma_warpspec's producer and consumer
 * warpgroups in persistent blocks.  The grid is one block per SM (fewer when
 * there are fewer tiles); block b takes tiles b, b + grid, b + 2 grid, ... of
 * the output, in grouped order (16 block-rows a group, so the tiles resident
 * together share A rows and B columns in L2).  The ring's stage and phase
 * counters run on from one tile to the next: the producer starts loading
 * the next tile's k-tiles as soon as stages free up, while the consumers
 * still store the last one, so a tile no longer begins with an empty ring,
 * and no block is launched per tile.  Tiles are 128x256 (m64n256k16, 4
 * stages) or 128x192 (m64n192k16, 5 stages), whichever covers C in fewer
 * rounds of the SMs, counting a 192-wide tile 8% dearer: at N = 768, 128
 * tiles of 128x192 in place of 96 of 128x256 for 132 SMs.
 *
 * Edges as wgmma_tma: TMA zero fill, checked stores; rows that are not
 * 16-byte aligned take wgmma's kernel.  Every shape runs.  Needs sm_90a.
 *
 * Builds on wgmma_warpspec: persistent blocks over grouped tiles, the ring
 * running across tiles, and a 192-wide tile for narrow N.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2): 708 TFLOP/s
 * at 4096^3 (0.91x cublas), 737 at 8192^3 (0.94x), 0.64-0.81x at the
 * transformer shapes.
 * Gap to the limit: cublas (781 TFLOP/s at 4096^3), the measured bf16
 * ceiling 967, ~990 dense peak on H100 SXM.
 * What is left: both consumers store their tile together, so the tensor
 * cores idle through every epilogue (ping-pong consumers, each on its own
 * tile, overlap one's epilogue with the other's MMAs; an stmatrix + TMA
 * store shortens it); a 2-CTA cluster with TMA multicast of the shared
 * operand would halve its L2 reads. */
#include <stdint.h>
#include <cuda.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"

namespace {
constexpr int kBM = 128, kBK = 64;                     /* block tile: 128 x BN x 64, BN 256 or 192 */
constexpr int kConsumers = 2, kThreads = (kConsumers + 1) * 128; /* + the producer, warpgroup 0 */
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the SM's register file");
constexpr int kAStageBytes = kBM * kBK * 2;
template <int BN> constexpr int kBStageBytes = kBK * BN * 2;
/* As many stages as fit in 227 KiB with the alignment: 4 of 48 KiB, 5 of 40. */
template <int BN> constexpr int kStages = (227 * 1024 - 1024) / (kAStageBytes + kBStageBytes<BN>);
template <int BN> constexpr int kSmemBytes = kStages<BN> * (kAStageBytes + kBStageBytes<BN>) + 1024;
static_assert(kStages<256> == 4 && kStages<192> == 5, "the rings the header describes");
static_assert(kBK * 2 == 128, "A's rows and B's panels are one 128-byte swizzle line wide");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kConsumers;                 /* 64 rows per consumer: one m64 MMA */
constexpr int kGroupM = 16;                            /* tile order */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

#endif
}

template <int BN>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_persistent_kernel(const __grid_constant__ CUtensorMap map_a,
                                                                            const __grid_constant__ CUtensorMap map_b,
                                                                            int M, int N, int K, bool pair,
                                                                            uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int S = kStages<BN>, kBBytes = kBStageBytes<BN>;
    __shared__ unsigned long long full[S];  /* stage s holds its tile: one phase per fill */
    __shared__ unsigned long long empty[S]; /* stage s was read: one phase per use */
    extern __shared__ __align__(128) unsigned char smem[];
    const int tiles_m = KB_CEIL_DIV(M, kBM), tiles_n = KB_CEIL_DIV(N, BN), tiles = tiles_m * tiles_n;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + S * kAStageBytes;

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
            kb_mbar_init(&full[s], 1);
            kb_mbar_init(&empty[s], kConsumers * 4); /* one arrival per consumer warp */
        }
        kb_mbar_init_fence();
    }
    __syncthreads(); /* the block's only barrier */

    if (wg == 0) {
        /* The producer, as in wgmma_warpspec, its stage and phase running on
         * across this block's tiles. */
        kb_setmaxnreg_dec<kProducerRegs>();
        if (tid == 0) {
            int s = 0, phase = 0;
            for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                int tile_m, tile_n;
                bf16_grouped_tile<kGroupM>(tile, tiles_m, tiles_n, &tile_m, &tile_n);
                const int m0 = tile_m * kBM, n0 = tile_n * BN;
                for (int kt = 0; kt < k_tiles; ++kt) {
                    kb_mbar_wait(&empty[s], phase ^ 1);
                    kb_mbar_arrive_expect(&full[s], kAStageBytes + kBBytes);
                    kb_tma_load_2d(a_s + s * kAStageBytes, &map_a, kt * kBK, m0, &full[s]);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kb_tma_load_2d(b_s + s * kBBytes + p * kPanelBytes, &map_b, n0 + p * 64, kt * kBK, &full[s]);
                    if (++s == S)
                        s = 0, phase ^= 1;
                }
            }
        }
        return;
    }

    /* The consumers: the same tiles in the same order. */
    kb_setmaxnreg_inc<kConsumerRegs>();
    const int ctid = tid - 128, cw = ctid / 128, lane = tid % 32;
    const int w = (ctid % 128) / 32, g = lane / 4, t = lane % 4;
    const uint32_t a_wg = a_s + cw * kWgM * 128; /* this consumer's 64 rows of A */
    float d[BN / 2]; /* set by each tile's first MMA (accumulate = 0), never by other code */
    int s = 0, phase = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int tile_m, tile_n;
        bf16_grouped_tile<kGroupM>(tile, tiles_m, tiles_n, &tile_m, &tile_n);
        const int m0 = tile_m * kBM, n0 = tile_n * BN;
        int prev = 0;
        for (int kt = 0; kt < k_tiles; ++kt) {
            kb_mbar_wait(&full[s], phase); /* tile kt is in */

            /* Descriptors as in wgmma; B's leading offset steps over BN / 64 panels. */
            const uint32_t a_base = a_wg + s * kAStageBytes, b_base = b_s + s * kBBytes;
            kb_fence_regs(d);
            kb_wgmma_fence();
#pragma unroll
            for (int j = 0; j < kBK / 16; ++j)
                kb_wgmma_ss<BN, KbWgmmaType::bf16, KbWgmmaB::n_major>(
                    d, kb_wgmma_desc(a_base + j * 32, 16, 1024), kb_wgmma_desc(b_base + j * 2048, kPanelBytes, 1024),
                    kt > 0 || j > 0);
            kb_wgmma_commit();
            kb_wgmma_wait<1>(); /* tile kt - 1's MMAs are done: its stage goes back to the producer */
            kb_fence_regs(d);
            if (kt > 0 && lane == 0)
                kb_mbar_arrive(&empty[prev]);
            prev = s;
            if (++s == S)
                s = 0, phase ^= 1;
        }
        kb_wgmma_wait<0>();
        kb_fence_regs(d);
        if (lane == 0)
            kb_mbar_arrive(&empty[prev]); /* the tile's last stage: the producer may refill it during the stores */

        /* The accumulator as in wgmma, warp w of consumer cw. */
        const int r = m0 + cw * kWgM + w * 16 + g;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int c = n0 + j * 8 + 2 * t;
            bf16_store_pair(C, M, N, pair, r, c, d[4 * j], d[4 * j + 1]);
            bf16_store_pair(C, M, N, pair, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
        }
    }
#else
    (void)map_a, (void)map_b, (void)M, (void)N, (void)K, (void)pair, (void)C;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

/* wgmma_tma's maps: A in boxes of 64 x 128 (kBK x kBM), B in 64 x 64 panels. */
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_tma_rung rung = {.dtype = KB_BF16, .bm = kBM, .bk = kBK, .b_rows = kBK,
                                     .kernels = {(const void *)matmul_wgmma_persistent_kernel<256>,
                                                 (const void *)matmul_wgmma_persistent_kernel<192>},
                                     .smem = {kSmemBytes<256>, kSmemBytes<192>}};
    return kb_matmul_tma_setup(args, &rung, ctx);
}

/* The tile width that covers C in fewer rounds of the SMs, a 192-wide
 * tile counted 8% dearer (its A operand is read for 3/4 of the MMA work). */
static int pick_tile_n(int M, int N, int sms)
{
    const long m = KB_CEIL_DIV(M, kBM);
    const long rounds256 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 256), sms);
    const long rounds192 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 192), sms);
    return rounds192 * 192 * 1.08 < rounds256 * 256 ? 192 : 256;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    kb_matmul_tma *c = (kb_matmul_tma *)ctx;
    const char *err;
    if (!kb_matmul_tma_begin(c, args, stream, &err))
        return err;
    const bool pair = kb_matmul_pair_stores(a);
    const int bn = pick_tile_n(a->M, a->N, c->sms);
    const long tiles = (long)KB_CEIL_DIV(a->M, kBM) * KB_CEIL_DIV(a->N, bn);
    const int grid = (int)(tiles < c->sms ? tiles : c->sms);
    if (bn == 256)
        matmul_wgmma_persistent_kernel<256><<<grid, kThreads, kSmemBytes<256>, stream>>>(c->map_a, c->map_b, a->M,
                                                                                         a->N, a->K, pair, a->C16);
    else
        matmul_wgmma_persistent_kernel<192><<<grid, kThreads, kSmemBytes<192>, stream>>>(c->map_a, c->map_b, a->M,
                                                                                         a->N, a->K, pair, a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma_persistent[] = {
    {
        .name = "wgmma_persistent",
        .summary = "wgmma_warpspec in persistent blocks over grouped tiles, the ring running across tiles; 128x256 or 128x192 tiles",
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
