/* attention flash_wgmma (bf16 and f16, sm_90a): FlashAttention-3's structure on
 * Hopper's wgmma and TMA.  A block owns 64 query rows per consumer
 * warpgroup (two consumers, three at D = 64) and one producer warpgroup,
 * one of whose threads issues every TMA load.  Q comes once by TMA; K and
 * V tiles of kBC keys (128; 64 at D = 256) stream through a ring of
 * stages, K and V with an mbarrier each (so S can start before V lands)
 * and an "empty" one each that the consumers' warps release: K's once S is
 * done, V's once P V is (kEarlyK; at D = 64 a stage goes back whole).
 * Every tile sits in shared memory as panels of 64 columns of D, one
 * 128-byte swizzle line a row.  Per key tile and consumer:
 *   S = Q K^T: wgmma m64n(kBC)k16, both operands from 128-byte-swizzled
 *     shared memory (K is the B operand in K-major form);
 *   online softmax on the accumulators: row max over a quad of lanes, exp2
 *     (one MUFU.EX2, subnormals flushed) with scale * log2(e) folded in;
 *     O is rescaled only when a row's maximum passes its reference point
 *     by more than 8 log2 units, which after the first tile is rare;
 *   O += P V: wgmma m64nDk16 with P as the A operand in registers (the
 *     accumulator's k16 slices, as bf16 pairs, are A's fragments) and V as
 *     an N-major B from shared memory.
 * Tensor maps are 3-D (D, keys or rows, heads), so rows past Tq or Tk
 * land as zeros; keys past Tk and under the causal mask (bottom-right
 * aligned: key j > i + Tk - Tq) score -inf, and key tiles wholly above a
 * block's last row are never loaded.  A row that sees no key writes zeros.
 * Causal blocks run longest first within groups of heads whose K and V fit
 * half of L2, so that the blocks in flight share K and V there.  Without
 * the mask the blocks are persistent, one an SM, each taking every
 * gridDim.x-th tile: the next tile's Q loads once the consumers have
 * issued their last S (a q_empty mbarrier), and its K and V as the ring
 * frees, under this tile's last softmax, P V and store.  At D = 128 the
 * tiles that do not make a whole round are dealt out by key tiles
 * (stream-K), a split tile's second part parked in global memory for the
 * block that holds its first to merge (for_each_piece).
 * Grouped-query attention: query head bh reads KV head bh / (H / Hkv).
 * Shapes: D of 64, 128 or 256; any B, H, Hkv, Tq and Tk.  Needs sm_90a.
 *
 * The consumers take turns at issuing their MMAs (ping-pong on named
 * barriers, round robin), and each issues tile t's S together with tile
 * t - 1's P V, so that its softmax of tile t runs while its own P V and
 * the others' MMAs keep the tensor cores busy (kSoftmaxUnderPV: ptxas must
 * be kept from sinking it below the wait for that P V).  At D = 64 a
 * tile's GEMMs are half as long against the same softmax, so three
 * consumers (192 rows a block, 160 registers a thread) take turns there,
 * and the other two's MMAs cover each one's softmax.
 *
 * D = 256 takes 64-key tiles: O is then 128 fp32 registers a consumer
 * thread, S 32 and P 16 bf16 pairs, where 128 keys would need 224 of the
 * 232 for the three alone; and Q (64 KiB) with two stages of K + V (64 KiB
 * each) fills 193 KiB of the 227.  S is wgmma m64n64k16, P V m64n256k16
 * over V's four panels (the B descriptor's leading byte offset is the
 * panel stride: 8 KiB here, 16 KiB at D = 128).
 *
 * Builds on flash_mma: the same algorithm, from mma.sync to wgmma with a
 * TMA producer warpgroup.
 * Measured (results/h100/kbench-20261127-195738.csv, 1980 MHz unless
 * noted, PyTorch's SDPA and cudnn in the same run): 694 TFLOP/s at
 * 2x16x4096x4096x128 (1.05x SDPA, 1.03x cudnn), 525 at
 * 4x16x4096x4096x64 (1.10x, 0.97x), causal 600 at 1920 MHz and 451 at
 * 1890 MHz (1.14x and 1.09x SDPA, 1.10x and 1.00x cudnn), 708 at the
 * GQA 2x32x4096x4096x128x8 (1.05x, 1.04x); 723 at 4x16x8192x8192x128
 * (1.05x SDPA) and 585 causal at 1860 MHz (0.96x, 0.91x); 805 at D = 256
 * and 681 causal (1.11x and 1.14x cudnn); 549 at the chunked prefill
 * 1x32x512x4096x128c (1.04x cudnn).
 * Gap to the limit: 72% of the run's bf16 ceiling (967 TFLOP/s) at
 * D = 128, where cuDNN's kernel reaches 70%; 83% at D = 256 (cuDNN 75%).
 * History:
 * docs/notes/attention.md.
 * The f16 form: the same kernel with f16 Q, K, V, P and O.  H200
 * (results/h200/kbench-20261202-075017.csv): 685.1 TFLOP/s at
 * 4x16x8192x8192x128 (72.1% of 951, 1.04x cudnn f16), 662.9 at
 * 2x16x4096x4096x128 (1.03x), 616.3 causal at 8192 (0.99x). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/tma.cuh"
#include "kernels/wgmma.cuh"
#include "variants/attention/attention_common.cuh"

namespace {
/* Consumer warpgroups of 64 query rows: three at D = 64, whose GEMMs are
 * half as long against the same softmax, so that two others' MMAs run
 * under each one's softmax; two elsewhere (registers: O alone is D / 2 a thread). */
template <int D> constexpr int kConsumers = D == 64 ? 3 : 2;
template <int D> constexpr int kBR = 64 * kConsumers<D>;      /* query rows a block */
template <int D> constexpr int kThreads = (kConsumers<D> + 1) * 128;
template <int D> constexpr int kBC = D == 256 ? 64 : 128; /* keys a tile */
/* A panel: 64 columns of D for Rows rows, one 128-byte swizzle line a row. */
template <int Rows> constexpr int kPanelBytes = Rows * 128;
template <int D> constexpr int kQBytes = D / 64 * kPanelBytes<kBR<D>>;  /* Q: kBR rows x D */
template <int D> constexpr int kKVBytes = D / 64 * kPanelBytes<kBC<D>>; /* K or V: kBC rows x D */
/* K + V stages: as many as fit beside Q in 227 KiB (2 at D = 256, 6 at
 * D = 64), but 2 of the 3 that fit at D = 128, which measured 0.4-0.9%
 * faster at 2x16x4096x4096x128 in three calls (docs/notes/attention.md). */
