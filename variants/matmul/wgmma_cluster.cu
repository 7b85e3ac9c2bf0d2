/* matmul wgmma_cluster (bf16): wgmma_persistent in clusters of two blocks.
 * The two blocks of a cluster take vertically adjacent tiles (block-rows
 * 2p and 2p + 1, the same block-column), which read the same B.  Each block
 * still loads its own A, but only half of each B stage: k-rows 32r..32r+31
 * of every 64-column panel (r: its rank in the cluster), by a TMA multicast
 * that writes them into both blocks' shared memory at the same offset and
 * counts the bytes on both blocks' full mbarrier.  So a stage's 16 KiB of A
 * and 32 KiB of B cost each block 16 + 16 KiB of L2 reads.  A stage is
 * written by both producers, so it is free only when both blocks' consumers
 * are done with it: each consumer warp arrives on the empty mbarrier of both
 * blocks (the peer's through mapa), 16 arrivals a phase.  A block must not
 * exit while its peer may still arrive on its barriers: its producer waits
 * for the last release of every stage before it leaves.  Odd block-row
 * counts give the last cluster a tile below C: zeros loaded, no stores.
 *
 * Edges as wgmma_tma: TMA zero fill, checked stores; rows that are not
 * 16-byte aligned take wgmma's kernel.  Every shape runs.  Needs sm_90a.
 *
 * Builds on wgmma_persistent: 2-block clusters sharing B by TMA multicast.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2): 708 TFLOP/s
 * at 4096^3 (0.91x cublas), 764 at 8192^3 (0.98x), 0.64-0.82x at the
 * transformer shapes.
 * Gap to the limit: cublas (781 TFLOP/s at 4096^3), the measured bf16
 * ceiling 967, ~990 dense peak on H100 SXM.
 * What is left: the epilogue still stalls the tensor cores (stmatrix + TMA
 * stores: wgmma_tma_store); the tile order could follow a Hilbert curve. */
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
constexpr int kCluster = 2;                            /* blocks a cluster, along M */
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
constexpr int kGroupM = 8;                             /* cluster order: 8 pairs of block-rows a group */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

#endif
}

template <int BN>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_cluster_kernel(const __grid_constant__ CUtensorMap map_a,
                                                                            const __grid_constant__ CUtensorMap map_b,
                                                                            int M, int N, int K, bool pair,
                                                                            uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int S = kStages<BN>, kBBytes = kBStageBytes<BN>;
    __shared__ unsigned long long full[S];  /* stage s holds its tile: one phase per fill */
    __shared__ unsigned long long empty[S]; /* stage s was read: one phase per use */
    extern __shared__ __align__(128) unsigned char smem[];
    /* Pairs of block-rows by block-columns, one pair a cluster at a time. */
    const int pairs_m = KB_CEIL_DIV(M, kCluster * kBM), tiles_n = KB_CEIL_DIV(N, BN), pairs = pairs_m * tiles_n;
    const int tid = threadIdx.x, wg = tid / 128, rank = kb_cluster_rank();
    const int cluster = blockIdx.x / kCluster, clusters = gridDim.x / kCluster;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + S * kAStageBytes;

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
            kb_mbar_init(&full[s], 1);
            kb_mbar_init(&empty[s], kCluster * kConsumers * 4); /* one arrival per consumer warp of the cluster */
        }
        kb_mbar_init_fence();
    }
    kb_cluster_sync(); /* both blocks' mbarriers are initialised before any multicast or remote arrival */

    if (wg == 0) {
        /* The producer, as in wgmma_persistent; its empty waits now count
         * both blocks' consumers.  Its share of B: k-rows 32 rank.. of each
         * panel (maps_b's boxes are 64 x 32), to both blocks. */
        kb_setmaxnreg_dec<kProducerRegs>();
        if (tid == 0) {
            int s = 0, phase = 0;
            for (int job = cluster; job < pairs; job += clusters) { /* job: a pair of tiles */
                int pair_m, tile_n;
                bf16_grouped_tile<kGroupM>(job, pairs_m, tiles_n, &pair_m, &tile_n);
                const int m0 = (pair_m * kCluster + rank) * kBM, n0 = tile_n * BN;
                for (int kt = 0; kt < k_tiles; ++kt) {
                    kb_mbar_wait(&empty[s], phase ^ 1);
                    kb_mbar_arrive_expect(&full[s], kAStageBytes + kBBytes); /* all of B: both halves land here */
                    kb_tma_load_2d(a_s + s * kAStageBytes, &map_a, kt * kBK, m0, &full[s]);
#pragma unroll
                    for (int p = 0; p < BN / 64; ++p)
                        kb_tma_load_2d_multicast(b_s + s * kBBytes + p * kPanelBytes + rank * (kBK / kCluster) * 128,
                                                 &map_b, n0 + p * 64, kt * kBK + rank * (kBK / kCluster), &full[s],
                                                 (1u << kCluster) - 1);
                    if (++s == S)
                        s = 0, phase ^= 1;
                }
            }
            /* The last use of every stage released by both blocks: no
             * arrival from the peer can still come to this block. */
            for (int i = 0; i < S; ++i) {
                kb_mbar_wait(&empty[s], phase ^ 1);
                if (++s == S)
                    s = 0, phase ^= 1;
            }
        }
        return;
    }

    /* The consumers: the same tiles in the same order; each stage released
     * to both blocks' producers. */
    kb_setmaxnreg_inc<kConsumerRegs>();
    const int ctid = tid - 128, cw = ctid / 128, lane = tid % 32;
    const int w = (ctid % 128) / 32, g = lane / 4, t = lane % 4;
    const uint32_t a_wg = a_s + cw * kWgM * 128; /* this consumer's 64 rows of A */
    float d[BN / 2]; /* set by each tile's first MMA (accumulate = 0), never by other code */
    int s = 0, phase = 0;
    for (int job = cluster; job < pairs; job += clusters) { /* job: a pair of tiles */
        int pair_m, tile_n;
        bf16_grouped_tile<kGroupM>(job, pairs_m, tiles_n, &pair_m, &tile_n);
        const int m0 = (pair_m * kCluster + rank) * kBM, n0 = tile_n * BN;
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
                for (int r = 0; r < kCluster; ++r)
                    kb_mbar_arrive_cluster(&empty[prev], r);
            prev = s;
            if (++s == S)
                s = 0, phase ^= 1;
        }
        kb_wgmma_wait<0>();
        kb_fence_regs(d);
        if (lane == 0) /* the tile's last stage: the producers may refill it during the stores */
            for (int r = 0; r < kCluster; ++r)
                kb_mbar_arrive_cluster(&empty[prev], r);

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

