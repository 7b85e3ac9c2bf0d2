/* matmul_fp8 wgmma_promoted: bf16's top rung (matmul wgmma_tma_store) on
 * e4m3, with the partial sums promoted into fp32 every 128 of K.  Hopper's
 * fp8 MMA keeps its running sum in a narrow accumulator (about 14 bits,
 * DeepSeek-V3's report), so each stage's four m64nBNk32 products start a
 * fresh partial (scale-d 0), and once they are done the consumer adds it
 * to a tile accumulator in fp32 registers on the CUDA cores: the recipe of
 * cuBLASLt without fast accumulation, and of KB_MATH_FP8's bound.  The two
 * sums take twice the registers of one, so the tile is 128 x BN with BN
 * 128 or 192 (bf16's 256 would need 256 registers a thread), and a
 * consumer waits for its stage's products before it promotes them: the
 * other consumer's products keep the tensor cores busy meanwhile.
 *
 * The rest is bf16's rung with bytes for elements: a stage is 128 k-columns
 * of A (128 x 128 bytes, one TMA box) and of B (N x K, K-major: BN rows of
 * 128 bytes, the cluster's two blocks loading half each and multicasting
 * it), in 128-byte swizzle; a producer warpgroup (40 registers) and two
 * consumers (232); clusters of two blocks along M walk the tiles in
 * groups of 8 pairs of block-rows, persistent; the epilogue multiplies by
 * scale_a scale_b, rounds to bf16, stages the tile with stmatrix and
 * stores it by TMA while the consumer goes on.
 *
 * Edges: TMA zero fill on loads (rows of A, B past M and N, k past K),
 * clipping on stores.  Rows that no tensor map describes (K not a multiple
 * of 16, N not of 8, unaligned pointers) take matmul_fp8 naive.  Needs
 * sm_90a.
 *
 * Builds on matmul wgmma_tma_store (bf16): e4m3 operands and fp32
 * promotion; tiles half as wide.
 * Measured: not yet on a GPU (no machine was lent after it was written);
 * docs/notes/fp8.md holds the prediction, 1200-1450 TFLOP/s at 4096^3 and
 * 8192^3 (0.85-1.0x cublaslt), and the runs to make first.
 * Gap to the limit: the H200's fp8 ceiling (wgmma_fp8_peak) measured 1813
 * TFLOP/s; cuBLASLt ran 1345 at 4096^3 and 1424 at 8192^3 in that call. */
#include <stdint.h>
#include <cuda.h>
#include <stdlib.h>
#include "ops/matmul_fp8.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"

extern "C" const kb_variant matmul_fp8_naive[];

