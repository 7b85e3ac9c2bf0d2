/* matmul wgmma_tma_store (bf16): wgmma_cluster with its epilogue through
 * shared memory and TMA stores.  Each consumer warpgroup converts its 64
 * rows of the tile to bf16 and writes them with stmatrix into a 128-byte
 * swizzled staging buffer (64 x 64 panels, conflict-free), then one thread
 * hands each panel to a TMA store and the warpgroup goes on to its next
 * tile while the copy engine writes C.  The store clips rows and columns
 * outside C, so edge tiles need no checks.  The staging buffer takes shared
 * memory from the ring: at 128x256 it holds half a warpgroup's tile (two
 * panels), filled twice, so the ring keeps 4 stages; at 128x192 one panel,
 * filled three times, so that the ring keeps 5 (the N = 768 shapes wait on
 * their loads, not on the stores).  Before a buffer is written again, the
 * thread that stored from it waits until the copy engine has read it.
 * When one round of clusters covers C (the N = 768 shapes), the loads tell
 * L2 what to keep: B's lines, read by every pair of block-rows, are
 * evict_last, and A's, read at once by one block-row's tiles, evict_first.
 *
 * Edges: TMA zero fill on loads, clipping on stores; rows that are not
 * 16-byte aligned (or C not 16-byte aligned) take wgmma's kernel.  Every
 * shape runs.  Needs sm_90a.
 *
 * Builds on wgmma_cluster: stmatrix + TMA stores in place of 4-byte global
 * stores from the accumulators.  The loads and descriptors are templated on
 * the operands' layout (kb_gemm_layout): matmul_backward wgmma_transposed
 * runs the kernel's NT and TN forms.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2, 1980 MHz):
 * 792 TFLOP/s at 4096^3 (1.01x cublas), 800 at 8192^3 (1.02x); 1.00x
 * at 4096x3072x768, 0.99x at 4096x768x3072, 0.94x at 4096x768x768.
 * Gap to the limit: 83% of the run's bf16 ceiling (967 TFLOP/s, wgmma from
 * shared memory) at 8192^3.  What is left: the consumers wait on their
 * loads more than on the tensor cores (ncu's stall reasons at N = 768),
 * and 4096^3 takes 3.9 rounds of clusters, run as 4.
 * The f16 form: the same kernel on f16 operands.  H200
 * (results/h200/kbench-20261202-075017.csv): 767.3 TFLOP/s at 8192^3 and
 * 756.2 at 4096^3, 80.7% and 79.5% of the 951 TFLOP/s ceiling, 1.02x and
 * 0.99x cublas (f16). */
#include <stdint.h>
#include <cuda.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"
#include "variants/matmul/wgmma_tma_store.h"

