/* attention flash_wgmma (bf16, sm_90a): FlashAttention-3's structure on
 * Hopper's wgmma and TMA.  A block owns 128 query rows of one head and has
 * three warpgroups: a producer (one thread issues every TMA load) and two
 * consumers of 64 query rows each.  Q comes once by TMA; K and V tiles of
 * 128 keys stream through a ring of stages, K and V with an mbarrier each
 * (so S can start before V lands) and one "empty" mbarrier per stage that
 * the consumers' warps release.  Per key tile and consumer:
 *   S = Q K^T: wgmma m64n128k16, both operands from 128-byte-swizzled
 *     shared memory (K is the B operand in K-major form);
 *   online softmax on the accumulators: row max over a quad of lanes, exp2
 *     with scale * log2(e) folded in, O rescaled;
 *   O += P V: wgmma m64nDk16 with P as the A operand in registers (the
 *     accumulator's k16 slices, as bf16 pairs, are A's fragments) and V as
 *     an N-major B from shared memory.
 * Tensor maps are 3-D (D, keys or rows, heads), so rows past Tq or Tk
 * land as zeros; keys past Tk and under the causal mask (bottom-right
 * aligned: key j > i + Tk - Tq) score -inf, and key tiles wholly above a
 * block's last row are never loaded.  A row that sees no key writes zeros.
 * Grouped-query attention: query head bh reads KV head bh / (H / Hkv).
 * Shapes: D of 64 or 128; any B, H, Hkv, Tq and Tk.  Needs sm_90a.
 *
 * The two consumers take turns at issuing their MMAs (ping-pong, two named
 * barriers), and each issues tile t's S together with tile t - 1's P V, so
 * that its softmax of tile t runs while its own P V and the other
 * consumer's MMAs keep the tensor cores busy.
 *
 * Builds on flash_bf16: the same algorithm, from mma.sync to wgmma with a
 * TMA producer warpgroup.
 * Measured (results/h100/kbench-20261126-132435.csv, 1980 MHz; PyTorch's
 * SDPA in the same run): 591 TFLOP/s at 2x16x4096x4096x128 (0.91x SDPA,
 * 1.55x flash_bf16), 384 at 4x16x4096x4096x64 (0.81x), causal 482 and 335
 * (0.93x, 1.00x), 585 at 4x16x8192x8192x128 (0.85x), 600 at the GQA
 * 2x32x4096x4096x128x8 (0.89x); 2.7x SDPA at the chunked prefill
 * 1x32x512x4096x128c.
 * Gap to the limit: 61% of the run's bf16 ceiling (970 TFLOP/s) at D = 128.  At D = 64 the GEMMs of a tile are half as long against the
 * same softmax, which two consumers no longer hide (FA3 runs three there). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include "kernels/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/tensor_map.h"
#include "kernels/cp_async.cuh"
#include "variants/attention/attention_common.cuh"

namespace {
constexpr int kBR = 128;                             /* query rows a block; and 128 keys a tile (kBC) */
constexpr int kConsumers = 2, kThreads = (kConsumers + 1) * 128;
constexpr int kPanelBytes = 128 * 128;               /* 64 columns of D for 128 rows, one swizzle line a row */
template <int D> constexpr int kTileBytes = D / 64 * kPanelBytes; /* Q, K or V: 128 rows x D */
/* As many K + V stages as fit beside Q in 227 KiB: 3 at D = 128, 6 at D = 64. */
template <int D> constexpr int kStages = (227 * 1024 - 1024 - kTileBytes<D>) / (2 * kTileBytes<D>);
template <int D> constexpr int kSmemBytes = (1 + 2 * kStages<D>) * kTileBytes<D> + 1024;
static_assert(kStages<128> == 3 && kStages<64> == 6, "the rings the header describes");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kBC = 128;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * kConsumers <= 65536, "the SM's register file");

/* d = Q (64x16, K-major) * K^T (16x128: 128 rows of K, K-major) +
 * (accumulate ? d : 0), both by 128-byte-swizzled descriptors. */
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

