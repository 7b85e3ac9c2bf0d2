/* attention flash_mma: FlashAttention-2 on the tensor cores with
 * mma.sync.m16n8k16 (bf16 in, fp32 accumulate).  A block of 4 warps owns
 * 128 query rows of one head, 32 per warp in two m16 tiles (rows 32w.. at
 * D = 128; rows 16w.. and 64+16w.. at D <= 64, so that on the causal
 * diagonal every warp does the same 1.5 tile times), and streams keys in
 * tiles of 64 rows of K and V.  Per tile and warp:
 *   S = Q K^T: Q fragments by ldmatrix.x4 (kept in registers for D <= 64),
 *     K fragments by ldmatrix.x4;
 *   online softmax in registers: row max over the 4 lanes of a quad, exp2
 *     with scale * log2(e) folded into one FFMA, O rescaled;
 *   P V: the S accumulators, converted to bf16 pairs, are already the A
 *     fragments of the second MMA; V fragments by ldmatrix.x4.trans.
 * K and V go through a 2-stage cp.async pipeline (one barrier per tile);
 * rows past Tk are zero-filled and their scores set to -inf.  Shared rows
 * are padded by 16 bytes, so every ldmatrix is conflict-free.  Causal: key
 * tiles above the block's last row are never loaded, and only tiles that
 * cross a warp's diagonal are masked; row tiles run longest first.  The
 * diagonal is bottom-right aligned (key j > i + Tk - Tq is masked; causal
 * Tq > Tk SKIPs).  Grouped-query attention: query head bh reads KV head
 * bh / (H / Hkv).
 * Resources: 104 KiB of shared memory at D = 128 (+2 KiB for the running
 * sums), up to 255 registers: two blocks per SM.  Shapes: D a multiple of
 * 16 up to 128; any B, H, Tq, Tk.
 *
 * Builds on flash: the same algorithm on the tensor cores.
 * Measured (results/h100/kbench-20261127-195738.csv; % of the run's 967 TFLOP/s
 * bf16 ceiling): 378.3 TFLOP/s at 2x16x4096x4096x128 (39.1%), 309.9 at
 * 4x16x4096x4096x64 (32.1%), 377.1 at 4x16x8192x8192x128 (39.0%), 368.3 at
 * ..128c (38.1%); PyTorch's bf16 SDPA in the same run: 662, 477, 689 and 609
 * (ours 0.55-0.65x); cudnn 675, 540, 692 and 644 (ours 0.54-0.57x).
 * Gap to the limit: mma.sync tops out near 2/3 of the wgmma rate that the
 * ceiling's wgmma kernel measures, and the softmax's FP32/MUFU work and the
 * ldmatrix traffic share its issue slots (next rung: flash_wgmma).  History:
 * docs/notes/attention.md. */
#include <stdint.h>
#include <type_traits>
#include <cuda_bf16.h>
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "variants/attention/attention_common.cuh"

typedef __nv_bfloat16 bf16;

template <int D>
struct Bf16Cfg {
    static constexpr int kBR = 128, kBC = 64, kWarps = 4, kThreads = kWarps * 32;
    static constexpr int kMT = 2;              /* m16 tiles per warp: 32 rows */
    static constexpr int kLd = D + 8;          /* elements per shared row (16 bytes of padding) */
    static constexpr int kKD = D / 16;         /* k-steps of S = Q K^T */
    static constexpr int kNS = kBC / 8;        /* n8 tiles of S */
    static constexpr int kND = D / 8;          /* n8 tiles of O */
    static constexpr int kKP = kBC / 16;       /* k-steps of O += P V */
    static constexpr int kChunks = D / 8;      /* 16-byte chunks per row */
    static constexpr int kQElems = kBR * kLd, kKVElems = kBC * kLd;
    static constexpr int kMainBytes = (kQElems + 4 * kKVElems) * (int)sizeof(bf16); /* Q, 2 x (K, V) */
    static constexpr int kSmemBytes = kMainBytes + 4 * kThreads * (int)sizeof(float); /* + l */
    static constexpr bool kQInRegs = D <= 64;
    /* A warp's rows: with kSplitRows its m tile mt holds rows 16w + 64mt ..
     * of the block (see the top), otherwise rows 32w + 16mt .. */
    static constexpr bool kSplitRows = D <= 64;
    static constexpr int kWarpRows = kSplitRows ? 16 : 32, kMtRows = kSplitRows ? 64 : 16;
    static_assert(D % 16 == 0 && D <= 128, "D: a multiple of 16 up to 128");
};