namespace {
constexpr int kBM = 128, kBK = 64;                     /* block tile: 128 x BN x 64, BN 256 or 192 */
constexpr int kCluster = 2;                            /* blocks a cluster, along M */
constexpr int kConsumers = 2, kThreads = (kConsumers + 1) * 128; /* + the producer, warpgroup 0 */
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the SM's register file");
constexpr int kAStageBytes = kBM * kBK * 2;
template <int BN> constexpr int kBStageBytes = kBK * BN * 2;
constexpr int kCPanelBytes = 64 * 128;                /* a 64 x 64 bf16 panel of C, one swizzle line a row */
/* Panels of C a consumer stages at once: half its 256-wide tile, or one of
 * a 192-wide one's three, which leaves the ring a fifth stage. */
template <int BN> constexpr int kCPanels = BN == 256 ? 2 : 1;
template <int BN> constexpr int kCBytes = kConsumers * kCPanels<BN> * kCPanelBytes;
/* As many stages as fit in 227 KiB beside the staging buffer: 4 of 48 KiB + 32, or 5 of 40 + 16. */
template <int BN>
constexpr int kStages = (227 * 1024 - 1024 - kCBytes<BN>) / (kAStageBytes + kBStageBytes<BN>);
template <int BN> constexpr int kSmemBytes = kStages<BN> * (kAStageBytes + kBStageBytes<BN>) + kCBytes<BN> + 1024;
static_assert(kStages<256> == 4 && kStages<192> == 5, "the rings the header describes");
static_assert(kBK * 2 == 128, "A's rows and B's panels are one 128-byte swizzle line wide");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kConsumers;                 /* 64 rows per consumer: one m64 MMA */
constexpr int kGroupM = 8;                             /* cluster order: 8 pairs of block-rows a group */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

/* One consumer's 64 x BN accumulator to C at (row0, n0), kCPanels panels
 * at a time through its staging buffer c_wg.  Warp w holds rows 16w..16w+15;
 * for each 16-column group j, stmatrix writes its four 8x8 pieces (rows
 * +0 / +8, columns +0 / +8), each row's 16-byte chunk at its 128-byte
 * swizzled place (chunk ^ row % 8), the layout the tensor map reads. */
template <int BN, typename H>
__device__ __forceinline__ void store_tile(const float (&d)[BN / 2], const CUtensorMap *map_c, uint32_t c_wg,
                                           int row0, int n0, int cw, int w, int lane)
{
    constexpr int P = kCPanels<BN>, kPasses = BN / 64 / P;
    const bool leader = w == 0 && lane == 0;
    const int row = w * 16 + (lane / 8 % 2) * 8 + lane % 8; /* the row whose address this lane gives */
    const int half = lane / 16;                             /* columns +0 or +8 of the group */
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
        if (leader)
            kb_bulk_wait_read(); /* the buffer's last stores have read it */
        kb_warpgroup_sync(1 + cw);
#pragma unroll
        for (int jj = 0; jj < P * 4; ++jj) {
            const int j = pass * P * 4 + jj, f = 8 * j; /* d[f..f+7]: the group's fragment */
            const int chunk = (jj % 4) * 2 + half;      /* 16-byte chunk of the panel row */
            const uint32_t addr = c_wg + (jj / 4) * kCPanelBytes + row * 128 + ((chunk ^ (row % 8)) * 16);
            kb_stmatrix_x4(addr, kb_pack16<H>(d[f], d[f + 1]), kb_pack16<H>(d[f + 2], d[f + 3]),
                        kb_pack16<H>(d[f + 4], d[f + 5]), kb_pack16<H>(d[f + 6], d[f + 7]));
        }
        kb_fence_proxy_async(); /* the writes -> the copy engine */
        kb_warpgroup_sync(1 + cw);
        if (leader) {
#pragma unroll
            for (int p = 0; p < P; ++p)
                kb_tma_store_2d(map_c, n0 + (pass * P + p) * 64, row0, c_wg + p * kCPanelBytes);
            kb_bulk_commit();
        }
    }
}

/* One stage of A, rows m0.. and k-columns k0.. of the block tile, by one
 * TMA load of kBK x kBM (NN, NT: K-major rows of 128 bytes), or TN's two
 * 64 x kBK panels (A^T stored K x M: each panel 64 rows of C, its rows
 * the k-slices), consumer cw's panel at cw * kPanelBytes. */
template <kb_gemm_layout L>
__device__ __forceinline__ void load_a(uint32_t dst, const CUtensorMap *map, int m0, int k0, unsigned long long *bar,
                                       bool hint, uint64_t policy)
{
    if constexpr (L == KB_GEMM_TN) {
        for (int p = 0; p < kBM / 64; ++p)
            kb_tma_load_2d_hinted(dst + p * kPanelBytes, map, m0 + p * 64, k0, bar, hint, policy);
    } else {
        kb_tma_load_2d_hinted(dst, map, k0, m0, bar, hint, policy);
    }
}

/* This block's half of one stage of B, multicast to both blocks of the
 * cluster in BN / 64 boxes of 64 x 32: NN, TN (B stored K x N) k-rows
 * 32 rank.. of each 64-column panel; NT (B stored N x K, K-major like A)
 * its rows BN / 2 rank.., 128 bytes each. */
template <int BN, kb_gemm_layout L>
__device__ __forceinline__ void load_b(uint32_t dst, const CUtensorMap *map, int n0, int k0, int rank,
                                       unsigned long long *bar, bool hint, uint64_t policy)
{
    constexpr int kRows = kBK / kCluster; /* 32: a box's rows */
    const uint16_t both = (1u << kCluster) - 1;
#pragma unroll
    for (int p = 0; p < BN / 64; ++p) {
        if constexpr (L == KB_GEMM_NT) {
            const int row = rank * (BN / 2) + p * kRows;
            kb_tma_load_2d_multicast_hinted(dst + row * 128, map, k0, n0 + row, bar, both, hint, policy);
        } else {
            kb_tma_load_2d_multicast_hinted(dst + p * kPanelBytes + rank * kRows * 128, map, n0 + p * 64,
                                            k0 + rank * kRows, bar, both, hint, policy);
        }
    }
}

/* Consumer cw's MMAs over one stage, kBK / 16 k-slices; the first of a
 * tile (first_tile false) sets d.  Descriptors as in wgmma: a K-major
 * operand steps 32 bytes a slice within its 128-byte rows, an MN-major one
 * 16 rows (2048 bytes), its leading offset the stride of 64-wide panels. */