/* d = P (64x16 in registers: a k16 slice of an accumulator as bf16 pairs)
 * * V (16x64, N-major, by descriptor) + (accumulate ? d : 0). */
__device__ __forceinline__ void wgmma_m64n64k16_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t desc_b,
                                                  int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

/* d = P (64x16 in registers: a k16 slice of an accumulator as bf16 pairs)
 * * V (16x128, N-major, by descriptor) + (accumulate ? d : 0). */
__device__ __forceinline__ void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b,
                                                  int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}

template <int D>
__device__ __forceinline__ void wgmma_pv(float (&o)[D / 2], const uint32_t (&a)[4], uint64_t desc_b)
{
    if constexpr (D == 128)
        wgmma_m64n128k16_rs(o, a, desc_b, 1);
    else
        wgmma_m64n64k16_rs(o, a, desc_b, 1);
}

/* The box of `map` at (x, y, z) into shared dst, counted on bar. */
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap *map, int x, int y, int z,
                                            unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(x), "r"(y), "r"(z), "r"(bf16_smem_addr(bar))
                 : "memory");
}

/* All D / 64 panels of a 128-row tile: rows y.. of head z. */
template <int D>
__device__ __forceinline__ void load_tile(uint32_t dst, const CUtensorMap *map, int y, int z, unsigned long long *bar)
{
#pragma unroll
    for (int p = 0; p < D / 64; ++p)
        tma_load_3d(dst + p * kPanelBytes, map, p * 64, y, z, bar);
}

/* Ping-pong: consumer cw waits for its turn at the tensor cores (barrier
 * 1 + cw, both consumers' 256 threads), and hands the turn on. */
__device__ __forceinline__ void sched_wait(int cw)
{
    asm volatile("bar.sync %0, 256;\n" ::"r"(1 + cw) : "memory");
}
__device__ __forceinline__ void sched_signal(int to)
{
    asm volatile("bar.arrive %0, 256;\n" ::"r"(1 + to) : "memory");
}

/* Keep the compiler from reusing registers that an MMA in flight still reads. */
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i)
        asm volatile("" : "+r"(r[i])::"memory");
}

/* S = Q K^T for this consumer's 64 rows and a tile of 128 keys, issued.
 * The caller fences the registers and issues wgmma.fence once before a
 * batch: a register written between the fence and the batch's last MMA
 * makes ptxas serialize every MMA of the kernel. */
template <int D>
__device__ __forceinline__ void issue_s(float (&sc)[64], uint32_t q_wg, uint32_t k_t)
{
#pragma unroll
    for (int j = 0; j < D / 16; ++j) {
        const uint32_t off = (j / 4) * kPanelBytes + (j % 4) * 32;
        wgmma_m64n128k16_ss(sc, wgmma_desc(q_wg + off, 16, 1024), wgmma_desc(k_t + off, 16, 1024), j > 0);
    }
    wgmma_commit();
}

/* O += P V, issued: the k16 slice kk of P is columns 16kk.. = 8-column
 * groups 2kk and 2kk + 1, already A's fragments. */
template <int D>
__device__ __forceinline__ void issue_pv(float (&acc)[D / 2], const uint32_t (&p)[32], uint32_t v_t)
{
#pragma unroll
    for (int kk = 0; kk < kBC / 16; ++kk) {
        const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
        wgmma_pv<D>(acc, a, wgmma_desc(v_t + kk * 16 * 128, kPanelBytes, 1024));
    }
    wgmma_commit();
}

/* -inf for keys past Tk and, causal, above the diagonal, on the tiles that
 * reach them (this warp's rows start at wrow; rows r0 and r1 are this
 * thread's, its columns 8j + 2 t4 ..). */