template <int D> constexpr int kStagesFit = (227 * 1024 - 1024 - kQBytes<D>) / (2 * kKVBytes<D>);
template <int D> constexpr int kStages = D == 128 ? 2 : kStagesFit<D>;
template <int D> constexpr int kSmemBytes = kQBytes<D> + 2 * kStages<D> * kKVBytes<D> + 1024;
static_assert(kStagesFit<128> == 3 && kStages<256> == 2 && kStages<128> == 2 && kStages<64> == 6,
              "the rings the header describes");
/* A block's slot for the part of a split tile that it parks for the block
 * before (for_each_piece): 16-byte vector i of consumer thread ct at
 * i * (consumer threads) + ct, i over its O accumulators, then its two
 * rows' reference points and partial sums; and a flag a consumer warp. */
template <int D> constexpr int kParked = D / 2 + 4;
template <int D> constexpr int64_t kSlotFloats = (int64_t)kConsumers<D> * 128 * kParked<D>;
constexpr int kSlotFlags = 3 * 4;
/* K's stage goes back once S is done, V's once P V is, and K tile t loads
 * before V tile t - 1 (S of tile t is issued with P V of tile t - 1): with
 * two or three stages the K tiles then load a P V sooner (+36% at D = 256,
 * +0.6% at D = 128).  Six stages at D = 64 lead far enough, and the second
 * release there cost 1.4%: a stage goes back whole after P V. */
template <int D> constexpr bool kEarlyK = kStages<D> < 6;

/* A tile's softmax runs under the consumer's own P V of the tile before
 * only if it comes before the wait for that P V, and ptxas sinks it below:
 * it packs P into bf16 as the exponentials come, and P's registers are the
 * P V's operand until the wait.  An arrival on softmax_done (which no one
 * waits on) that reads the row sums, and that ptxas keeps in order with
 * the wait, holds the softmax before it; V's stage then goes back after
 * the softmax.  +9% at D = 256 (+5% causal), +1.5% at D = 128 (level
 * causal); -1 to -2% at D = 64, where two other consumers' MMAs already
 * cover a softmax, and which keeps the old order. */
template <int D> constexpr bool kSoftmaxUnderPV = D >= 128;

/* Whether the persistent blocks split the last tiles (for_each_piece):
 * at D = 128, where tiles hold at least kSplitKeyTiles key tiles.  A
 * split costs each block a piece more (a pipeline's start and end) and
 * the merge; in one call against whole rounds it measured +0.6% at
 * 2x16x4096x4096x128 and +1.3% at the GQA 2x32x4096x4096x128x8, and lost
 * at 4x16x1000x1000x128 (8 key tiles a tile: -5 to -11%) and at D = 256
 * (-2%).  D = 64's three consumers' 160 registers the split's state
 * would spill. */
template <int D> constexpr bool kSplits = D == 128;
constexpr int kSplitKeyTiles = 32;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* At D = 128 the producer's two-stage ring takes 48 (40 spilled 24 bytes),
 * and the consumers 224 of their 232. */
template <int D> constexpr int kProducerRegs = kConsumers<D> == 3 ? 32 : D == 128 ? 48 : 40;
template <int D> constexpr int kConsumerRegs = kConsumers<D> == 3 ? 160 : D == 128 ? 224 : 232;
/* setmaxnreg moves registers within the block's launch share: 64K / threads, in steps of 8, a thread. */
template <int D> constexpr bool kRegsFit =
    kProducerRegs<D> * 128 + kConsumerRegs<D> * 128 * kConsumers<D> <= 65536 / kThreads<D> / 8 * 8 * kThreads<D>;
static_assert(kRegsFit<64> && kRegsFit<128> && kRegsFit<256>, "the block's registers");

/* All D / 64 panels of a tile of Rows rows (the box of map): rows y.. of head z. */
template <int D, int Rows>
__device__ __forceinline__ void load_tile(uint32_t dst, const CUtensorMap *map, int y, int z, unsigned long long *bar)
{
#pragma unroll
    for (int p = 0; p < D / 64; ++p)
        kb_tma_load_3d(dst + p * kPanelBytes<Rows>, map, p * 64, y, z, bar);
}

/* Ping-pong: consumer cw waits for its turn at the tensor cores (barrier
 * 1 + cw: its 128 threads and the 128 of the consumer before it), and
 * hands the turn on to the next. */
__device__ __forceinline__ void sched_wait(int cw)
{
    asm volatile("bar.sync %0, 256;\n" ::"r"(1 + cw) : "memory");
}
__device__ __forceinline__ void sched_signal(int to)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + to) : "memory");
}

/* 0, computed from x: as an address offset it makes an instruction wait for x. */
__device__ __forceinline__ int zero_from(float x) { return __float2int_rz(x * 0.f); }

/* S = Q K^T for this consumer's 64 rows and a tile of kBC keys, issued:
 * k16 step j is 32 bytes into the swizzle lines of panel j / 4, whose
 * stride is 128 rows in Q and kBC rows in K.  The caller fences the
 * registers and issues wgmma.fence once before a batch: a register written
 * between the fence and the batch's last MMA makes ptxas serialize every
 * MMA of the kernel. */
template <int D, typename H>
__device__ __forceinline__ void issue_s(float (&sc)[kBC<D> / 2], uint32_t q_wg, uint32_t k_t)
{
    /* Step j's descriptors are the first ones plus its byte offset / 16:
     * the 14-bit address field never carries (shared memory < 256 KiB). */
    const uint64_t dq = kb_wgmma_desc(q_wg, 16, 1024), dk = kb_wgmma_desc(k_t, 16, 1024);
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
        const uint32_t col = (j % 4) * 32;
        kb_wgmma_ss<kBC<D>, KbWgmmaTypeOf<H>::value>(sc, dq + (((j / 4) * kPanelBytes<kBR<D>> + col) >> 4),
                                                     dk + (((j / 4) * kPanelBytes<kBC<D>> + col) >> 4), j > 0);
    }
    kb_wgmma_commit();
}

/* O += P V, issued: the k16 slice kk of P is columns 16kk.. = 8-column
 * groups 2kk and 2kk + 1, already A's fragments.  V is B in N-major form:
 * rows 16kk.. of every panel, the panels (64 columns of D each) one
 * leading byte offset apart, 8-row groups 1024 bytes apart. */
template <int D, typename H>
__device__ __forceinline__ void issue_pv(float (&acc)[D / 2], const uint32_t (&p)[kBC<D> / 4], uint32_t v_t)
{
    const uint64_t dv = kb_wgmma_desc(v_t, kPanelBytes<kBC<D>>, 1024);
#pragma unroll
    for (int kk = 0; kk < kBC<D> / 16; ++kk) {
        const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
        kb_wgmma_rs<D, KbWgmmaTypeOf<H>::value, KbWgmmaB::n_major>(acc, a, dv + (kk * 16 * 128 >> 4), 1);
    }
    kb_wgmma_commit();
}