/* ROWS rows of a (T, D) head starting at row r0 into dst (row stride kLd),
 * 16-byte cp.async, zero-filled past row T.  The thread index is read here
 * (volatile), so the compiler recomputes the few addresses per call instead
 * of holding one per copy in registers across the tile loop (which spills
 * at D >= 96). */
template <int D, int ROWS>
__device__ __forceinline__ void bf16_copy_rows(bf16 *dst, const bf16 *head, int r0, int T)
{
    using Cfg = Bf16Cfg<D>;
    constexpr int kChunks = Cfg::kChunks, kThreads = Cfg::kThreads;
    constexpr int kTotal = ROWS * kChunks;
    static_assert(kTotal % kThreads == 0, "equal copies per thread");
    int tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    if constexpr (kThreads % kChunks == 0) {
        /* the same chunk of every row: constant strides */
        constexpr int kRowsPerPass = kThreads / kChunks;
        const int r = tid / kChunks, ch = tid % kChunks;
        const bf16 *src = head + (size_t)(r0 + r) * D + ch * 8;
        bf16 *out = dst + r * Cfg::kLd + ch * 8;
        const int left = T - r0 - r; /* rows of this thread that exist: passes it < left / kRowsPerPass */
#pragma unroll
        for (int it = 0; it < ROWS / kRowsPerPass; ++it) {
            const bool ok = it * kRowsPerPass < left;
            kb_cp_async16(out + it * kRowsPerPass * Cfg::kLd, ok ? src + it * kRowsPerPass * D : head,
                               ok ? 16 : 0);
        }
    } else {
#pragma unroll
        for (int it = 0; it < kTotal / kThreads; ++it) {
            const int c = tid + it * kThreads;
            const int r = c / kChunks, ch = c % kChunks;
            const bool ok = r0 + r < T;
            const bf16 *src = ok ? head + (size_t)(r0 + r) * D + ch * 8 : head;
            kb_cp_async16(dst + r * Cfg::kLd + ch * 8, src, ok ? 16 : 0);
        }
    }
}