namespace {
constexpr int kBM = 128, kBK = 128;                    /* block tile: 128 x BN x 128 (bytes of K) */
constexpr int kCluster = 2;                            /* blocks a cluster, along M */
constexpr int kConsumers = 2, kThreads = (kConsumers + 1) * 128; /* + the producer, warpgroup 0 */
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the SM's register file");
constexpr int kAStageBytes = kBM * kBK;
template <int BN> constexpr int kBStageBytes = BN * kBK;
constexpr int kCPanelBytes = 64 * 128;                 /* a 64 x 64 bf16 panel of C, one swizzle line a row */
template <int BN> constexpr int kCBytes = kConsumers * (BN / 64) * kCPanelBytes; /* a whole tile staged */
template <int BN>
constexpr int kStages = (227 * 1024 - 1024 - kCBytes<BN>) / (kAStageBytes + kBStageBytes<BN>);
template <int BN> constexpr int kSmemBytes = kStages<BN> * (kAStageBytes + kBStageBytes<BN>) + kCBytes<BN> + 1024;
static_assert(kStages<128> == 6 && kStages<192> == 4, "the rings of 6 stages of 32 KiB, or 4 of 40");
constexpr int kBRows = 32;                             /* B's TMA boxes: 128 bytes x 32 rows */

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kConsumers;                 /* 64 rows per consumer: one m64 MMA */
constexpr int kGroupM = 8;                             /* cluster order: 8 pairs of block-rows a group */

/* One consumer's 64 x BN tile, times `scale`, to C at (row0, n0) through
 * its staging buffer c_wg, as bf16's rung stores (warp w's rows 16w..,
 * stmatrix into 128-byte swizzled 64 x 64 panels), all BN / 64 panels in
 * one pass. */
template <int BN>
__device__ __forceinline__ void store_tile(const float (&d)[BN / 2], float scale, const CUtensorMap *map_c,
                                           uint32_t c_wg, int row0, int n0, int cw, int w, int lane)
{
    constexpr int P = BN / 64;
    const bool leader = w == 0 && lane == 0;
    const int row = w * 16 + (lane / 8 % 2) * 8 + lane % 8; /* the row whose address this lane gives */
    const int half = lane / 16;                             /* columns +0 or +8 of the group */
    if (leader)
        kb_bulk_wait_read(); /* the buffer's last stores have read it */
    kb_warpgroup_sync(1 + cw);
#pragma unroll
    for (int j = 0; j < P * 4; ++j) {
        const int f = 8 * j;                   /* d[f..f+7]: the 16-column group's fragment */
        const int chunk = (j % 4) * 2 + half;  /* 16-byte chunk of the panel row */
        const uint32_t addr = c_wg + (j / 4) * kCPanelBytes + row * 128 + ((chunk ^ (row % 8)) * 16);
        kb_stmatrix_x4(addr, kb_pack16<bf16>(d[f] * scale, d[f + 1] * scale),
                       kb_pack16<bf16>(d[f + 2] * scale, d[f + 3] * scale),
                       kb_pack16<bf16>(d[f + 4] * scale, d[f + 5] * scale),
                       kb_pack16<bf16>(d[f + 6] * scale, d[f + 7] * scale));
    }
    kb_fence_proxy_async(); /* the writes -> the copy engine */
    kb_warpgroup_sync(1 + cw);
    if (leader) {
#pragma unroll
        for (int p = 0; p < P; ++p)
            kb_tma_store_2d(map_c, n0 + p * 64, row0, c_wg + p * kCPanelBytes);
        kb_bulk_commit();
    }
}

/* This block's half of one stage of B (rows BN / 2 rank.. of the tile's,
 * 128 bytes of K each), multicast to both blocks of the cluster. */
template <int BN>
__device__ __forceinline__ void load_b(uint32_t dst, const CUtensorMap *map, int n0, int k0, int rank,
                                       unsigned long long *bar)
{
    const uint16_t both = (1u << kCluster) - 1;
#pragma unroll
    for (int p = 0; p < BN / 64; ++p) {
        const int row = rank * (BN / 2) + p * kBRows;
        kb_tma_load_2d_multicast(dst + row * 128, map, k0, n0 + row, bar, both);
    }
}

/* Consumer cw's products over one stage into the partial sum: four k32
 * slices, each 32 bytes further along the 128-byte rows of A and B; the
 * first sets the partial (scale-d 0). */
template <int BN>
__device__ __forceinline__ void mma_stage(float (&part)[BN / 2], uint32_t a_base, uint32_t b_base, int cw)
{
#pragma unroll
    for (int j = 0; j < kBK / 32; ++j)
        kb_wgmma_ss<BN, KbWgmmaType::e4m3>(part, kb_wgmma_desc(a_base + cw * kWgM * 128 + j * 32, 16, 1024),
                                           kb_wgmma_desc(b_base + j * 32, 16, 1024), j > 0);
}

#endif
}