__device__ __forceinline__ void mask_tile(float (&sc)[64], int kv0, int Tk, int causal, int r0, int r1, int wrow,
                                          int diag, int t4)
{
    if (kv0 + kBC <= Tk && !(causal && kv0 + kBC - 1 > wrow + diag))
        return;
#pragma unroll
    for (int j = 0; j < 16; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int key = kv0 + 8 * j + 2 * t4 + e;
            if (key >= Tk || (causal && key > r0 + diag))
                sc[4 * j + e] = -INFINITY;
            if (key >= Tk || (causal && key > r1 + diag))
                sc[4 * j + 2 + e] = -INFINITY;
        }
}

/* Online softmax of a tile's scores in place, rows r0 (sc[4j], sc[4j+1])
 * and r1 (sc[4j+2], sc[4j+3]): the scores become the unnormalised
 * probabilities, with the running maxima m, this thread's partial sums l
 * and the factors alpha that rescale O. */
__device__ __forceinline__ void softmax(float (&sc)[64], float sl2, float &m0, float &m1, float &l0, float &l1,
                                        float &alpha0, float &alpha1)
{
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        mx0 = fmaxf(mx0, fmaxf(sc[4 * j], sc[4 * j + 1]));
        mx1 = fmaxf(mx1, fmaxf(sc[4 * j + 2], sc[4 * j + 3]));
    }
    mx0 = quad_max(mx0), mx1 = quad_max(mx1);
    /* A row with no key yet keeps -inf: its reference point is 0, so every exp2 is 0. */
    const float b0 = mx0 == -INFINITY ? 0.f : mx0 * sl2, b1 = mx1 == -INFINITY ? 0.f : mx1 * sl2;
    alpha0 = exp2f(m0 * sl2 - b0), alpha1 = exp2f(m1 * sl2 - b1);
    m0 = mx0, m1 = mx1;
    l0 *= alpha0, l1 *= alpha1;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        const float e0 = exp2f(fmaf(sc[4 * j], sl2, -b0)), e1 = exp2f(fmaf(sc[4 * j + 1], sl2, -b0));
        const float e2 = exp2f(fmaf(sc[4 * j + 2], sl2, -b1)), e3 = exp2f(fmaf(sc[4 * j + 3], sl2, -b1));
        l0 += e0 + e1, l1 += e2 + e3;
        sc[4 * j] = e0, sc[4 * j + 1] = e1, sc[4 * j + 2] = e2, sc[4 * j + 3] = e3;
    }
}

/* The probabilities as bf16 pairs: p[2j] row r0, p[2j+1] row r1. */
__device__ __forceinline__ void to_bf16(const float (&sc)[64], uint32_t (&p)[32])
{
#pragma unroll
    for (int j = 0; j < 16; ++j)
        p[2 * j] = pack_bf16(sc[4 * j], sc[4 * j + 1]), p[2 * j + 1] = pack_bf16(sc[4 * j + 2], sc[4 * j + 3]);
}

template <int D>
__device__ __forceinline__ void rescale(float (&acc)[D / 2], float alpha0, float alpha1)
{
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        acc[4 * j] *= alpha0, acc[4 * j + 1] *= alpha0;
        acc[4 * j + 2] *= alpha1, acc[4 * j + 3] *= alpha1;
    }
}

/* O / l into this thread's rows r0 and r1 of out (those under Tq); a row
 * that saw no key (l = 0) as zeros. */
template <int D>
__device__ __forceinline__ void store_o(const float (&acc)[D / 2], float l0, float l1, __nv_bfloat16 *out, int r0,
                                        int r1, int Tq, int t4)
{
    l0 = quad_sum(l0), l1 = quad_sum(l1);
    const float inv0 = l0 > 0.f ? 1.f / l0 : 0.f, inv1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
        const int c = 8 * j + 2 * t4;
        if (r0 < Tq)
            *reinterpret_cast<__nv_bfloat162 *>(out + (size_t)r0 * D + c) =
                __floats2bfloat162_rn(acc[4 * j] * inv0, acc[4 * j + 1] * inv0);
        if (r1 < Tq)
            *reinterpret_cast<__nv_bfloat162 *>(out + (size_t)r1 * D + c) =
                __floats2bfloat162_rn(acc[4 * j + 2] * inv1, acc[4 * j + 3] * inv1);
    }
}