template <int D>
__global__ void __launch_bounds__(Bf16Cfg<D>::kThreads, 2)
attention_flash_bf16_kernel(int Tq, int Tk, int64_t kv_stride, int causal, int group, float sl2, int row_tiles, int heads,
                            const bf16 *__restrict__ q,
                            const bf16 *__restrict__ k, const bf16 *__restrict__ v, bf16 *__restrict__ o)
{
    using Cfg = Bf16Cfg<D>;
    constexpr int BR = Cfg::kBR, BC = Cfg::kBC, MT = Cfg::kMT, LD = Cfg::kLd;
    constexpr int KD = Cfg::kKD, NS = Cfg::kNS, ND = Cfg::kND, KP = Cfg::kKP;
    constexpr uint32_t kRowBytes = LD * sizeof(bf16), kStageBytes = Cfg::kKVElems * sizeof(bf16);
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *Qs = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *Ks = Qs + Cfg::kQElems;               /* stage s at Ks + s * kKVElems */
    bf16 *Vs = Ks + 2 * Cfg::kKVElems;

    const KbAttnTile tile = kb_attn_tile(row_tiles, heads, BR, causal);
    const int i0 = tile.row0;
    const bf16 *k_head = k + (size_t)(tile.bh / group) * kv_stride;
    const bf16 *v_head = v + (size_t)(tile.bh / group) * kv_stride;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, tq = lane % 4; /* the MMA's group and thread-in-group */
    const int last_row = min(i0 + BR, Tq) - 1;
    /* Causal: row i sees keys j <= i + off; off >= 0 (Tq <= Tk), and
     * last_row + off <= Tk - 1.  diag0 is the last key the warp's first
     * row sees. */
    const int off = Tk - Tq;
    const int n_tiles = causal ? (last_row + off) / BC + 1 : KB_CEIL_DIV(Tk, BC);
    const int warp_row0 = i0 + warp * Cfg::kWarpRows;
    const int diag0 = warp_row0 + off;

    bf16_copy_rows<D, BR>(Qs, q + (size_t)tile.bh * Tq * D, i0, Tq);
    bf16_copy_rows<D, BC>(Ks, k_head, 0, Tk);
    bf16_copy_rows<D, BC>(Vs, v_head, 0, Tk);
    kb_cp_async_commit();

    /* ldmatrix row addresses of this lane: lanes 8m..8m+7 give the rows of
     * matrix m.  Q (A, m16k16): matrices (rows 0-7, k 0-7), (rows 8-15,
     * k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).  K (B, non-trans):
     * (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 0-7),
     * (keys 8-15, d 8-15): the b0, b1 of n tile 2np, then of 2np + 1.
     * V (B, trans): (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7,
     * d 8-15), (keys 8-15, d 8-15): b0, b1 of d tile 2dp, then of 2dp + 1. */
    const int mi = lane / 8, lr = lane % 8;
    const uint32_t q_addr = (uint32_t)__cvta_generic_to_shared(Qs) +
                            ((warp * Cfg::kWarpRows + (mi & 1) * 8 + lr) * LD + (mi >> 1) * 8) * (uint32_t)sizeof(bf16);
    const uint32_t k_addr = (uint32_t)__cvta_generic_to_shared(Ks) +
                            (((mi >> 1) * 8 + lr) * LD + (mi & 1) * 8) * (uint32_t)sizeof(bf16);
    const uint32_t v_addr = (uint32_t)__cvta_generic_to_shared(Vs) +
                            (((mi & 1) * 8 + lr) * LD + (mi >> 1) * 8) * (uint32_t)sizeof(bf16);

    uint32_t qf[MT][Cfg::kQInRegs ? KD : 1][4];
    if constexpr (Cfg::kQInRegs) {
        kb_cp_async_wait<0>();
        __syncthreads();
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int kd = 0; kd < KD; ++kd)
                ldsm_x4(qf[mt][kd], q_addr + mt * Cfg::kMtRows * kRowBytes + kd * 32);
    }

    /* The running sums l live in shared memory, one slot per thread and
     * row (only this thread touches them): in registers they push D = 128
     * past 255 and into spills. */
    float acc[MT][ND][4], m[MT][2];
    float *l_s = reinterpret_cast<float *>(smem_raw + Cfg::kMainBytes) + threadIdx.x;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            m[mt][h] = -INFINITY;
            l_s[(mt * 2 + h) * Cfg::kThreads] = 0.0f;
        }