template <int BN>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_fp8_wgmma_promoted_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                      const __grid_constant__ CUtensorMap map_c, const float *scale_a,
                                      const float *scale_b, int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int S = kStages<BN>, kBBytes = kBStageBytes<BN>;
    __shared__ unsigned long long full[S];  /* stage s holds its tile: one phase per fill */
    __shared__ unsigned long long empty[S]; /* stage s was read: one phase per use */
    extern __shared__ __align__(128) unsigned char smem[];
    const int pairs_m = KB_CEIL_DIV(M, kCluster * kBM), tiles_n = KB_CEIL_DIV(N, BN), pairs = pairs_m * tiles_n;
    const int tid = threadIdx.x, wg = tid / 128, rank = kb_cluster_rank();
    const int cluster = blockIdx.x / kCluster, clusters = gridDim.x / kCluster;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + S * kAStageBytes;
    const uint32_t c_s = b_s + S * kBBytes;

    const int k_tiles = KB_CEIL_DIV(K, kBK);
    if (tid == 0) {
        kb_tma_prefetch_map(&map_a);
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
                    load_b<BN>(b_s + s * kBBytes, &map_b, n0, kt * kBK, rank, &full[s]);
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

    kb_setmaxnreg_inc<kConsumerRegs>();
    const int ctid = tid - 128, cw = ctid / 128, lane = tid % 32;
    const int w = (ctid % 128) / 32;
    const uint32_t c_wg = c_s + cw * (BN / 64) * kCPanelBytes;
    const float scale = *scale_a * *scale_b;
    float part[BN / 2]; /* one stage's products, set by its first MMA */
    float acc[BN / 2];  /* the tile's sum in fp32 */
    int s = 0, phase = 0;
    for (int job = cluster; job < pairs; job += clusters) {
        int pair_m, tile_n;
        bf16_grouped_tile<kGroupM>(job, pairs_m, tiles_n, &pair_m, &tile_n);
        const int m0 = (pair_m * kCluster + rank) * kBM, n0 = tile_n * BN;
        for (int kt = 0; kt < k_tiles; ++kt) {
            kb_mbar_wait(&full[s], phase);
            kb_fence_regs(part);
            kb_wgmma_fence();
            mma_stage<BN>(part, a_s + s * kAStageBytes, b_s + s * kBBytes, cw);
            kb_wgmma_commit();
            kb_wgmma_wait<0>();
            kb_fence_regs(part);
            if (lane == 0) /* the stage is read: back to both blocks' producers */
                for (int r = 0; r < kCluster; ++r)
                    kb_mbar_arrive_cluster(&empty[s], r);
            if (++s == S)
                s = 0, phase ^= 1;
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) /* the promotion */
                acc[i] = kt ? acc[i] + part[i] : part[i];
        }
        store_tile<BN>(acc, scale, &map_c, c_wg, m0 + cw * kWgM, n0, cw, w, lane);
    }
    if (ctid % 128 == 0)
        kb_bulk_wait_read(); /* the block's shared memory outlives the last stores' reads of it */
#else
    (void)map_a, (void)map_b, (void)map_c, (void)scale_a, (void)scale_b, (void)M, (void)N, (void)K;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

typedef void (*fp8_kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const float *, const float *, int,
                           int, int);
static const fp8_kernel kKernels[2] = {matmul_fp8_wgmma_promoted_kernel<128>,
                                       matmul_fp8_wgmma_promoted_kernel<192>};
static const int kTileN[2] = {128, 192}, kSmem[2] = {kSmemBytes<128>, kSmemBytes<192>};

/* The maps of the operands they were made for, and the clusters of each
 * kernel that fit at once. */
typedef struct {
    kb_encode_tiled_fn encode;
    CUtensorMap map_a, map_b, map_c;
    kb_matmul_fp8_args made_for;
    int clusters[2];
} fp8_tma;

/* Tensor maps describe rows that start 16-byte aligned. */
static bool maps_apply(const kb_matmul_fp8_args *a)
{
    return a->K % 16 == 0 && a->N % 8 == 0 && kb_aligned(a->A, 16) && kb_aligned(a->B, 16) && kb_aligned(a->C, 16);
}