/* Key tiles block rows row0.. need: all of Tk, or under the causal mask up
 * to the last row's last key. */
__device__ __forceinline__ int key_tiles(int row0, int Tq, int Tk, int causal)
{
    if (!causal)
        return KB_CEIL_DIV(Tk, kBC);
    const int last = min(row0 + kBR, Tq) - 1;
    const int keys = min(Tk, last + Tk - Tq + 1);
    return keys > 0 ? KB_CEIL_DIV(keys, kBC) : 0;
}
#endif
}

template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    attention_flash_wgmma_kernel(const __grid_constant__ CUtensorMap map_q, const __grid_constant__ CUtensorMap map_k,
                                 const __grid_constant__ CUtensorMap map_v, int Tq, int Tk, int causal, int group,
                                 float sl2, int row_tiles, int heads, __nv_bfloat16 *__restrict__ o)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int S = kStages<D>, kTile = kTileBytes<D>;
    __shared__ unsigned long long q_full, k_full[S], v_full[S], empty[S];
    extern __shared__ __align__(128) unsigned char smem[];
    const KbAttnTile tile = kb_attn_tile(row_tiles, heads, kBR, causal);
    const int tid = threadIdx.x, wg = tid / 128;
    const int kv_head = (int)(tile.bh / group), n_tiles = key_tiles(tile.row0, Tq, Tk, causal);
    /* The swizzle permutes by address bits 7-9: tiles start 1024-aligned. */
    const uint32_t q_s = (bf16_smem_addr(smem) + 1023) & ~1023u, k_s = q_s + kTile, v_s = k_s + S * kTile;

    if (tid == 0) {
        kb_mbar_init(&q_full, 1);
        for (int s = 0; s < S; ++s) {
            kb_mbar_init(&k_full[s], 1);
            kb_mbar_init(&v_full[s], 1);
            kb_mbar_init(&empty[s], kConsumers * 4); /* one arrival per consumer warp */
        }
        kb_mbar_init_fence();
    }
    __syncthreads();

    if (wg == 0) {
        bf16_setmaxnreg_dec<kProducerRegs>();
        if (tid == 0 && n_tiles > 0) {
            kb_mbar_arrive_expect(&q_full, kTile);
            load_tile<D>(q_s, &map_q, tile.row0, (int)tile.bh, &q_full);
            for (int t = 0, s = 0, phase = 0; t < n_tiles; ++t) {
                kb_mbar_wait(&empty[s], phase ^ 1);
                kb_mbar_arrive_expect(&k_full[s], kTile);
                load_tile<D>(k_s + s * kTile, &map_k, t * kBC, kv_head, &k_full[s]);
                kb_mbar_arrive_expect(&v_full[s], kTile);
                load_tile<D>(v_s + s * kTile, &map_v, t * kBC, kv_head, &v_full[s]);
                if (++s == S)
                    s = 0, phase ^= 1;
            }
        }
        return;
    }

    bf16_setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1, lane = tid % 32, w = (tid % 128) / 32, t4 = lane % 4;
    const int wrow = tile.row0 + cw * 64 + w * 16;      /* this warp's first query row */
    const int r0 = wrow + lane / 4, r1 = r0 + 8;        /* this thread's two query rows */
    const int diag = Tk - Tq;                           /* key j is masked for row i when j > i + diag */
    const uint32_t q_wg = q_s + cw * 64 * 128;          /* this consumer's 64 rows in each panel of Q */
    float acc[D / 2], m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