template <int BN, typename H, kb_gemm_layout L>
__device__ __forceinline__ void mma_stage(float (&d)[BN / 2], uint32_t a_base, uint32_t b_base, int cw, bool accumulate)
{
    constexpr KbWgmmaType T = KbWgmmaTypeOf<H>::value;
    constexpr KbWgmmaB BMajor = L == KB_GEMM_NT ? KbWgmmaB::k_major : KbWgmmaB::n_major;
#pragma unroll
    for (int j = 0; j < kBK / 16; ++j) {
        const uint64_t db = L == KB_GEMM_NT ? kb_wgmma_desc(b_base + j * 32, 16, 1024)
                                            : kb_wgmma_desc(b_base + j * 2048, kPanelBytes, 1024);
        if constexpr (L == KB_GEMM_TN)
            kb_wgmma_ss_mn<BN, T, BMajor>(d, kb_wgmma_desc(a_base + cw * kPanelBytes + j * 2048, kPanelBytes, 1024),
                                          db, accumulate || j > 0);
        else
            kb_wgmma_ss<BN, T, BMajor>(d, kb_wgmma_desc(a_base + cw * kWgM * 128 + j * 32, 16, 1024), db,
                                       accumulate || j > 0);
    }
}

#endif
}

/* H: the 16-bit element type, bf16 or f16; L: the operands' layout (the
 * forward's NN, or matmul_backward's NT and TN: kb_gemm_layout). */
template <int BN, typename H, kb_gemm_layout L>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_tma_store_kernel(const __grid_constant__ CUtensorMap map_a,
                                                                            const __grid_constant__ CUtensorMap map_b,
                                                                            const __grid_constant__ CUtensorMap map_c,
                                                                            int M, int N, int K)
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
    const uint32_t c_s = b_s + S * kBBytes; /* the staging buffer, 1024-aligned too */

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
        kb_tma_prefetch_map(&map_a); /* overlaps the first loads' descriptor fetch with the setup */
        kb_tma_prefetch_map(&map_b);
        kb_tma_prefetch_map(&map_c);