/* A in boxes of 128 x 128 bytes, B of 128 x 32 (a block's share of a
 * panel), C of 64 x 64 bf16 (a staging panel). */
static const char *make_maps(fp8_tma *t, const kb_matmul_fp8_args *a)
{
    const char *err = kb_encode_8_2d(t->encode, &t->map_a, a->A, a->K, a->M, kBK, kBM);
    if (!err)
        err = kb_encode_8_2d(t->encode, &t->map_b, a->B, a->K, a->N, kBK, kBRows);
    if (!err)
        err = kb_encode_16_2d(t->encode, &t->map_c, KB_BF16, a->C, a->N, a->M, 64, 64);
    t->made_for = *a;
    if (err)
        t->made_for.A = NULL;
    return err;
}

static const char *setup(const void *args, void **ctx)
{
    fp8_tma *t = (fp8_tma *)calloc(1, sizeof *t);
    if (!t)
        return "out of host memory";
    const char *err = kb_tensor_map_encoder(&t->encode);
    int dev = 0, sms = 0;
    if (!err)
        err = kb_cuda_status(cudaGetDevice(&dev));
    if (!err)
        err = kb_cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    const void *const kernels[2] = {(const void *)kKernels[0], (const void *)kKernels[1]};
    if (!err)
        err = kb_setup_kernels(kernels, kSmem, 2, kThreads, kCluster, sms, t->clusters);
    if (!err && maps_apply((const kb_matmul_fp8_args *)args))
        err = make_maps(t, (const kb_matmul_fp8_args *)args);
    if (err) {
        free(t);
        return err;
    }
    *ctx = t;
    return NULL;
}

static void teardown(void *ctx) { free(ctx); }

/* The tile width that covers C in fewer rounds of the clusters, a
 * 128-wide tile counted 10% dearer (it reads A for 2/3 of the products
 * that a 192-wide one does). */
static int pick_tile(int M, int N, const int *clusters)
{
    const long m = KB_CEIL_DIV(M, kCluster * kBM);
    const long rounds128 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 128), clusters[0]);
    const long rounds192 = KB_CEIL_DIV(m * KB_CEIL_DIV(N, 192), clusters[1]);
    return rounds128 * 128 * 1.10 < rounds192 * 192 ? 0 : 1;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_matmul_fp8_args *a = (const kb_matmul_fp8_args *)args;
    fp8_tma *t = (fp8_tma *)ctx;
    if (!maps_apply(a))
        return matmul_fp8_naive[0].launch(args, NULL, stream);
    const kb_matmul_fp8_args *m = &t->made_for;
    if (m->A != a->A || m->B != a->B || m->C != a->C || m->M != a->M || m->N != a->N || m->K != a->K)
        KB_TRY(make_maps(t, a));
    const int i = pick_tile(a->M, a->N, t->clusters);
    const long pairs = (long)KB_CEIL_DIV(a->M, kCluster * kBM) * KB_CEIL_DIV(a->N, kTileN[i]);
    const int grid = kCluster * (int)(pairs < t->clusters[i] ? pairs : t->clusters[i]); /* whole clusters */
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t config = kb_cluster_config(&attr, grid, kThreads, kCluster, kSmem[i], stream);
    const cudaError_t e = cudaLaunchKernelEx(&config, kKernels[i], t->map_a, t->map_b, t->map_c, a->scale_a,
                                             a->scale_b, a->M, a->N, a->K);
    if (e != cudaSuccess)
        return cudaGetErrorString(e);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_fp8_wgmma_promoted[] = {
    {
        .name = "wgmma_promoted",
        .summary = "bf16's wgmma_tma_store on e4m3, partial sums promoted into fp32 every 128 of K",
        .dtype = KB_E4M3,
        .math = KB_MATH_FP8,
        .min_cc = 90,
        .unsupported = kb_sm90a_only,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