#pragma unroll
    for (int i = 0; i < D / 2; ++i)
        acc[i] = 0.f;
    /* Tile t's S is issued together with tile t - 1's P V, and its softmax
     * runs while that P V does; the two consumers take turns at issuing
     * (ping-pong), so one's softmax runs under the other's MMAs.  The first
     * tile (S alone) and the last P V are peeled off the loop: an MMA
     * issued under a branch would make ptxas serialize them all. */
    if (n_tiles == 0) { /* every row of the block sees no key */
        store_o<D>(acc, 0.f, 0.f, o + (size_t)tile.bh * Tq * D, r0, r1, Tq, t4);
        return;
    }
    uint32_t p[32];                            /* P of the tile before, as bf16 pairs, while its P V runs */
    float alpha0, alpha1;                      /* and the factors that rescale O before it */
    int s = 0, phase = 0, ps = 0, pphase = 0; /* the ring stage (and phase) of this tile and of the one before */
    kb_mbar_wait(&q_full, 0);
    if (cw == 1)
        sched_signal(0); /* consumer 0 issues first */
    {
        float sc[64];
        sched_wait(cw);
        kb_mbar_wait(&k_full[0], 0);
        fence_acc(sc);
        wgmma_fence();
        issue_s<D>(sc, q_wg, k_s);
        sched_signal(1 - cw);
        wgmma_wait<0>();
        fence_acc(sc);
        mask_tile(sc, 0, Tk, causal, r0, r1, wrow, diag, t4);
        softmax(sc, sl2, m0, m1, l0, l1, alpha0, alpha1);
        to_bf16(sc, p);
        if (++s == S)
            s = 0, phase ^= 1;
    }
    for (int t = 1; t < n_tiles; ++t) {
        float sc[64];
        sched_wait(cw);
        kb_mbar_wait(&k_full[s], phase);
        kb_mbar_wait(&v_full[ps], pphase);
        rescale<D>(acc, alpha0, alpha1); /* no MMA is in flight on O now */
        fence_acc(sc);
        fence_acc(acc);
        fence_regs(p);
        wgmma_fence();
        issue_s<D>(sc, q_wg, k_s + s * kTile);
        issue_pv<D>(acc, p, v_s + ps * kTile);
        sched_signal(1 - cw);
        wgmma_wait<1>(); /* S is done; the P V before may still run */
        fence_acc(sc);
        mask_tile(sc, t * kBC, Tk, causal, r0, r1, wrow, diag, t4);
        softmax(sc, sl2, m0, m1, l0, l1, alpha0, alpha1);
        wgmma_wait<0>(); /* the P V before is done: its stage goes back, its P registers are free */
        fence_acc(acc);
        fence_regs(p);
        if (lane == 0)
            bf16_mbar_arrive(&empty[ps]);
        to_bf16(sc, p);
        ps = s, pphase = phase;
        if (++s == S)
            s = 0, phase ^= 1;
    }
    sched_wait(cw);
    kb_mbar_wait(&v_full[ps], pphase);
    rescale<D>(acc, alpha0, alpha1);
    fence_acc(acc);
    fence_regs(p);
    wgmma_fence();
    issue_pv<D>(acc, p, v_s + ps * kTile);
    if (cw == 0)
        sched_signal(1); /* consumer 1's last turn; consumer 0 has none left */
    wgmma_wait<0>();
    fence_acc(acc);
    fence_regs(p);
    if (lane == 0)
        bf16_mbar_arrive(&empty[ps]);

    store_o<D>(acc, l0, l1, o + (size_t)tile.bh * Tq * D, r0, r1, Tq, t4);
#else
    (void)map_q, (void)map_k, (void)map_v, (void)Tq, (void)Tk, (void)causal, (void)group, (void)sl2;
    (void)row_tiles, (void)heads, (void)o;
    __trap(); /* no wgmma, TMA or setmaxnreg on this arch: the variant SKIPs here */
#endif
}

/* ---- host side -------------------------------------------------------------- */

typedef struct {
    kb_encode_tiled_fn encode;
    CUtensorMap map_q, map_k, map_v;
    kb_attention_args seen; /* the arguments the maps describe */
} wgmma_ctx;