#pragma unroll
        for (int s = 0; s < S; ++s) {
            kb_mbar_init(&full[s], 1);
            kb_mbar_init(&empty[s], kCluster * kConsumers * 4); /* one arrival per consumer warp of the cluster */
        }
        kb_mbar_init_fence();
    }
    kb_cluster_sync_relaxed(); /* both blocks' mbarriers are initialised before any multicast or remote arrival */

    if (wg == 0) {
        /* The producer, as in wgmma_persistent; its empty waits now count
         * both blocks' consumers.  Its share of B: k-rows 32 rank.. of each
         * panel (maps_b's boxes are 64 x 32), to both blocks. */
        kb_setmaxnreg_dec<kProducerRegs>();
        if (tid == 0) {
            /* When one round of clusters covers C, the tiles of a block-row
             * all run at once and read A's lines fresh, so those may leave
             * L2 first, while B's, which every pair of block-rows reads, stay
             * (evict_last).  Over several rounds L2's default serves better. */
            const bool one_round = pairs <= clusters;
            const uint64_t keep = kb_l2_evict_last_policy(), stream = kb_l2_evict_first_policy();
            int s = 0, phase = 0;
            for (int job = cluster; job < pairs; job += clusters) { /* job: a pair of tiles */
                int pair_m, tile_n;
                bf16_grouped_tile<kGroupM>(job, pairs_m, tiles_n, &pair_m, &tile_n);
                const int m0 = (pair_m * kCluster + rank) * kBM, n0 = tile_n * BN;
                for (int kt = 0; kt < k_tiles; ++kt) {
                    kb_mbar_wait(&empty[s], phase ^ 1);
                    kb_mbar_arrive_expect(&full[s], kAStageBytes + kBBytes); /* all of B: both halves land here */
                    load_a<L>(a_s + s * kAStageBytes, &map_a, m0, kt * kBK, &full[s], one_round, stream);
                    load_b<BN, L>(b_s + s * kBBytes, &map_b, n0, kt * kBK, rank, &full[s], one_round, keep);
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
    const int w = (ctid % 128) / 32;
    const uint32_t c_wg = c_s + cw * kCPanels<BN> * kCPanelBytes; /* and its staging panels */
    float d[BN / 2]; /* set by each tile's first MMA (accumulate = 0), never by other code */
    int s = 0, phase = 0;
    for (int job = cluster; job < pairs; job += clusters) { /* job: a pair of tiles */
        int pair_m, tile_n;
        bf16_grouped_tile<kGroupM>(job, pairs_m, tiles_n, &pair_m, &tile_n);
        const int m0 = (pair_m * kCluster + rank) * kBM, n0 = tile_n * BN;
        int prev = 0;
        for (int kt = 0; kt < k_tiles; ++kt) {
            kb_mbar_wait(&full[s], phase); /* tile kt is in */

            kb_fence_regs(d);
            kb_wgmma_fence();
            mma_stage<BN, H, L>(d, a_s + s * kAStageBytes, b_s + s * kBBytes, cw, kt > 0);
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

        store_tile<BN, H>(d, &map_c, c_wg, m0 + cw * kWgM, n0, cw, w, lane);
    }
    if (ctid % 128 == 0)
        kb_bulk_wait_read(); /* the block's shared memory outlives the last stores' reads of it */
#else
    (void)map_a, (void)map_b, (void)map_c, (void)M, (void)N, (void)K;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

typedef void (*cluster_kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, int, int, int);

/* The kernel's two tile widths and their shared memory, for element type
 * H and layout L. */
typedef struct {
    int bn;
    cluster_kernel kernel;
    int smem;
} tile_config;
template <typename H, kb_gemm_layout L>
static const tile_config kConfigs[2] = {
    {256, matmul_wgmma_tma_store_kernel<256, H, L>, kSmemBytes<256>},
    {192, matmul_wgmma_tma_store_kernel<192, H, L>, kSmemBytes<192>},
};

/* A in boxes of 64 x 128 (kBK x kBM; TN: 64 x 64 panels); B in boxes of
 * 64 x 32, a block's half of a panel (NT: of its rows); C in boxes of 64
 * x 64, a staging panel; clusters of kCluster blocks. */
template <typename H, kb_gemm_layout L>
static kb_matmul_tma_rung rung_of()
{
    const kb_matmul_tma_rung rung = {
        .dtype = KbDtypeOf<H>::value, .layout = L, .bm = kBM, .bk = kBK, .b_rows = kBK / kCluster, .c_rows = 64,
        .cluster = kCluster, .threads = kThreads,
        .kernels = {(const void *)kConfigs<H, L>[0].kernel, (const void *)kConfigs<H, L>[1].kernel},
        .smem = {kConfigs<H, L>[0].smem, kConfigs<H, L>[1].smem}};
    return rung;
}

kb_matmul_tma_rung kb_wgmma_tma_store_rung(kb_gemm_layout layout)
{
    return layout == KB_GEMM_NT ? rung_of<bf16, KB_GEMM_NT>()
           : layout == KB_GEMM_TN ? rung_of<bf16, KB_GEMM_TN>()
                                  : rung_of<bf16, KB_GEMM_NN>();
}

template <typename H>
static const char *setup(const void *args, void **ctx)
{
    const kb_matmul_tma_rung rung = rung_of<H, KB_GEMM_NN>();
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

const char *kb_wgmma_tma_store_launch(void *ctx, const kb_matmul_args *a, cudaStream_t stream)
{
    kb_matmul_tma *c = (kb_matmul_tma *)ctx;
    const char *err;
    if (!kb_matmul_tma_begin(c, a, stream, &err))
        return err;
    const int i = pick_tile_n(a->M, a->N, c->clusters[0]) == 256 ? 0 : 1;
    const int resident = c->clusters[i];
    const int bn = i == 0 ? 256 : 192;
    const long pairs = (long)KB_CEIL_DIV(a->M, kCluster * kBM) * KB_CEIL_DIV(a->N, bn);
    const int grid = kCluster * (int)(pairs < resident ? pairs : resident); /* whole clusters */
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = kb_cluster_config(&attr, grid, kThreads, kCluster, c->rung.smem[i], stream);
    const cudaError_t e = cudaLaunchKernelEx(&config, (cluster_kernel)c->rung.kernels[i], c->map_a, c->map_b, c->map_c,
                                             a->M, a->N, a->K);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    KB_LAUNCHED();
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    return kb_wgmma_tma_store_launch(ctx, (const kb_matmul_args *)args, stream);
}

extern "C" const kb_variant matmul_wgmma_tma_store[] = {
    {
        .name = "wgmma_tma_store",
        .summary = "wgmma_cluster with the epilogue through stmatrix into swizzled shared memory and TMA stores",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 90,
        .unsupported = kb_sm90a_only,
        .setup = setup<bf16>,
        .teardown = kb_matmul_tma_teardown,
        .launch = launch,
    },
    {
        .name = "wgmma_tma_store",
        .summary = "the same in f16",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .min_cc = 90,
        .unsupported = kb_sm90a_only,
        .setup = setup<__half>,
        .teardown = kb_matmul_tma_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