/* -inf for keys past Tk and, causal, above the diagonal, on the tiles that
 * reach them (this warp's rows start at wrow; rows r0 and r1 are this
 * thread's, its columns 8j + 2 t4 ..). */
template <int BC>
__device__ __forceinline__ void mask_tile(float (&sc)[BC / 2], int kv0, int Tk, int causal, int r0, int r1,
                                          int wrow, int diag, int t4)
{
    if (kv0 + BC <= Tk && !(causal && kv0 + BC - 1 > wrow + diag))
        return;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int key = kv0 + 8 * j + 2 * t4 + e;
            if (key >= Tk || (causal && key > r0 + diag))
                sc[4 * j + e] = -INFINITY;
            if (key >= Tk || (causal && key > r1 + diag))
                sc[4 * j + 2 + e] = -INFINITY;
        }
}

/* How far (in log2 units) a row's maximum may pass its reference point
 * before the reference moves: until then the probabilities reach up to
 * 2^kStale, which fp32 sums and bf16 holds as precisely, and O, l and the
 * reference stay as they are, so O / l is unchanged.  On most tiles no
 * row's maximum moves that far, and O's rescale is skipped (FlashAttention-
 * 4's lazy rescale). */
constexpr float kStale = 8.f;

/* Online softmax of a tile's scores in place, rows r0 (sc[4j], sc[4j+1])
 * and r1 (sc[4j+2], sc[4j+3]): the scores become the unnormalised
 * probabilities, with the rows' reference points m (a past maximum, at
 * most kStale under the present one), this thread's partial sums l and
 * the factors alpha that rescale O (1 where m stayed). */
template <int BC>
__device__ __forceinline__ void softmax(float (&sc)[BC / 2], float sl2, float &m0, float &m1, float &l0, float &l1,
                                        float &alpha0, float &alpha1)
{
    /* Each row's maximum in four chains, not one: a single chain of BC / 8
     * fmaxf waits out each one's latency, and the softmax waits on it. */
    static_assert(BC / 8 >= 4, "four chains need four pairs of scores");
    float a0[4], a1[4];
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) {
        const float p0 = fmaxf(sc[4 * j], sc[4 * j + 1]), p1 = fmaxf(sc[4 * j + 2], sc[4 * j + 3]);
        a0[j % 4] = j < 4 ? p0 : fmaxf(a0[j % 4], p0), a1[j % 4] = j < 4 ? p1 : fmaxf(a1[j % 4], p1);
    }
    const float mx0 = quad_max(fmaxf(fmaxf(m0, fmaxf(a0[0], a0[1])), fmaxf(a0[2], a0[3])));
    const float mx1 = quad_max(fmaxf(fmaxf(m1, fmaxf(a1[0], a1[1])), fmaxf(a1[2], a1[3])));
    /* From -inf, any key moves the reference (inf > kStale); a row with no
     * key yet (-inf - -inf is NaN) keeps -inf and the reference point 0,
     * so every exp2 is 0. */
    const bool up0 = (mx0 - m0) * sl2 > kStale, up1 = (mx1 - m1) * sl2 > kStale;
    const float n0 = up0 ? mx0 : m0, n1 = up1 ? mx1 : m1;
    const float b0 = n0 == -INFINITY ? 0.f : n0 * sl2, b1 = n1 == -INFINITY ? 0.f : n1 * sl2;
    alpha0 = up0 ? exp2_ftz(m0 * sl2 - b0) : 1.f, alpha1 = up1 ? exp2_ftz(m1 * sl2 - b1) : 1.f;
    m0 = n0, m1 = n1;
    l0 *= alpha0, l1 *= alpha1;
#pragma unroll
    for (int j = 0; j < BC / 8; ++j) {
        const float e0 = exp2_ftz(fmaf(sc[4 * j], sl2, -b0)), e1 = exp2_ftz(fmaf(sc[4 * j + 1], sl2, -b0));
        const float e2 = exp2_ftz(fmaf(sc[4 * j + 2], sl2, -b1)), e3 = exp2_ftz(fmaf(sc[4 * j + 3], sl2, -b1));
        l0 += e0 + e1, l1 += e2 + e3;
        sc[4 * j] = e0, sc[4 * j + 1] = e1, sc[4 * j + 2] = e2, sc[4 * j + 3] = e3;
    }
}

/* The probabilities as pairs of H (the inputs' type): p[2j] row r0, p[2j+1] row r1. */
template <int BC, typename H>
__device__ __forceinline__ void to_pairs(const float (&sc)[BC / 2], uint32_t (&p)[BC / 4])
{
#pragma unroll
    for (int j = 0; j < BC / 8; ++j)
        p[2 * j] = kb_pack16<H>(sc[4 * j], sc[4 * j + 1]), p[2 * j + 1] = kb_pack16<H>(sc[4 * j + 2], sc[4 * j + 3]);
}

/* O's rows times alpha, skipped by the warp when no lane's alpha moved. */
template <int D>
__device__ __forceinline__ void rescale(float (&acc)[D / 2], float alpha0, float alpha1)
{
    if (!__any_sync(0xffffffffu, alpha0 != 1.f || alpha1 != 1.f))
        return;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        acc[4 * j] *= alpha0, acc[4 * j + 1] *= alpha0;
        acc[4 * j + 2] *= alpha1, acc[4 * j + 3] *= alpha1;
    }
}

/* Lane t of a quad: v[i] (i = 0..3) are a row's columns 8 (4 jb + i)
 * + 2 t and one more; afterwards v[q] holds lane q's columns
 * 8 (4 jb + t) + 2 q: a lane holds 16 contiguous bytes.  The 4x4
 * transpose in two butterflies (lanes t ^ 2, then t ^ 1), two values each. */
__device__ __forceinline__ void quad_transpose(uint32_t (&v)[4], int t4)
{
    const bool hi = t4 & 2, odd = t4 & 1;
    uint32_t x0 = __shfl_xor_sync(0xffffffffu, hi ? v[0] : v[2], 2);
    uint32_t x1 = __shfl_xor_sync(0xffffffffu, hi ? v[1] : v[3], 2);
    v[0] = hi ? x0 : v[0], v[1] = hi ? x1 : v[1], v[2] = hi ? v[2] : x0, v[3] = hi ? v[3] : x1;
    x0 = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[1], 1);
    x1 = __shfl_xor_sync(0xffffffffu, odd ? v[2] : v[3], 1);
    v[0] = odd ? x0 : v[0], v[1] = odd ? v[1] : x0, v[2] = odd ? x1 : v[2], v[3] = odd ? v[3] : x1;
}

