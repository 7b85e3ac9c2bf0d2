/* matmul wgmma_warpspec (bf16): wgmma_tma's tiles, MMAs and TMA loads with
 * the work split between warpgroups, as CUTLASS's Hopper kernels do.  The
 * block has three: warpgroup 0 is the producer, which gives most of its
 * registers back (setmaxnreg.dec to 40) and in which one thread issues every
 * TMA load; warpgroups 1 and 2 are the consumers, which take them
 * (setmaxnreg.inc to 232) and each multiply 64 rows of the 128x256 tile by
 * wgmma m64n256k16.  The 4-stage ring has two mbarriers a stage: full (the
 * producer announces the stage's 48 KiB, the TMA unit counts them down) and
 * empty (one arrival per consumer warp once wgmma.wait_group says the MMAs
 * that read the stage are done).  The producer waits on empty before it
 * refills a stage, the consumers on full before they read one: no block-wide
 * barrier per k-tile, so neither consumer waits for the slower one, and the
 * producer keeps up to three tiles ahead of the MMAs (wgmma_tma: two).
 *
 * Edges as wgmma_tma: TMA zero fill, checked stores; rows that are not
 * 16-byte aligned take wgmma's kernel.  Every shape runs.  Needs sm_90a.
 *
 * Builds on wgmma_tma: producer/consumer warpgroups, setmaxnreg and
 * full/empty mbarriers replace the block barrier per tile.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2): 689 TFLOP/s
 * at 4096^3 (0.88x cublas), 746 at 8192^3 (0.96x), 0.61-0.71x at the
 * transformer shapes.
 * Gap to the limit: cublas (781 TFLOP/s at 4096^3), the run's bf16
 * ceiling 967, ~990 dense peak on H100 SXM.
 * What is left: each block still fills its ring from empty and drains it
 * for its one tile, and its epilogue stalls the tensor cores (persistent
 * blocks whose producer runs into the next tile: wgmma_persistent); 96
 * 128x256 tiles for N = 768 leave 36 of 132 SMs idle. */
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
constexpr int kConsumers = 2, kThreads = (kConsumers + 1) * 128; /* + the producer, warpgroup 0 */
constexpr int kStages = 4;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the SM's register file");
constexpr int kAStageBytes = kBM * kBK * 2, kBStageBytes = kBK * kBN * 2;
constexpr int kSmemBytes = kStages * (kAStageBytes + kBStageBytes) + 1024; /* + alignment */
static_assert(kBK * 2 == 128, "A's rows and B's panels are one 128-byte swizzle line wide");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kConsumers;                 /* 64 rows per consumer: one m64 MMA */
constexpr int kGroupM = 16;                            /* block order */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

#endif
}