static const char *unsupported(const kb_shape *s)
{
    const char *why = kb_sm90a_unsupported();
    return why ? why : s->d[4] == 64 || s->d[4] == 128 ? NULL : "flash_wgmma has head dims 64 and 128";
}

/* A bf16 tensor of `heads` blocks of `rows` x D (head_stride elements
 * apart), read in boxes of 64 columns x 128 rows of one head, 128-byte
 * swizzled, zeros past its rows. */
static const char *encode(const wgmma_ctx *c, CUtensorMap *map, const void *base, int D, int rows, int64_t heads,
                          int64_t head_stride)
{
    const cuuint64_t dims[3] = {(cuuint64_t)D, (cuuint64_t)rows, (cuuint64_t)heads};
    const cuuint64_t strides[2] = {(cuuint64_t)D * 2, (cuuint64_t)head_stride * 2}; /* bytes */
    const cuuint32_t box[3] = {64, kBR, 1};
    return kb_encode_bf16(c->encode, map, base, 3, dims, strides, box);
}

static const char *make_maps(wgmma_ctx *c, const kb_attention_args *a)
{
    const int64_t kv_stride = a->kv_stride ? a->kv_stride : (int64_t)a->Tk * a->D;
    const int64_t kv_heads = (int64_t)a->B * (a->H / kb_attention_group(a));
    const char *err = encode(c, &c->map_q, a->q, a->D, a->Tq, (int64_t)a->B * a->H, (int64_t)a->Tq * a->D);
    if (!err)
        err = encode(c, &c->map_k, a->k, a->D, a->Tk, kv_heads, kv_stride);
    if (!err)
        err = encode(c, &c->map_v, a->v, a->D, a->Tk, kv_heads, kv_stride);
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

static void teardown(void *ctx) { free(ctx); }

/* The driver's cuTensorMapEncodeTiled through the runtime and the
 * shared-memory opt-in of both head dims, once, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    (void)args;
    wgmma_ctx *c = (wgmma_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *err = kb_tensor_map_encoder(&c->encode);
    if (!err)
        err = kb_cuda_status(cudaFuncSetAttribute((const void *)attention_flash_wgmma_kernel<64>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<64>));
    if (!err)
        err = kb_cuda_status(cudaFuncSetAttribute((const void *)attention_flash_wgmma_kernel<128>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes<128>));
    if (err) {
        free(c);
        return err;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    wgmma_ctx *c = (wgmma_ctx *)ctx;
    if (a->D != 64 && a->D != 128)
        return "flash_wgmma has head dims 64 and 128";
    if (a->tk_len)
        return "flash_wgmma reads no device key count";
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15 || a->kv_stride % 8)
        return "flash_wgmma needs 16-byte aligned tensors and heads";
    if (!same_tensors(&c->seen, a)) {
        const char *err = make_maps(c, a); /* other tensors than last time: a few microseconds on the host */
        if (err)
            return err;
    }
    const int row_tiles = KB_CEIL_DIV(a->Tq, kBR), heads = a->B * a->H;
    const unsigned grid = (unsigned)((int64_t)row_tiles * heads);
    const float sl2 = a->scale * KB_LOG2E;
    if (a->D == 128)
        attention_flash_wgmma_kernel<128><<<grid, kThreads, kSmemBytes<128>, stream>>>(
            c->map_q, c->map_k, c->map_v, a->Tq, a->Tk, a->causal, kb_attention_group(a), sl2, row_tiles, heads,
            (__nv_bfloat16 *)a->o);
    else
        attention_flash_wgmma_kernel<64><<<grid, kThreads, kSmemBytes<64>, stream>>>(
            c->map_q, c->map_k, c->map_v, a->Tq, a->Tk, a->causal, kb_attention_group(a), sl2, row_tiles, heads,
            (__nv_bfloat16 *)a->o);
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_flash_wgmma = {
    .name = "flash_wgmma",
    .summary = "FlashAttention-3 structure: TMA producer warpgroup, 2 wgmma consumers, P in registers; D 64 or 128",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 90,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