/* A in boxes of 64 x 128 (kBK x kBM); B in boxes of 64 columns x 32
 * k-rows, a block's half of a panel; clusters of kCluster blocks. */
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_tma_rung rung = {.dtype = KB_BF16, .bm = kBM, .bk = kBK, .b_rows = kBK / kCluster,
                                     .cluster = kCluster, .threads = kThreads,
                                     .kernels = {(const void *)matmul_wgmma_cluster_kernel<256>,
                                                 (const void *)matmul_wgmma_cluster_kernel<192>},
                                     .smem = {kSmemBytes<256>, kSmemBytes<192>}};
    return kb_matmul_tma_setup(args, &rung, ctx);
}

/* The tile width that covers C in fewer rounds of the clusters, a
 * 192-wide tile counted 8% dearer (its A operand is read for 3/4 of the MMA
 * work). */
static int pick_tile_n(int M, int N, int clusters)
{
    const long m = KB_CEIL_DIV(M, kCluster * kBM);
    const long rounds256 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 256), clusters);
    const long rounds192 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 192), clusters);
    return rounds192 * 192 * 1.08 < rounds256 * 256 ? 192 : 256;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    kb_matmul_tma *c = (kb_matmul_tma *)ctx;
    const char *err;
    if (!kb_matmul_tma_begin(c, args, stream, &err))
        return err;
    const int bn = pick_tile_n(a->M, a->N, c->clusters[0]);
    const int resident = c->clusters[bn == 256 ? 0 : 1];
    const long pairs = (long)KB_CEIL_DIV(a->M, kCluster * kBM) * KB_CEIL_DIV(a->N, bn);
    const int grid = kCluster * (int)(pairs < resident ? pairs : resident); /* whole clusters */
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config =
        kb_cluster_config(&attr, grid, kThreads, kCluster, bn == 256 ? kSmemBytes<256> : kSmemBytes<192>, stream);
    const cudaError_t e =
        cudaLaunchKernelEx(&config, bn == 256 ? matmul_wgmma_cluster_kernel<256> : matmul_wgmma_cluster_kernel<192>,
                           c->map_a, c->map_b, a->M, a->N, a->K, kb_matmul_pair_stores(a), a->C16);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma_cluster[] = {
    {
        .name = "wgmma_cluster",
        .summary = "wgmma_persistent in 2-block clusters along M, each block loading half of the shared B by TMA multicast",
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
