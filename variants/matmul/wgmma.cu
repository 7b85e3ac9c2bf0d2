/* matmul wgmma (bf16): Hopper's warpgroup MMA.  Two warpgroups (8 warps)
 * share a 128x256 tile of C; each owns 64 rows and multiplies them with one
 * wgmma.mma_async.m64n256k16 per k16 step, its 64x256 fp32 accumulator
 * spread over the warpgroup's registers (128 a thread).  The operands come
 * straight from shared memory through 64-bit matrix descriptors, with no
 * ldmatrix and no per-warp fragments: A (128x64 per stage) is K-major, 128
 * bytes a row; B (64x256) is stored N-major, as it lies in global memory, in
 * four 64-column panels of 64 rows x 128 bytes (the descriptor's leading
 * byte offset steps between panels, the stride byte offset between groups of
 * 8 rows, and the MMA transposes it).  Both use the 128-byte swizzle: chunk
 * ^ (row % 8) within each 1024-byte group of 8 rows, the layout the
 * descriptors name, and conflict-free for the tensor cores' reads.
 *
 * Loads are still cp.async by all 256 threads (12 16-byte copies a thread a
 * tile), into a 4-stage ring (192 KiB).  wgmma is asynchronous: a warpgroup
 * issues its 4 MMAs for tile k, commits them and waits only for tile k-1's,
 * so the tensor cores stay busy across the barrier; the ring then holds tile
 * k-1 (still being read), k, and two tiles in flight.  Copies are made
 * visible to the MMAs (the async proxy) by fence.proxy.async before the
 * barrier.
 *
 * Edges: zero-filled copies and checked stores as in mma_sync; element-wise
 * copies when K or N is not a multiple of 8.  Every shape runs.
 * Needs sm_90a (wgmma): the kernel body exists only in the sm_90a cubin
 * (meson.build's kb_sm90a), and the variant SKIPs on any GPU but compute
 * capability 9.0.
 *
 * Builds on mma_sync_swizzled: wgmma from swizzled shared memory replaces
 * ldmatrix + mma.sync.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2): 577 TFLOP/s
 * at 4096^3 (0.74x cublas), 614 at 8192^3 (0.79x), 0.56-0.60x at the
 * transformer shapes.
 * Gap to the limit: cublas (781 TFLOP/s at 4096^3), the run's bf16
 * ceiling 967, ~990 dense peak on H100 SXM.
 * What is left: the loads still cost every thread issue slots and
 * registers (TMA: the next rung), only two tiles are in flight, and the
 * epilogue writes C straight from registers.
 * The f16 form: the same kernel on f16 operands.  H200
 * (results/h200/kbench-20261202-075017.csv): 561.5 TFLOP/s at 4096^3 and
 * 598.1 at 8192^3, 59.1% and 62.9% of the 951 TFLOP/s ceiling, 0.74x and
 * 0.79x cublas (f16). */
#include <stdint.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"

namespace {
constexpr int kBM = 128, kBN = 256, kBK = 64;          /* block tile */
constexpr int kWarpgroups = 2, kThreads = kWarpgroups * 128;
constexpr int kStages = 4;
constexpr int kAStageBytes = kBM * kBK * 2, kBStageBytes = kBK * kBN * 2;
constexpr int kSmemBytes = kStages * (kAStageBytes + kBStageBytes) + 1024; /* + alignment */
static_assert(kBK * 2 == 128, "A's rows are one 128-byte swizzle line");
static_assert(kBM * kBK / 8 % kThreads == 0 && kBK * kBN / 8 % kThreads == 0, "equal chunks per thread");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kWarpgroups;                /* 64 rows per warpgroup: one m64 MMA */
constexpr int kAhead = kStages - 2, kGroupM = 16;      /* tiles loaded ahead; block order */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

/* Byte offset of 16-byte chunk ch of row r in the 128-byte-swizzled layout
 * (rows of 128 bytes, the stage 1024-aligned). */
__device__ __forceinline__ uint32_t sw128(int r, int ch) { return r * 128 + ((ch ^ (r & 7)) * 16); }

#endif
}