/* v at p, 16-byte aligned, in one store: written as a uint4, the compiler
 * split such stores into four of 4 bytes wherever it could not prove p's
 * alignment (every one of them, before the row addresses were made once). */
__device__ __forceinline__ void store_16b(void *p, const uint32_t (&v)[4])
{
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3])
                 : "memory");
}

/* O / l into this thread's rows r0 and r1 of out (those in 0..Tq); a row
 * that saw no key (l = 0) as zeros.  A quad's 32 columns of a row are
 * transposed among its lanes (quad_transpose), so that each lane stores 16
 * contiguous bytes in one instruction, at a constant offset from its row's
 * address, made once.  In the accumulators' own layout (4-byte stores, 16
 * bytes a row a warp instruction) with addresses made a store, the store
 * was most of what a tile cost beyond its key tiles: these measured +4.6%
 * at 2x16x4096x4096x128, +8.7% at 16 key tiles a tile
 * (1x33x4096x2048x128), +5% causal and +2-3% at D = 64; at D = 256,
 * whose transposed stores had gone out as four 4-byte ones, +3.7%. */
template <int D, typename H>
__device__ __forceinline__ void store_o(const float (&acc)[D / 2], float l0, float l1, H *out, int r0, int r1, int Tq,
                                        int t4)
{
    l0 = quad_sum(l0), l1 = quad_sum(l1);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
    const bool in0 = r0 >= 0 && r0 < Tq, in1 = r1 >= 0 && r1 < Tq;
    H *const row0 = out + (size_t)(in0 ? r0 : 0) * D + 8 * t4;
    H *const row1 = out + (size_t)(in1 ? r1 : 0) * D + 8 * t4;
#pragma unroll
    for (int jb = 0; jb < D / 32; ++jb) {
        uint32_t a[4], b[4]; /* rows r0 and r1, columns 8 (4 jb + i) + 2 t4 and one more */
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int j = 4 * jb + i;
            a[i] = kb_pack16<H>(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
            b[i] = kb_pack16<H>(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
        }
        quad_transpose(a, t4);
        quad_transpose(b, t4);
        if (in0)
            store_16b(row0 + 32 * jb, a);
        if (in1)
            store_16b(row1 + 32 * jb, b);
    }
}

/* Causal blocks, longest first within groups of `hg` heads, one group
 * after another: the blocks in flight read the K and V of a few heads,
 * which L2 keeps, where kb_attn_tile's longest first across all heads
 * streams every head's K and V from DRAM at once (docs/notes/attention.md).
 * The blocks end at Tq, so that when rows_per_tile does not divide it the
 * one short block is the first, rows from below 0 (TMA fills them with
 * zeros) with the fewest keys, not the last with all of them: at D = 64
 * (192 rows) and Tq = 4096 the last block's idle rows were 6% of the work. */
__device__ __forceinline__ KbAttnTile causal_tile(int64_t id, int row_tiles, int heads, int rows_per_tile, int hg,
                                                  int Tq)
{
    const int64_t per_group = (int64_t)hg * row_tiles, g = id / per_group;
    const int64_t k = id - g * per_group, in_group = min((int64_t)hg, heads - g * hg);
    return {Tq - (1 + (int)(k / in_group)) * rows_per_tile, g * hg + k % in_group};
}

/* Key tiles of BC keys that block rows row0.. need: all of Tk, or under
 * the causal mask up to the last row's last key. */
template <int BR, int BC>
__device__ __forceinline__ int key_tiles(int row0, int Tq, int Tk, int causal)
{
    if (!causal)
        return KB_CEIL_DIV(Tk, BC);
    const int last = min(row0 + BR, Tq) - 1;
    const int keys = min(Tk, last + Tk - Tq + 1);
    return keys > 0 ? KB_CEIL_DIV(keys, BC) : 0;
}

/* The stages of an S-stage ring that n loads, from stage 0, use an odd
 * number of times: their mbarriers' parity flips over a tile of n loads. */
template <int S>
__device__ __forceinline__ uint32_t odd_stages(int n)
{
    uint32_t m = 0;
#pragma unroll
    for (int s = 0; s < S; ++s)
        m |= (uint32_t)((n - s + S - 1) / S & 1) << s;
    return m;
}

/* Block tile id: causal, longest first within groups of heads (causal_tile);
 * else kb_attn_tile's order, the row tiles of one head after another. */
__device__ __forceinline__ KbAttnTile tile_of(int64_t id, int causal, int row_tiles, int heads, int rows_per_tile,
                                              int hg, int Tq)
{
    if (causal)
        return causal_tile(id, row_tiles, heads, rows_per_tile, hg, Tq);
    return kb_attn_tile_at(id, row_tiles, heads, rows_per_tile, 0);
}

/* The persistent blocks' work, as pieces (tile id, key tiles lo..hi - 1,
 * whether it is the block's last): `rounds` of whole tiles, block b taking
 * tiles b, b + gridDim.x, ...; then, where `units` > 0, the key tiles of
 * the tiles left (between one and two rounds' worth, n key tiles each)
 * dealt out evenly, as a contiguous run of (tile, key tile) a block
 * (stream-K): whole rounds would leave SMs idle for a tile's time at the
 * end (8 rounds where 1024 tiles on 132 SMs need 7.76).  A run holds at
 * least n key tiles, so a tile split between blocks b and b + 1 has its
 * first key tiles in b's last piece and the rest in b + 1's first.  The
 * host keeps units * gridDim.x below 2^31. */
struct Pieces {
    int64_t tiles, first; /* all tiles; the first after the rounds */
    int b, g, rounds, n, units; /* block, blocks; rounds of whole tiles; key tiles a tile; those dealt out (0: none) */
    int tile0, lo0, len;  /* this block's run: its first tile after the rounds, its first key tile there, its key tiles */
};

__device__ __forceinline__ Pieces plan_pieces(int64_t tiles, int n, int rounds, int units)
{
    const int b = blockIdx.x, g = gridDim.x, u0 = units * b / g;
    return {tiles, (int64_t)rounds * g, b, g, rounds, n, units, u0 / n, u0 % n, units * (b + 1) / g - u0};
}

/* Each piece from k and the plan p: the consumers' in registers, made
 * from the kernel's arguments, which keeps it uniform (and the wgmma
 * descriptors on the uniform datapath); the producer's in shared memory,
 * read afresh (volatile), since what ptxas keeps in registers across the
 * pieces spills its 40. */
template <bool Split, typename P, typename F>
__device__ __forceinline__ void for_each_piece(const P &p, F &&piece)
{
    for (int k = 0;; ++k) { /* one call site: the piece inlines once */
        const int n = p.n;
        int64_t id;
        int lo = 0, hi = n;
        bool last;
        if (k < p.rounds) {
            id = p.b + (int64_t)k * p.g;
            if (id >= p.tiles)
                return;
            last = p.units == 0 && id + p.g >= p.tiles;
        } else {
            if (!Split || p.units == 0)
                return;
            const int j = k - p.rounds, lo0 = p.lo0, len = p.len, done = j == 0 ? 0 : n - lo0 + (j - 1) * n;
            if (done >= len)
                return;
            lo = j == 0 ? lo0 : 0, hi = min(n, lo + len - done);
            id = p.first + p.tile0 + j;
            last = done + hi - lo >= len;
        }
        piece(id, lo, hi, last);
    }
}

/* A split tile's second part, parked by its block for the block that
 * merges it: each consumer thread's O accumulators, then its two rows'
 * reference points and partial sums, 16-byte vector i of consumer thread
 * ct at i * (consumer threads) + ct of the block's slot (a warp's store is
 * 512 contiguous bytes), and a flag a consumer warp. */

template <int D>
__device__ __forceinline__ void park(float *slot, unsigned *flags, const float (&acc)[D / 2], float m0, float m1,
                                     float l0, float l1, int ct)
{
    constexpr int NT = kConsumers<D> * 128;
    float4 *p = reinterpret_cast<float4 *>(slot) + ct;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
        __stcg(p + j * NT, make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
    __stcg(p + (D / 8) * NT, make_float4(m0, m1, l0, l1));
    __threadfence();
    __syncwarp();
    if (ct % 32 == 0)
        kb_add_release(flags + ct / 32, 1u);
}

/* The factors of two states of a row, reference points m and pm: O = O f +
 * O' g, l = l f + l' g (a state with no key yet, m = -inf, weighs 0). */
__device__ __forceinline__ void merge_factors(float m, float pm, float sl2, float &f, float &g)
{
    const float b = m * sl2, pb = pm * sl2, top = fmaxf(b, pb); /* sl2 > 0: -inf stays -inf */
    f = top == -INFINITY ? 0.f : exp2_ftz(b - top);
    g = top == -INFINITY ? 0.f : exp2_ftz(pb - top);
}

/* Merge the next block's parked part of this tile into this thread's
 * state, once its warp's flag is up (it parked it in its first piece, so
 * the wait is short and cannot hang: every persistent block is resident). */
template <int D>
__device__ __forceinline__ void unpark(const float *slot, unsigned *flags, float (&acc)[D / 2], float m0, float m1,
                                       float &l0, float &l1, float sl2, int ct)
{
    constexpr int NT = kConsumers<D> * 128;
    /* Every lane acquires, and the loop's condition is a vote: a branch
     * ptxas knows is uniform (a lane's spin would make the key loop's
     * descriptors leave the uniform datapath, 16 -> 48 R2UR). */
    while (__any_sync(0xffffffffu, kb_load_acquire(flags + ct / 32) == 0))
        ;
    if (ct % 32 == 0)
        flags[ct / 32] = 0; /* down for the next launch */
    const float4 *p = reinterpret_cast<const float4 *>(slot) + ct, ml = __ldcg(p + (D / 8) * NT);
    float f0, g0, f1, g1;
    merge_factors(m0, ml.x, sl2, f0, g0);
    merge_factors(m1, ml.y, sl2, f1, g1);
    l0 = l0 * f0 + ml.z * g0;
    l1 = l1 * f1 + ml.w * g1;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        const float4 o = __ldcg(p + j * NT);
        acc[4 * j] = acc[4 * j] * f0 + o.x * g0;
        acc[4 * j + 1] = acc[4 * j + 1] * f0 + o.y * g0;
        acc[4 * j + 2] = acc[4 * j + 2] * f1 + o.z * g1;
        acc[4 * j + 3] = acc[4 * j + 3] * f1 + o.w * g1;
    }
}
#endif
}