#pragma unroll
        for (int dt = 0; dt < ND; ++dt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[mt][dt][e] = 0.0f;
    }

    for (int t = 0; t < n_tiles; ++t) {
        const int j0 = t * BC;
        const uint32_t stage = (uint32_t)(t & 1) * kStageBytes;
        kb_cp_async_wait<0>(); /* tile t is in (this thread's copies) */
        __syncthreads();       /* everyone's copies visible; tile t - 1's stage is free */
        if (t + 1 < n_tiles) {
            const int next = (t + 1) & 1;
            bf16_copy_rows<D, BC>(Ks + next * Cfg::kKVElems, k_head, j0 + BC, Tk);
            bf16_copy_rows<D, BC>(Vs + next * Cfg::kKVElems, v_head, j0 + BC, Tk);
        }
        kb_cp_async_commit();

        if (!Cfg::kSplitRows && causal && j0 > diag0 + 31) /* above every row of this warp (never tile 0) */
            continue;
        /* With kSplitRows, m tile 0 of the last key tile may lie wholly above
         * the diagonal (never in tile 0, so its m is finite by then) and is
         * then skipped.  m tile 1 always reaches the tile when Tq = Tk; with
         * off > 0 it may not, and its rows then see only -inf in the tile,
         * which leaves their finite m, l and O unchanged (alpha = 1, p = 0).  F, the first m tile
         * computed, is a constant in each instance of the tile's work (a
         * run-time bound in the loops measured 15% slower everywhere). */
        const bool skip_mt0 = Cfg::kSplitRows && causal && j0 > diag0 + 15;
        auto tile_work = [&](auto first) {
            constexpr int F = decltype(first)::value;
            const uint32_t k_tile = k_addr + stage, v_tile = v_addr + stage;
            /* S = Q K^T */
            float s[MT][NS][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < NS; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        s[mt][nt][e] = 0.0f;
#pragma unroll
            for (int kd = 0; kd < KD; ++kd) {
                uint32_t qa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if (mt < F)
                        continue;
                    if constexpr (Cfg::kQInRegs) {
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            qa[mt][e] = qf[mt][kd][e];
                    } else {
                        ldsm_x4(qa[mt], q_addr + mt * Cfg::kMtRows * kRowBytes + kd * 32);
                    }
                }
#pragma unroll
                for (int np = 0; np < NS / 2; ++np) {
                    uint32_t kb[4];
                    ldsm_x4(kb, k_tile + np * 16 * kRowBytes + kd * 32);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        if (mt < F)
                            continue;
                        mma_bf16(s[mt][2 * np], qa[mt], kb[0], kb[1]);
                        mma_bf16(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
                    }
                }
            }

            /* Keys past Tk, and keys above the diagonal when causal.  C
             * layout: element e of n tile nt is row g + 8 (e / 2), key
             * 8 nt + 2 tq + e % 2. */
            if (j0 + BC > Tk || (causal && j0 + BC - 1 > diag0)) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int nt = 0; nt < NS; ++nt)
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int row = warp_row0 + mt * Cfg::kMtRows + g + (e >> 1) * 8;
                            const int col = j0 + nt * 8 + 2 * tq + (e & 1);
                            if (col >= Tk || (causal && col > row + off))
                                s[mt][nt][e] = -INFINITY;
                        }
            }

            /* Online softmax, rows g (h = 0) and g + 8 (h = 1) of each m
             * tile.  Tile 0 holds key 0, which every row sees (off >= 0), so
             * m is finite from the first tile on. */
#pragma unroll
            for (int mt = F; mt < MT; ++mt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float mx = fmaxf(s[mt][0][2 * h], s[mt][0][2 * h + 1]);
#pragma unroll
                    for (int nt = 1; nt < NS; ++nt)
                        mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
                    mx = quad_max(mx);
                    const float m_new = fmaxf(m[mt][h], mx);
                    const float alpha = kb_ex2((m[mt][h] - m_new) * sl2); /* m = -inf: 0 */
                    const float msl = m_new * sl2;
                    m[mt][h] = m_new;
                    float sum = 0.0f;
#pragma unroll
                    for (int nt = 0; nt < NS; ++nt)
#pragma unroll
                        for (int e = 2 * h; e < 2 * h + 2; ++e) {
                            const float p = kb_ex2(fmaf(s[mt][nt][e], sl2, -msl));
                            s[mt][nt][e] = p;
                            sum += p;
                        }
                    float &l = l_s[(mt * 2 + h) * Cfg::kThreads];
                    l = l * alpha + sum;
#pragma unroll
                    for (int dt = 0; dt < ND; ++dt) {
                        acc[mt][dt][2 * h] *= alpha;
                        acc[mt][dt][2 * h + 1] *= alpha;
                    }
                }

            /* O += P V: A fragment kk = n tiles 2kk and 2kk + 1 of P, in bf16. */