/* H: the 16-bit element type, bf16 or f16. */
template <bool Vec, typename H>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_kernel(int M, int N, int K, bool pair,
                                                                 const uint16_t *__restrict__ A,
                                                                 const uint16_t *__restrict__ B,
                                                                 uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(128) unsigned char smem[];
    int tile_m, tile_n;
    bf16_block_tile<kGroupM>(&tile_m, &tile_n);
    const int m0 = tile_m * kBM, n0 = tile_n * kBN;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + kStages * kAStageBytes;

    /* Tile kt of A (rows m0.., columns 64kt..) and of B (rows 64kt..,
     * columns n0..) into stage s.  B's chunk ch of row r goes to panel
     * ch / 8, chunk ch % 8 there. */
    auto load_tile = [&](int s, int kt) {
        const int k0 = kt * kBK;
#pragma unroll(Vec ? kBM * kBK / 8 / kThreads : 1) /* the element copies: one chunk at a time, few registers */
        for (int i = 0; i < kBM * kBK / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / 8, ch = c % 8;
            bf16_load_chunk<Vec>(a_s + s * kAStageBytes + sw128(r, ch), A, m0 + r, k0 + ch * 8, M, K, K);
        }
#pragma unroll(Vec ? kBK * kBN / 8 / kThreads : 1)
        for (int i = 0; i < kBK * kBN / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / (kBN / 8), ch = c % (kBN / 8);
            bf16_load_chunk<Vec>(b_s + s * kBStageBytes + (ch / 8) * kPanelBytes + sw128(r, ch % 8), B, k0 + r,
                                 n0 + ch * 8, K, N, N);
        }
    };

    float d[128]; /* set by the first MMA (accumulate = 0), never by other code: that would serialize the MMAs */
    const int k_tiles = KB_CEIL_DIV(K, kBK);
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
        if (s < k_tiles)
            load_tile(s, s);
        bf16_cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        bf16_cp_async_wait<kAhead - 1>();
        kb_fence_proxy_async(); /* this thread's copies -> the MMAs */
        __syncthreads(); /* tile kt is in; both warpgroups' MMAs of tile kt - 2 are done */
        if (kt + kAhead < k_tiles)
            load_tile((kt + kAhead) % kStages, kt + kAhead);
        bf16_cp_async_commit();

        /* A: this warpgroup's 64 rows, k16 step j 32 bytes into the rows;
         * leading offset unused (one swizzle line holds all of K), stride
         * 1024 between groups of 8 rows.  B: k16 step j 16 rows (2048
         * bytes) down; leading offset one panel (64 columns), stride 1024
         * between groups of 8 rows. */
        const uint32_t a_base = a_s + s * kAStageBytes + wg * kWgM * 128, b_base = b_s + s * kBStageBytes;
        kb_fence_regs(d);
        kb_wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBK / 16; ++j)
            kb_wgmma_ss<kBN, KbWgmmaTypeOf<H>::value, KbWgmmaB::n_major>(
                d, kb_wgmma_desc(a_base + j * 32, 16, 1024), kb_wgmma_desc(b_base + j * 2048, kPanelBytes, 1024),
                kt > 0 || j > 0);
        kb_wgmma_commit();
        kb_wgmma_wait<1>();
        kb_fence_regs(d);
    }
    kb_wgmma_wait<0>();
    kb_fence_regs(d);

    /* The accumulator as mma.sync's m16n8 tiles side by side: warp w of the
     * warpgroup holds rows 16w.., d[4j..4j+1] at (row g, columns 8j + 2t,
     * +1) and d[4j+2..4j+3] at row g + 8, g = lane / 4, t = lane % 4. */
    const int w = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int r = m0 + wg * kWgM + w * 16 + g;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
        const int c = n0 + j * 8 + 2 * t;
        kb_store_pair16<H>(C, M, N, pair, r, c, d[4 * j], d[4 * j + 1]);
        kb_store_pair16<H>(C, M, N, pair, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
#else
    (void)M, (void)N, (void)K, (void)pair, (void)A, (void)B, (void)C;
    __trap(); /* no wgmma on this arch: the variant SKIPs here */
#endif
}

/* Both instantiations use more than the default 48 KiB of shared memory:
 * opted in once here, outside the timed launches. */
template <typename H>
static const char *setup(const void *args, void **ctx)
{
    (void)args;
    *ctx = NULL;
    const void *kernels[] = {(const void *)matmul_wgmma_kernel<true, H>, (const void *)matmul_wgmma_kernel<false, H>};
    for (const void *k : kernels) {
        const char *err =
            kb_cuda_status(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
        if (err)
            return err;
    }
    return NULL;
}

template <typename H>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    (void)ctx;
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const bool vec = a->K % 8 == 0 && a->N % 8 == 0 && kb_aligned(a->A16, 16) && kb_aligned(a->B16, 16);
    const bool pair = kb_matmul_pair_stores(a);
    const dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    if (vec)
        matmul_wgmma_kernel<true, H><<<grid, kThreads, kSmemBytes, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16,
                                                                          a->C16);
    else
        matmul_wgmma_kernel<false, H><<<grid, kThreads, kSmemBytes, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16,
                                                                           a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma[] = {
    {
        .name = "wgmma",
        .summary = "sm_90a wgmma m64n256k16 from 128B-swizzled smem descriptors, 2 warpgroups, 4-stage cp.async, 128x256x64",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 90,
        .unsupported = kb_sm90a_only, /* wgmma exists on compute capability 9.0 only (sm_90a) */
        .setup = setup<bf16>,
        .launch = launch<bf16>,
    },
    {
        .name = "wgmma",
        .summary = "the same in f16",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .min_cc = 90,
        .unsupported = kb_sm90a_only,
        .setup = setup<__half>,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