/* H: the 16-bit element type of Q, K, V, P and O, bf16 or f16. */
template <int D, bool Persistent, typename H>
__global__ void __launch_bounds__(kThreads<D>, 1)
    attention_flash_wgmma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                                 const __grid_constant__ CUtensorMap map_v, int Tq, int Tk, int causal, int group,
                                 float sl2, int row_tiles, int heads, int hg, int n_keys, int rounds, int units,
                                 float *__restrict__ parked,
                                 unsigned *__restrict__ parked_flags, H *__restrict__ o)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int S = kStages<D>, BC = kBC<D>, BR = kBR<D>, kQ = kQBytes<D>, kKV = kKVBytes<D>, NC = kConsumers<D>;
    __shared__ unsigned long long q_full, q_empty, k_full[S], v_full[S], k_empty[S], v_empty[S], softmax_done;
    __shared__ Pieces plan;
    extern __shared__ __align__(128) unsigned char smem[];
    const int64_t tiles = (int64_t)row_tiles * heads;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: tiles start 1024-aligned. */
    const uint32_t q_s = (bf16_smem_addr(smem) + 1023) & ~1023u, k_s = q_s + kQ, v_s = k_s + S * kKV;

    if (tid == 0) {
        kb_mbar_init(&q_full, 1);
        kb_mbar_init(&q_empty, NC * 4); /* one arrival per consumer warp, after its last S */
        if (kSoftmaxUnderPV<D>) /* arrived on, never waited on */
            kb_mbar_init(&softmax_done, NC * 4);
        for (int s = 0; s < S; ++s) {
            kb_mbar_init(&k_full[s], 1);
            kb_mbar_init(&v_full[s], 1);
            if (kEarlyK<D>) /* else V's release frees the whole stage */
                kb_mbar_init(&k_empty[s], NC * 4); /* one arrival per consumer warp */
            kb_mbar_init(&v_empty[s], NC * 4);
        }
        kb_mbar_init_fence();
        if (Persistent)
            plan = plan_pieces(tiles, n_keys, rounds, units);
    }
    __syncthreads();

    /* Persistent (not causal), a block takes tiles blockIdx.x, + gridDim.x,
     * ..., and the next tile's Q, K and V load under this one's last
     * softmax, P V and store; causal blocks take a tile each, in the
     * longest-first order.  Each tile's loads start at ring stage 0 (a
     * stage carried on from tile to tile moved ptxas's descriptor
     * arithmetic off the uniform datapath), the stages' phases at `par`;
     * the consumers' turns run on from tile to tile. */
    if (wg == 0) {
        kb_setmaxnreg_dec<kProducerRegs<D>>();
        int k = 0;        /* Q's loads */
        uint32_t par = 0; /* each stage's parity at a tile's start (odd_stages) */
        auto produce = [&](int64_t id, int lo, int hi) {
            const KbAttnTile tile = tile_of(id, causal, row_tiles, heads, BR, hg, Tq);
            const int n_tiles = (Persistent ? hi : key_tiles<BR, BC>(tile.row0, Tq, Tk, causal)) - lo;
            const int kv_head = (int)(tile.bh / group);
            if (n_tiles <= 0)
                return;
            kb_mbar_wait(&q_empty, (k++ & 1) ^ 1); /* the tile before has issued its last S */
            kb_mbar_arrive_expect(&q_full, kQ);
            load_tile<D, BR>(q_s, &map_q, tile.row0, (int)tile.bh, &q_full);
            auto wait_free = [&](unsigned long long *empty, int s, int phase) {
                kb_mbar_wait(&empty[s], phase ^ (par >> s & 1) ^ 1);
            };
            auto load_v = [&](int t, int s) {
                kb_mbar_arrive_expect(&v_full[s], kKV);
                load_tile<D, BC>(v_s + s * kKV, &map_v, t * BC, kv_head, &v_full[s]);
            };
            int s = 0, phase = 0, ps = 0, pphase = 0;
            for (int t = 0; t < n_tiles; ++t) {
                wait_free(kEarlyK<D> ? k_empty : v_empty, s, phase);
                kb_mbar_arrive_expect(&k_full[s], kKV);
                load_tile<D, BC>(k_s + s * kKV, &map_k, (lo + t) * BC, kv_head, &k_full[s]);
                if (!kEarlyK<D>) {
                    load_v(lo + t, s); /* the stage went back whole */
                } else if (t > 0) {
                    wait_free(v_empty, ps, pphase);
                    load_v(lo + t - 1, ps);
                }
                ps = s, pphase = phase;
                if (++s == S)
                    s = 0, phase ^= 1;
            }
            if (kEarlyK<D>) {
                wait_free(v_empty, ps, pphase);
                load_v(lo + n_tiles - 1, ps);
            }
            par ^= odd_stages<S>(n_tiles);
        };
        if (tid != 0)
            return;
        if constexpr (Persistent)
            for_each_piece<kSplits<D>>(*(volatile Pieces *)&plan, [&](int64_t id, int lo, int hi, bool) { produce(id, lo, hi); });
        else
            produce(blockIdx.x, 0, n_keys);
        return;
    }

    kb_setmaxnreg_inc<kConsumerRegs<D>>();
    const int cw = wg - 1, next = cw + 1 == NC ? 0 : cw + 1, lane = tid % 32, w = (tid % 128) / 32, t4 = lane % 4;
    const int diag = Tk - Tq;                           /* key j is masked for row i when j > i + diag */
    const uint32_t q_wg = q_s + cw * 64 * 128;          /* this consumer's 64 rows in each panel of Q */
    int qk = 0, turns = 0;                              /* Q's loads; turns begun */
    uint32_t par = 0;                                   /* each stage's parity at a tile's start (odd_stages) */
    const int ct = tid - 128;                           /* this thread among the consumers' */
    /* One piece: key tiles lo..hi - 1 of a tile; `last`: the block's last,
     * after which no turn is left. */
    auto consume = [&](int64_t id, int lo, int hi, bool last) {
        const KbAttnTile tile = tile_of(id, causal, row_tiles, heads, BR, hg, Tq);
        /* Persistent blocks have no mask: n_keys key tiles a tile. */
        const int n_all = Persistent ? n_keys : key_tiles<BR, BC>(tile.row0, Tq, Tk, causal);
        const int n_tiles = (Persistent ? hi : n_all) - lo;
        const bool parks = lo > 0, merges = hi < n_all; /* a split tile's second part, or its first */
        const int wrow = tile.row0 + cw * 64 + w * 16;  /* this warp's first query row */
        const int r0 = wrow + lane / 4, r1 = r0 + 8;    /* this thread's two query rows */
        float acc[D / 2], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
#pragma unroll
        for (int i = 0; i < D / 2; ++i)
            acc[i] = 0.f;
        if (n_tiles <= 0) { /* every row of the tile sees no key */
            store_o<D, H>(acc, 0.f, 0.f, o + (size_t)tile.bh * Tq * D, r0, r1, Tq, t4);
            return;
        }
        /* Tile t's S is issued together with tile t - 1's P V, and its
         * softmax runs while that P V does; the consumers take turns at
         * issuing (ping-pong), so one's softmax runs under the others'
         * MMAs.  The first S and the last P V are peeled off the loop: an
         * MMA issued under a branch would make ptxas serialize them all. */
        uint32_t p[BC / 4];    /* P of the tile before, as pairs of H, while its P V runs */
        float alpha0, alpha1;  /* and the factors that rescale O before it */
        int s = 0, phase = 0, ps, pphase; /* the ring stage and phase of this key tile and of the one before */
        kb_mbar_wait(&q_full, qk++ & 1);
        if (turns++ == 0 && cw == NC - 1)
            sched_signal(0); /* consumer 0 issues first */
        {
            float sc[BC / 2];
            kb_mbar_wait(&k_full[0], par & 1);
            sched_wait(cw);
            kb_fence_regs(sc);
            kb_wgmma_fence();
            issue_s<D, H>(sc, q_wg, k_s);
            sched_signal(next);
            kb_wgmma_wait<0>();
            kb_fence_regs(sc);
            if (lane == 0) {
                if (kEarlyK<D>)
                    kb_mbar_arrive(&k_empty[0]);
                if (n_tiles == 1)
                    kb_mbar_arrive(&q_empty); /* Q is read: the next tile's may load */
            }
            mask_tile<BC>(sc, lo * BC, Tk, causal, r0, r1, wrow, diag, t4);
            softmax<BC>(sc, sl2, m0, m1, l0, l1, alpha0, alpha1);
            to_pairs<BC, H>(sc, p);
            ps = s, pphase = phase;
            if (++s == S)
                s = 0, phase ^= 1;
        }
        for (int t = 1; t < n_tiles; ++t) {
            float sc[BC / 2];
            /* Before the turn, not in it: the others' MMAs keep the tensor
             * cores busy meanwhile (+1.7% at 2x16x4096x4096x128). */
            rescale<D>(acc, alpha0, alpha1); /* no MMA is in flight on O now */
            kb_mbar_wait(&k_full[s], phase ^ (par >> s & 1));
            kb_mbar_wait(&v_full[ps], pphase ^ (par >> ps & 1));
            sched_wait(cw);
            kb_fence_regs(sc);
            kb_fence_regs(acc);
            kb_fence_regs(p);
            kb_wgmma_fence();
            issue_s<D, H>(sc, q_wg, k_s + s * kKV);
            issue_pv<D, H>(acc, p, v_s + ps * kKV);
            sched_signal(next);
            kb_wgmma_wait<1>(); /* S is done: its K may go (kEarlyK); the P V before may still run */
            kb_fence_regs(sc);
            if (lane == 0) {
                if (kEarlyK<D>)
                    kb_mbar_arrive(&k_empty[s]);
                if (t == n_tiles - 1)
                    kb_mbar_arrive(&q_empty);
            }
            mask_tile<BC>(sc, (lo + t) * BC, Tk, causal, r0, r1, wrow, diag, t4);
            softmax<BC>(sc, sl2, m0, m1, l0, l1, alpha0, alpha1);
            if (kSoftmaxUnderPV<D> && lane == 0)
                kb_mbar_arrive(&softmax_done + zero_from(l0 + l1));
            kb_wgmma_wait<0>(); /* the P V before is done: its V goes back, its P registers are free */
            kb_fence_regs(acc);
            kb_fence_regs(p);
            if (lane == 0)
                kb_mbar_arrive(&v_empty[ps]);
            to_pairs<BC, H>(sc, p);
            ps = s, pphase = phase;
            if (++s == S)
                s = 0, phase ^= 1;
        }
        rescale<D>(acc, alpha0, alpha1);
        kb_mbar_wait(&v_full[ps], pphase ^ (par >> ps & 1));
        sched_wait(cw);
        kb_fence_regs(acc);
        kb_fence_regs(p);
        kb_wgmma_fence();
        issue_pv<D, H>(acc, p, v_s + ps * kKV);
        if (cw != NC - 1 || !last)
            sched_signal(next); /* the next one's turn */
        kb_wgmma_wait<0>();
        kb_fence_regs(acc);
        kb_fence_regs(p);
        if (lane == 0)
            kb_mbar_arrive(&v_empty[ps]);
        par ^= odd_stages<S>(n_tiles);
        if (kSplits<D> && parks) { /* the rest of a tile whose first key tiles are the block before's */
            park<D>(parked + blockIdx.x * kSlotFloats<D>, parked_flags + blockIdx.x * kSlotFlags, acc, m0, m1, l0,
                    l1, ct);
            return;
        }
        if (kSplits<D> && merges)
            unpark<D>(parked + (blockIdx.x + 1) * kSlotFloats<D>, parked_flags + (blockIdx.x + 1) * kSlotFlags, acc,
                      m0, m1, l0, l1, sl2, ct);
        store_o<D, H>(acc, l0, l1, o + (size_t)tile.bh * Tq * D, r0, r1, Tq, t4);
    };
    if constexpr (Persistent)
        for_each_piece<kSplits<D>>(plan_pieces(tiles, n_keys, rounds, units), consume);
    else
        consume(blockIdx.x, 0, n_keys, true);