#pragma unroll
            for (int kk = 0; kk < KP; ++kk) {
                uint32_t pa[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    if (mt < F)
                        continue;
                    pa[mt][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    pa[mt][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    pa[mt][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    pa[mt][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < ND / 2; ++dp) {
                    uint32_t vb[4];
                    ldsm_x4_trans(vb, v_tile + kk * 16 * kRowBytes + dp * 32);
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        if (mt < F)
                            continue;
                        mma_bf16(acc[mt][2 * dp], pa[mt], vb[0], vb[1]);
                        mma_bf16(acc[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
                    }
                }
            }
        };
        if (skip_mt0)
            tile_work(std::integral_constant<int, 1>{});
        else
            tile_work(std::integral_constant<int, 0>{});
    }
    kb_cp_async_wait<0>(); /* only empty groups remain */

    /* Normalize and stage this warp's 32 rows in its own rows of Qs (no
     * other warp reads them), then write 16-byte chunks of whole rows. */
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l_s[(mt * 2 + h) * Cfg::kThreads];
            sum = quad_sum(sum);
            const float inv = 1.0f / sum;
            bf16 *row = Qs + (warp * Cfg::kWarpRows + mt * Cfg::kMtRows + g + 8 * h) * LD + 2 * tq;
#pragma unroll
            for (int dt = 0; dt < ND; ++dt)
                *reinterpret_cast<uint32_t *>(row + dt * 8) =
                    pack_bf16(acc[mt][dt][2 * h] * inv, acc[mt][dt][2 * h + 1] * inv);
        }
    __syncwarp();
    bf16 *o_head = o + (size_t)tile.bh * Tq * D;
#pragma unroll
    for (int it = 0; it < 32 * Cfg::kChunks / 32; ++it) {
        const int c = lane + it * 32;
        const int r = c / Cfg::kChunks, ch = c % Cfg::kChunks;
        const int local = (r / 16) * Cfg::kMtRows + r % 16; /* from the warp's first row */
        const int row = warp_row0 + local;
        if (row < Tq)
            *reinterpret_cast<int4 *>(o_head + (size_t)row * D + ch * 8) =
                *reinterpret_cast<const int4 *>(Qs + (warp * Cfg::kWarpRows + local) * LD + ch * 8);
    }
}

/* ---- host side ---------------------------------------------------------------- */

/* Calls f with the kernel for D and its shared-memory size, or returns false. */
template <class F>
static bool bf16_dispatch(int D, F &&f)
{
    switch (D) {
    case 16: f(attention_flash_bf16_kernel<16>, Bf16Cfg<16>::kSmemBytes); return true;
    case 32: f(attention_flash_bf16_kernel<32>, Bf16Cfg<32>::kSmemBytes); return true;
    case 48: f(attention_flash_bf16_kernel<48>, Bf16Cfg<48>::kSmemBytes); return true;
    case 64: f(attention_flash_bf16_kernel<64>, Bf16Cfg<64>::kSmemBytes); return true;
    case 80: f(attention_flash_bf16_kernel<80>, Bf16Cfg<80>::kSmemBytes); return true;
    case 96: f(attention_flash_bf16_kernel<96>, Bf16Cfg<96>::kSmemBytes); return true;
    case 112: f(attention_flash_bf16_kernel<112>, Bf16Cfg<112>::kSmemBytes); return true;
    case 128: f(attention_flash_bf16_kernel<128>, Bf16Cfg<128>::kSmemBytes); return true;
    default: return false;
    }
}

static const char *unsupported(const kb_shape *s)
{
    const int64_t D = s->d[4];
    return D % 16 == 0 && D <= 128 ? kb_attention_fused_unsupported(s)
                                   : "D must be a multiple of 16 up to 128 (MMA k-steps of 16)";
}

/* The shared-memory opt-in, once, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    *ctx = NULL;
    cudaError_t e = cudaSuccess;
    if (!bf16_dispatch(a ? a->D : 128, [&](auto kernel, int smem) {
            e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        }))
        return "D must be a multiple of 16 up to 128";
    return kb_cuda_status(e);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    (void)ctx;
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15)
        return "flash_mma needs 16-byte aligned tensors";
    const int row_tiles = KB_CEIL_DIV(a->Tq, 128);
    const int heads = a->B * a->H;
    const unsigned grid = (unsigned)((int64_t)row_tiles * heads);
    const float sl2 = a->scale * KB_LOG2E;
    if (!bf16_dispatch(a->D, [&](auto kernel, int smem) {
            kernel<<<grid, 128, smem, stream>>>(a->Tq, a->Tk, a->kv_stride ? a->kv_stride : (int64_t)a->Tk * a->D,
                                               a->causal, kb_attention_group(a), sl2, row_tiles, heads,
                                               (const bf16 *)a->q,
                                               (const bf16 *)a->k, (const bf16 *)a->v, (bf16 *)a->o);
        }))
        return "D must be a multiple of 16 up to 128";
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_flash_mma[] = {
    {
        .name = "flash_mma",
        .summary = "FlashAttention-2: mma.sync bf16, ldmatrix, cp.async 2-stage K/V, 128x64 tiles; D % 16 == 0, D <= 128",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .unsupported = unsupported,
        .setup = setup,
        .launch = launch,
    },
    KB_VARIANT_END,
};