__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_warpspec_kernel(const __grid_constant__ CUtensorMap map_a,
                                                                          const __grid_constant__ CUtensorMap map_b,
                                                                          int M, int N, int K, bool pair,
                                                                          uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    __shared__ unsigned long long full[kStages];  /* stage s holds its tile: one phase per fill */
    __shared__ unsigned long long empty[kStages]; /* stage s was read: one phase per use */
    extern __shared__ __align__(128) unsigned char smem[];
    int tile_m, tile_n;
    bf16_block_tile<kGroupM>(&tile_m, &tile_n);
    const int m0 = tile_m * kBM, n0 = tile_n * kBN;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + kStages * kAStageBytes;

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < kStages; ++s) {
            kb_mbar_init(&full[s], 1);
            kb_mbar_init(&empty[s], kConsumers * 4); /* one arrival per consumer warp */
        }
        kb_mbar_init_fence();
    }
    __syncthreads(); /* the block's only barrier */

    if (wg == 0) {
        /* The producer.  Tile kt goes into stage kt % kStages once the MMAs
         * of tile kt - kStages, the stage's previous use, are done: phase
         * kt / kStages - 1 of empty.  In the first round it waits for the
         * parity of the phase before phase 0, which a fresh mbarrier counts
         * as complete, so the wait falls through. */
        kb_setmaxnreg_dec<kProducerRegs>();
        if (tid == 0) {
            for (int kt = 0, s = 0, phase = 0; kt < k_tiles; ++kt) {
                kb_mbar_wait(&empty[s], phase ^ 1);
                kb_mbar_arrive_expect(&full[s], kAStageBytes + kBStageBytes);
                kb_tma_load_2d(a_s + s * kAStageBytes, &map_a, kt * kBK, m0, &full[s]);
#pragma unroll
                for (int p = 0; p < kBN / 64; ++p)
                    kb_tma_load_2d(b_s + s * kBStageBytes + p * kPanelBytes, &map_b, n0 + p * 64, kt * kBK, &full[s]);
                if (++s == kStages)
                    s = 0, phase ^= 1;
            }
        }
        return;
    }

    /* The consumers. */
    kb_setmaxnreg_inc<kConsumerRegs>();
    const int ctid = tid - 128, cw = ctid / 128, lane = tid % 32;
    const uint32_t a_wg = a_s + cw * kWgM * 128; /* this consumer's 64 rows of A */
    float d[128]; /* set by the first MMA (accumulate = 0), never by other code: that would serialize the MMAs */
    for (int kt = 0, s = 0, phase = 0, prev = 0; kt < k_tiles; ++kt) {
        kb_mbar_wait(&full[s], phase); /* tile kt is in */

        /* Descriptors as in wgmma. */
        const uint32_t a_base = a_wg + s * kAStageBytes, b_base = b_s + s * kBStageBytes;
        kb_fence_regs(d);
        kb_wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBK / 16; ++j)
            kb_wgmma_ss<kBN, KbWgmmaType::bf16, KbWgmmaB::n_major>(
                d, kb_wgmma_desc(a_base + j * 32, 16, 1024), kb_wgmma_desc(b_base + j * 2048, kPanelBytes, 1024),
                kt > 0 || j > 0);
        kb_wgmma_commit();
        kb_wgmma_wait<1>(); /* tile kt - 1's MMAs are done: its stage goes back to the producer */
        kb_fence_regs(d);
        if (kt > 0 && lane == 0)
            kb_mbar_arrive(&empty[prev]);
        prev = s;
        if (++s == kStages)
            s = 0, phase ^= 1;
    }
    kb_wgmma_wait<0>();
    kb_fence_regs(d);

    /* The accumulator as in wgmma, warp w of consumer cw. */
    const int w = (ctid % 128) / 32, g = lane / 4, t = lane % 4;
    const int r = m0 + cw * kWgM + w * 16 + g;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
        const int c = n0 + j * 8 + 2 * t;
        bf16_store_pair(C, M, N, pair, r, c, d[4 * j], d[4 * j + 1]);
        bf16_store_pair(C, M, N, pair, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
#else
    (void)map_a, (void)map_b, (void)M, (void)N, (void)K, (void)pair, (void)C;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

/* wgmma_tma's maps: A in boxes of 64 x 128 (kBK x kBM), B in four 64 x 64 panels a tile. */
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_tma_rung rung = {.dtype = KB_BF16, .bm = kBM, .bk = kBK, .b_rows = kBK,
                                     .kernels = {(const void *)matmul_wgmma_warpspec_kernel}, .smem = {kSmemBytes}};
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
    matmul_wgmma_warpspec_kernel<<<grid, kThreads, kSmemBytes, stream>>>(c->map_a, c->map_b, a->M, a->N, a->K,
                                                                         kb_matmul_pair_stores(a), a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma_warpspec[] = {
    {
        .name = "wgmma_warpspec",
        .summary = "wgmma_tma warp-specialized: a TMA producer warpgroup, 2 consumer warpgroups, setmaxnreg, full/empty mbarriers, 4 stages",
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