#else
    (void)map_q, (void)map_k, (void)map_v, (void)Tq, (void)Tk, (void)causal, (void)group, (void)sl2;
    (void)row_tiles, (void)heads, (void)hg, (void)n_keys, (void)rounds, (void)units, (void)parked, (void)parked_flags, (void)o;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

typedef struct {
    kb_dtype dtype;         /* of Q, K, V and O: bf16 or f16 (the form's) */
    kb_encode_tiled_fn encode;
    CUtensorMap map_q, map_k, map_v;
    kb_attention_args seen; /* the arguments the maps describe */
    int64_t l2_bytes;       /* the GPU's L2 and SMs, for the causal block order */
    int sms;
    float *parked;          /* a slot a block for the split tiles' parts (kSlotFloats), or NULL */
    unsigned *parked_flags; /* kSlotFlags a slot, down between launches */
    int64_t parked_floats;
} wgmma_ctx;

static const char *unsupported(const kb_shape *s)
{
    const char *why = kb_sm90a_unsupported();
    if (why)
        return why;
    return s->d[4] == 64 || s->d[4] == 128 || s->d[4] == 256 ? NULL : "flash_wgmma has head dims 64, 128 and 256";
}

/* A 16-bit tensor of `heads` blocks of `rows` x D (head_stride elements
 * apart), read in boxes of 64 columns x box_rows rows of one head (a
 * panel), 128-byte swizzled, zeros past its rows. */
static const char *encode(const wgmma_ctx *c, CUtensorMap *map, const void *base, int D, int rows, int64_t heads,
                          int64_t head_stride, int box_rows)
{
    const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)rows, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)head_stride * 2}; /* bytes */
    const cuuint32_t box[3] = {64, (cuuint32_t)box_rows, 1};
    return kb_encode_16(c->encode, map, c->dtype, base, 3, dims, strides, box);
}

static const char *make_maps(wgmma_ctx *c, const kb_attention_args *a)
{
    const int64_t kv_stride = a->kv_stride ? a->kv_stride : (int64_t)a->Tk * a->D;
    const int64_t kv_heads = (int64_t)a->B * (a->H / kb_attention_group(a));
    /* The kernel's query rows a block and keys a tile. */
    const int br = a->D == 64 ? kBR<64> : kBR<128>, bc = a->D == 256 ? kBC<256> : kBC<128>;
    static_assert(kBR<128> == kBR<256> && kBC<64> == kBC<128>, "the tiles make_maps takes");
    const char *err =
        encode(c, &c->map_q, a->q, a->D, a->Tq, (int64_t)a->B * a->H, (int64_t)a->Tq * a->D, br);
    if (!err)
        err = encode(c, &c->map_k, a->k, a->D, a->Tk, kv_heads, kv_stride, bc);
    if (!err)
        err = encode(c, &c->map_v, a->v, a->D, a->Tk, kv_heads, kv_stride, bc);
    if (err)
        memset(&c->seen, 0, sizeof c->seen);
    else
        c->seen = *a;
    return err;
}

/* Whether the maps built for x describe y's tensors. */
static bool same_tensors(const kb_attention_args *x, const kb_attention_args *y)
{
    return x->q == y->q && x->k == y->k && x->v == y->v && x->B == y->B && x->H == y->H && x->Hkv == y->Hkv &&
           x->Tq == y->Tq && x->Tk == y->Tk && x->D == y->D && x->kv_stride == y->kv_stride;
}

static void teardown(void *ctx)
{
    wgmma_ctx *c = (wgmma_ctx *)ctx;
    cudaFree(c->parked);
    cudaFree(c->parked_flags);
    free(c);
}

/* The parked floats that a launch at this shape needs: a slot a block
 * where the persistent blocks split the last tiles (kSplits, not causal,
 * tiles not a whole number of rounds), else 0. */
static int64_t parked_need(const kb_attention_args *a, int sms)
{
    if (a->causal || a->D != 128 || KB_CEIL_DIV(a->Tk, kBC<128>) < kSplitKeyTiles)
        return 0; /* kSplits */
    const int64_t tiles = (int64_t)KB_CEIL_DIV(a->Tq, kBR<128>) * a->B * a->H;
    return tiles > sms && tiles % sms ? kSlotFloats<128> * sms : 0;
}

/* The slots, their flags down, outside the timed launches. */
static const char *alloc_parked(wgmma_ctx *c, int64_t floats)
{
    const size_t flags = (size_t)c->sms * kSlotFlags * sizeof(unsigned);
    cudaError_t e = cudaMalloc((void **)&c->parked, (size_t)floats * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&c->parked_flags, flags);
    if (e == cudaSuccess)
        e = cudaMemset(c->parked_flags, 0, flags);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* a failed allocation must not reach the next launch */
        return "the split tiles' workspace does not fit";
    }
    c->parked_floats = floats;
    return NULL;
}

/* The shared-memory opt-in of head dim D's two kernels. */
template <int D, typename H>
static const char *allow_smem(void)
{
    const char *err = kb_cuda_status(cudaFuncSetAttribute((const void *)attention_flash_wgmma_kernel<D, false, H>,
                                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<D>));
    return err ? err
               : kb_cuda_status(cudaFuncSetAttribute((const void *)attention_flash_wgmma_kernel<D, true, H>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<D>));
}

/* The driver's cuTensorMapEncodeTiled through the runtime, the L2 and SM
 * counts and the shared-memory opt-in of the three head dims, once,
 * outside the timed launches, for element type H. */
template <typename H>
static const char *setup(const void *args, void **ctx)
{
    wgmma_ctx *c = (wgmma_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    c->dtype = KbDtypeOf<H>::value;
    int dev = 0, l2 = 0;
    const char *err = kb_tensor_map_encoder(&c->encode);
    if (!err)
        err = kb_cuda_status(cudaGetDevice(&dev));
    if (!err)
        err = kb_cuda_status(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    if (!err)
        err = kb_cuda_status(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, dev));
    c->l2_bytes = l2;
    if (!err)
        err = allow_smem<64, H>();
    if (!err)
        err = allow_smem<128, H>();
    if (!err)
        err = allow_smem<256, H>();
    const int64_t parked = args && !err ? parked_need((const kb_attention_args *)args, c->sms) : 0;
    if (parked)
        err = alloc_parked(c, parked);
    if (err) {
        teardown(c);
        return err;
    }
    *ctx = c;
    return NULL;
}

template <int D, typename H>
static void launch_d(const wgmma_ctx *c, const kb_attention_args *a, cudaStream_t stream)
{
    const int row_tiles = KB_CEIL_DIV(a->Tq, kBR<D>), heads = a->B * a->H;
    const int64_t tiles = (int64_t)row_tiles * heads;
    /* Causal: groups of the heads whose K and V fill half of L2 (a KV
     * head's query heads count once), and at least two waves of blocks. */
    const int64_t kv_bytes = (int64_t)a->Tk * a->D * 2 * 2, group = kb_attention_group(a);
    int64_t hg = c->l2_bytes / 2 / (kv_bytes > 0 ? kv_bytes : 1) * group;
    const int64_t two_waves = KB_CEIL_DIV(2 * (int64_t)c->sms, row_tiles);
    hg = hg < two_waves ? two_waves : hg;
    const float sl2 = a->scale * KB_LOG2E;
    const int n_keys = KB_CEIL_DIV(a->Tk, kBC<D>); /* key tiles a row tile, unmasked */
    H *o = (H *)a->o;
    /* Causal: a block a tile, in the longest-first order; else persistent,
     * a block an SM, with the last tiles split (for_each_piece) where they
     * are not a whole round and the slots are there (a setup at another
     * shape has none). */
    if (a->causal) {
        attention_flash_wgmma_kernel<D, false, H><<<(unsigned)tiles, kThreads<D>, kSmemBytes<D>, stream>>>(
            c->map_q, c->map_k, c->map_v, a->Tq, a->Tk, 1, group, sl2, row_tiles, heads,
            (int)(hg < heads ? hg : heads), n_keys, 0, 0, NULL, NULL, o);
        return;
    }
    const int64_t grid = tiles < c->sms ? tiles : c->sms, need = parked_need(a, c->sms);
    int64_t rounds = KB_CEIL_DIV(tiles, grid), units = 0;
    if (need > 0 && need <= c->parked_floats && (tiles % grid + grid) * n_keys * grid < INT32_MAX) {
        rounds = tiles / grid - 1;
        units = (tiles - rounds * grid) * n_keys;
    }
    attention_flash_wgmma_kernel<D, true, H><<<(unsigned)grid, kThreads<D>, kSmemBytes<D>, stream>>>(
        c->map_q, c->map_k, c->map_v, a->Tq, a->Tk, 0, group, sl2, row_tiles, heads, 1, n_keys, (int)rounds,
        (int)units, c->parked, c->parked_flags, o);
}

template <typename H>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    wgmma_ctx *c = (wgmma_ctx *)ctx;
    if (a->D != 64 && a->D != 128 && a->D != 256)
        return "flash_wgmma has head dims 64, 128 and 256";
    if (a->tk_len)
        return "flash_wgmma reads no device key count";
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15 || a->kv_stride % 8)
        return "flash_wgmma needs 16-byte aligned tensors and heads";
    if (!same_tensors(&c->seen, a)) {
        const char *err = make_maps(c, a); /* other tensors than last time: a few microseconds on the host */
        if (err)
            return err;
    }
    if (a->D == 256)
        launch_d<256, H>(c, a, stream);
    else if (a->D == 128)
        launch_d<128, H>(c, a, stream);
    else
        launch_d<64, H>(c, a, stream);
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_flash_wgmma[] = {
    {
        .name = "flash_wgmma",
        .summary = "FlashAttention-3 structure: TMA producer warpgroup, 2-3 wgmma consumers, P in registers; D 64, 128, 256",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 90,
        .unsupported = unsupported,
        .setup = setup<__nv_bfloat16>,
        .teardown = teardown,
        .launch = launch<__nv_bfloat16>,
    },
    {
        .name = "flash_wgmma",
        .summary = "the same in f16",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .min_cc = 90,
        .unsupported = unsupported,
        .setup = setup<__half>,
        .teardown = teardown,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
