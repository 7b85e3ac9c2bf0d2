/* attention_backward flash_mma: FlashAttention-2's backward (Algorithm 2)
 * on mma.sync.m16n8k16, bf16 in, fp32 accumulation.
 *   1. D_i = do_i . o_i into a workspace (backward_common.cuh's row dots);
 *   2. a block of 8 warps per (128 keys, b, KV head) keeps K_j, V_j in
 *      shared memory and dK, dV in registers (warp w: keys 16w.., all of D)
 *      and walks the group's query heads and their 64-row tiles (causal:
 *      from the first tile that sees a key of the block), Q_i, dO_i, lse_i
 *      and D_i double-buffered by cp.async.  Per tile and warp, transposed
 *      so that P and dS come out as the A operands of the products they
 *      feed: S^T = K_j Q_i^T; P^T = exp2(S^T scale log2e - lse log2e), 0
 *      where the mask, a row past Tq or a key past Tk drops the pair; dP^T
 *      = V_j dO_i^T; dS^T = P^T (dP^T - D_i); dV += P^T dO_i; dK += dS^T Q_i;
 *      dS^T to shared memory, then dQ_i += dS K_j (a warp: 16 rows x half
 *      of D) into an fp32 workspace by red.global.add.v2.f32 (two scalar
 *      reds before sm_90): dq's summation order, so its last bits, are
 *      nondeterministic.  dK scale and dV leave in bf16 (zeros for keys no
 *      query sees);
 *   3. dq = bf16(scale dq_accum); the accumulator is zeroed in the launch.
 * Non-causal blocks start their walk at tile kb, so that a head's key
 * blocks do not add into the same dq rows at once; causal blocks run
 * longest first.  Rows padded by 16 bytes: ldmatrix is conflict-free.
 * D: a multiple of 16 up to 128 (templated; K and V fragments in registers
 * at D <= 64).  Resources: shared memory 155 KiB at D = 128 (K, V 2x34,
 * Q, dO 2x2x17, dS^T 18, lse and D_i 1), 91 KiB at D = 64; 256 threads, a
 * block per SM; 255 registers at D = 128, 228 at D = 64, no spills.
 * Workspaces (setup): dq in fp32, B*H*Tq*D, and D_i, B*H*Tq.
 *
 * Builds on: cublas (the composed rung), fused so that S, P, dP, dS never
 * leave the chip.  Prediction at 2x16x4096x4096x128 on an H200: ~250
 * TFLOP/s (26% of the ~950 ceiling): mma.sync tops out near 2/3 of wgmma,
 * and every m16 tile streams its B operand from shared memory (~290
 * bytes an MMA, which bounds it near 470), before the exps, 2 barriers a
 * tile and the dq reductions.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 230
 * TFLOP/s at 2x16x4096x4096x128 (2.99 ms, 1903 MHz under its power cap),
 * 23.9% of the run's 961 TFLOP/s bf16 tensor ceiling, 0.40x cuDNN and 0.88x
 * SDPA's FlashAttention-2 backend (260); 224 causal (1.00x FA2).
 * Gap to the limit: shared-memory operand traffic and mma.sync's rate
 * (next rung: wgmma with dS in shared memory, as FlashAttention-3). */
#include <stdint.h>
#include <stdlib.h>
#include <cuda_bf16.h>
#include "ops/attention_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/cp_async.cuh"
#include "variants/attention/attention_common.cuh"
#include "variants/attention_backward/backward_common.cuh"

typedef __nv_bfloat16 bf16;

template <int D>
struct BwdCfg {
    static constexpr int kBC = 128, kBR = 64;      /* keys a block, query rows a tile */
    static constexpr int kWarps = 8, kThreads = kWarps * 32;
    static constexpr int kLd = D + 8;              /* elements per K, V, Q, dO row in shared memory */
    static constexpr int kLdS = kBR + 8;           /* elements per dS^T row (a key) */
    static constexpr int kKD = D / 16;             /* k-steps over D: S^T, dP^T */
    static constexpr int kNQ = kBR / 8;            /* n8 tiles over the queries: S^T, dP^T */
    static constexpr int kKQ = kBR / 16;           /* k-steps over the queries: dV, dK */
    static constexpr int kND = D / 8;              /* n8 tiles over D: dV, dK */
    static constexpr int kNDq = D / 16;            /* n8 tiles over D of one warp's dQ (every other) */
    static constexpr int kChunks = D / 8;          /* 16-byte chunks a row */
    static constexpr int kKVElems = kBC * kLd, kQElems = kBR * kLd, kSElems = kBC * kLdS;
    /* K, V; Q and dO, 2 stages each; dS^T; lse and D_i, 2 stages each */
    static constexpr int kSmemBytes = (2 * kKVElems + 4 * kQElems + kSElems) * (int)sizeof(bf16) +
                                      4 * kBR * (int)sizeof(float);
    static constexpr bool kKVRegs = D <= 64;       /* this warp's K and V A fragments in registers */
    static_assert(D % 16 == 0 && D <= 128, "D: a multiple of 16 up to 128");
    static_assert(kBC == 16 * kWarps && kBR == 64, "a warp's 16 keys; 4 m16 tiles of dQ rows x 2 halves of D");
};

struct BwdParams {
    const bf16 *q, *k, *v, *dout;
    const float *lse, *dd;  /* per query row: the forward's lse (natural log), D_i */
    float *dq_acc;          /* B*H*Tq*D, zeroed */
    bf16 *dk, *dv;
    int Tq, Tk, group, causal;
    int64_t kv_heads;       /* B * Hkv */
    int n_kb;               /* key blocks a KV head */
    float sl2;              /* scale * log2(e) */
    float scale;
};

/* ROWS rows of a (T, D) head from row r0 into dst (row stride kLd) by
 * 16-byte cp.async, zeros past row T.  The thread index is read afresh, so
 * that the addresses are recomputed per call rather than held (spilled at
 * D >= 112) across the tile loop. */
template <int D, int ROWS>
__device__ __forceinline__ void bwd_copy_rows(bf16 *dst, const bf16 *head, int r0, int T)
{
    using Cfg = BwdCfg<D>;
    const int tid = kb_tid_fresh();
    constexpr int kChunks = Cfg::kChunks, kTotal = ROWS * kChunks, kThreads = Cfg::kThreads;
#pragma unroll
    for (int it = 0; it < KB_CEIL_DIV(kTotal, kThreads); ++it) {
        const int c = tid + it * kThreads;
        if (kTotal % kThreads == 0 || c < kTotal) {
            const int r = c / kChunks, ch = c % kChunks;
            const bool ok = r0 + r < T;
            kb_cp_async16(dst + r * Cfg::kLd + ch * 8, ok ? head + (size_t)(r0 + r) * D + ch * 8 : head, ok ? 16 : 0);
        }
    }
}

/* Fragment conventions (PTX, m16n8k16, g = lane / 4, t = lane % 4):
 *   A (16x16, row-major): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1],
 *     a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
 *   B (16x8, "col"): b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
 *   C (16x8): c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]; the lower
 *     column in the low half of each packed bf16 pair.
 *   ldmatrix.x4: lanes 8m..8m+7 give the row addresses of 8x8 matrix m,
 *     which lands in register m; plain, lane l gets M[l/4][2(l%4), +1] (a
 *     fragment whose pairs run along a stored row); .trans, lane l gets
 *     M[2(l%4), +1][l/4] (pairs down a stored column).
 * Here mi = lane / 8 (the matrix a lane addresses), lr = lane % 8 (its row
 * in it).  The C fragment of S^T and dP^T (m = key, n = query) is the A
 * fragment of dV and dK (m = key, k = query) with no data movement: A's
 * k-step kk is C's n tiles 2kk (a0, a1) and 2kk + 1 (a2, a3). */
template <int D>
__global__ void __launch_bounds__(BwdCfg<D>::kThreads, 1) attention_backward_flash_mma_kernel(BwdParams p)
{
    using Cfg = BwdCfg<D>;
    constexpr int BR = Cfg::kBR, BC = Cfg::kBC, LD = Cfg::kLd, LDS = Cfg::kLdS;
    constexpr int KD = Cfg::kKD, NQ = Cfg::kNQ, KQ = Cfg::kKQ, ND = Cfg::kND, NDQ = Cfg::kNDq;
    constexpr uint32_t kRow = LD * sizeof(bf16), kSRow = LDS * sizeof(bf16);
    constexpr uint32_t kQStage = Cfg::kQElems * sizeof(bf16);
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16 *Ks = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *Vs = Ks + Cfg::kKVElems;
    bf16 *Qs = Vs + Cfg::kKVElems;   /* stage s at Qs + s * kQElems */
    bf16 *dOs = Qs + 2 * Cfg::kQElems;
    bf16 *dSs = dOs + 2 * Cfg::kQElems; /* dS^T: row = key of the block, column = query of the tile */
    float *stats = reinterpret_cast<float *>(dSs + Cfg::kSElems); /* lse: stats + s BR; D_i: stats + (2 + s) BR */

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, tq = lane % 4, mi = lane / 8, lr = lane % 8;

    /* The block's key block and KV head (b * Hkv + KV head): causal, key
     * blocks in order across all heads (block 0's keys are seen by the most
     * query rows: longest first); else a head's key blocks side by side, so
     * that the blocks in flight share its Q and dO in L2. */
    const int64_t id = blockIdx.x;
    const int kb = p.causal ? (int)(id / p.kv_heads) : (int)(id % p.n_kb);
    const int64_t kvh = p.causal ? id % p.kv_heads : id / p.n_kb;
    const int Tq = p.Tq, Tk = p.Tk, causal = p.causal;
    const int j0 = kb * BC, kw0 = j0 + 16 * warp; /* the block's and this warp's first key */
    /* Causal: query i sees key j iff j <= i + off; the first query row that
     * sees key j0 is j0 - off (every later row sees it too, and it is
     * <= Tq - 1 since j0 <= Tk - 1), so the walk starts at its tile. */
    const int off = Tk - Tq;
    const int n_qt = KB_CEIL_DIV(Tq, BR);
    const int first_qt = causal ? max(0, j0 - off) / BR : 0;
    const int per_head = n_qt - first_qt; /* >= 1 */
    const int n_it = p.group * per_head;
    const int rot = causal ? 0 : kb % n_it;
    const bf16 *k_head = p.k + (size_t)kvh * Tk * D, *v_head = p.v + (size_t)kvh * Tk * D;

    /* Step `it` of the walk: the query head (b * H + h) and the tile's first row. */
    auto tile_of = [&](int it, int64_t &bhq, int &i0) {
        int c = it + rot;
        c = c >= n_it ? c - n_it : c;
        const int hg = c / per_head;
        bhq = kvh * p.group + hg; /* b*H + h = (b*Hkv + h/group) * group + h % group */
        i0 = (first_qt + c - hg * per_head) * BR;
    };
    /* Q_i, dO_i, lse_i and D_i of step `it` into stage `s` (zeros past Tq). */
    auto load_tile = [&](int it, int s) {
        int64_t bhq;
        int i0;
        tile_of(it, bhq, i0);
        bwd_copy_rows<D, BR>(Qs + s * Cfg::kQElems, p.q + (size_t)bhq * Tq * D, i0, Tq);
        bwd_copy_rows<D, BR>(dOs + s * Cfg::kQElems, p.dout + (size_t)bhq * Tq * D, i0, Tq);
        const int t = kb_tid_fresh();
        if (t < 2 * BR) {
            const int r = t % BR, which = t / BR; /* 0: lse, 1: D_i */
            const float *src = (which ? p.dd : p.lse) + (size_t)bhq * Tq;
            const bool ok = i0 + r < Tq;
            kb_cp_async4(stats + (2 * which + s) * BR + r, ok ? src + i0 + r : src, ok ? 4 : 0);
        }
    };

    bwd_copy_rows<D, BC>(Ks, k_head, j0, Tk);
    bwd_copy_rows<D, BC>(Vs, v_head, j0, Tk);
    kb_cp_async_commit();
    load_tile(0, 0);
    kb_cp_async_commit();

    const uint32_t ks_u = kb_smem_u32(Ks), vs_u = kb_smem_u32(Vs), qs_u = kb_smem_u32(Qs),
                   dos_u = kb_smem_u32(dOs), dss_u = kb_smem_u32(dSs);
    /* S^T = K Q^T and dP^T = V dO^T, k = d.
     *   A = this warp's 16 keys of K (V), A[key][d] = K[key][d]: rows along
     *   a stored row, plain ldmatrix.  Matrices: (keys 0-7, d 0-7) a0,
     *   (keys 8-15, d 0-7) a1, (keys 0-7, d 8-15) a2, (keys 8-15, d 8-15)
     *   a3: row 16w + (mi & 1) 8 + lr, column (mi >> 1) 8, + 16 kd.
     *   B = Q^T (dO^T), B[d][query] = Q[query][d]: b0 = Q[q g][d 2t, 2t+1],
     *   a pair along a stored Q row: plain ldmatrix of 8 queries x 8 d.
     *   Matrices: (queries 0-7, d 0-7) b0 and (queries 0-7, d 8-15) b1 of
     *   n tile 2np, (queries 8-15, d 0-7) b0 and (8-15, 8-15) b1 of 2np + 1:
     *   row (mi >> 1) 8 + lr, column (mi & 1) 8, + 16 np rows, + 16 kd. */
    const uint32_t a_off = ((16 * warp + (mi & 1) * 8 + lr) * LD + (mi >> 1) * 8) * (uint32_t)sizeof(bf16);
    const uint32_t bn_off = (((mi >> 1) * 8 + lr) * LD + (mi & 1) * 8) * (uint32_t)sizeof(bf16);
    /* dV += P^T dO and dK += dS^T Q, k = query.
     *   A = P^T (dS^T) from the C fragments (above).
     *   B = dO (Q), B[query][d] = dO[query][d]: b0 = dO[q 2t, 2t+1][d g], a
     *   pair down a stored column: ldmatrix.trans of 8 queries x 8 d.
     *   Matrices: (queries 0-7, d 0-7) b0 and (queries 8-15, d 0-7) b1 of
     *   n tile 2dp, (queries 0-7, d 8-15) b0 and (8-15, 8-15) b1 of 2dp + 1:
     *   row (mi & 1) 8 + lr, column (mi >> 1) 8, + 16 kk rows, + 16 dp. */
    const uint32_t bt_off = (((mi & 1) * 8 + lr) * LD + (mi >> 1) * 8) * (uint32_t)sizeof(bf16);
    /* dQ += dS K, k = key; warp w: query rows 16 mq.. of the tile, n8 tiles
     * dt = 2j + dh of D.
     *   A = dS, A[query][key] = dS^T[key][query]: a0 = dS^T[key 2t, 2t+1]
     *   [query g], down a stored column: ldmatrix.trans of 8 keys x 8
     *   queries.  Matrices: (keys 0-7, queries 0-7) a0, (keys 0-7, queries
     *   8-15) a1, (keys 8-15, queries 0-7) a2, (keys 8-15, queries 8-15) a3:
     *   row (mi >> 1) 8 + lr, column 16 mq + (mi & 1) 8, + 16 ks rows.
     *   B = K, B[key][d] = K[key][d]: b0 = K[key 2t, 2t+1][d g], down a
     *   stored column: ldmatrix.trans of 8 keys x 8 d; one x4 covers two
     *   k-steps of one n tile: (keys 0-7) b0, (8-15) b1 of k-step 2kp,
     *   (16-23) b0, (24-31) b1 of k-step 2kp + 1: row 8 mi + lr, column
     *   8 dh, + 32 kp rows, + 16 j columns. */
    const int mq = warp & 3, dh = warp >> 2;
    const uint32_t ds_a_off = (((mi >> 1) * 8 + lr) * LDS + 16 * mq + (mi & 1) * 8) * (uint32_t)sizeof(bf16);
    const uint32_t kq_off = ((8 * mi + lr) * LD + 8 * dh) * (uint32_t)sizeof(bf16);

    uint32_t kf[Cfg::kKVRegs ? KD : 1][4], vf[Cfg::kKVRegs ? KD : 1][4];
    if constexpr (Cfg::kKVRegs) {
        kb_cp_async_wait<1>(); /* K and V (the older group) are in */
        __syncthreads();
#pragma unroll
        for (int kd = 0; kd < KD; ++kd) {
            ldsm_x4(kf[kd], ks_u + a_off + kd * 32);
            ldsm_x4(vf[kd], vs_u + a_off + kd * 32);
        }
    }

    /* dK (unscaled) and dV of this warp's 16 keys: element e of n tile dt
     * is key kw0 + g + 8 (e / 2), column 8 dt + 2 tq + e % 2. */
    float dk[ND][4], dv[ND][4];
#pragma unroll
    for (int dt = 0; dt < ND; ++dt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            dk[dt][e] = dv[dt][e] = 0.0f;

    for (int it = 0; it < n_it; ++it) {
        const int s = it & 1;
        kb_cp_async_wait<0>(); /* step it's tiles are in (this thread's copies) */
        __syncthreads();       /* everyone's; step it - 1 is done with the other stage and with dS^T */
        if (it + 1 < n_it)
            load_tile(it + 1, s ^ 1);
        kb_cp_async_commit();

        int64_t bhq;
        int i0;
        tile_of(it, bhq, i0);
        const int last_row = min(i0 + BR, Tq) - 1;
        /* This warp's keys: all past Tk, or all above the diagonal of every
         * row of the tile (causal).  Their P and dS are zeros. */
        const bool idle = kw0 >= Tk || (causal && kw0 > last_row + off);
        uint32_t *ds_row = reinterpret_cast<uint32_t *>(dSs + (16 * warp + g) * LDS + 2 * tq);
        if (!idle) {
            const uint32_t q_st = qs_u + s * kQStage, do_st = dos_u + s * kQStage;
            const float *lse_s = stats + s * BR, *dd_s = stats + (2 + s) * BR;

            /* S^T = K Q^T: element e of n tile nt is key kw0 + g + 8 (e / 2),
             * query i0 + 8 nt + 2 tq + e % 2. */
            float sp[NQ][4];
#pragma unroll
            for (int nt = 0; nt < NQ; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    sp[nt][e] = 0.0f;
#pragma unroll
            for (int kd = 0; kd < KD; ++kd) {
                uint32_t a[4];
                if constexpr (Cfg::kKVRegs) {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        a[e] = kf[kd][e];
                } else {
                    ldsm_x4(a, ks_u + a_off + kd * 32);
                }
#pragma unroll
                for (int np = 0; np < NQ / 2; ++np) {
                    uint32_t b[4];
                    ldsm_x4(b, q_st + bn_off + np * 16 * kRow + kd * 32);
                    mma_bf16(sp[2 * np], a, b[0], b[1]);
                    mma_bf16(sp[2 * np + 1], a, b[2], b[3]);
                }
            }

            /* P^T = exp2(S^T scale log2e - lse log2e).  A row that sees no
             * key has lse = +inf (exp2(-inf) = 0); rows past Tq read lse = 0
             * (zero fill) and keys past Tk have S = 0, so they, and the
             * pairs above the diagonal, are set to 0 explicitly. */
            const bool need_mask = i0 + BR > Tq || kw0 + 16 > Tk || (causal && kw0 + 15 > i0 + off);
#pragma unroll
            for (int nt = 0; nt < NQ; ++nt) {
                const float2 l = *reinterpret_cast<const float2 *>(lse_s + nt * 8 + 2 * tq);
                const float l0 = l.x * KB_LOG2E, l1 = l.y * KB_LOG2E;
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    sp[nt][e] = exp2_ftz(fmaf(sp[nt][e], p.sl2, -((e & 1) ? l1 : l0)));
            }
            if (need_mask) {
#pragma unroll
                for (int nt = 0; nt < NQ; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int key = kw0 + g + 8 * (e >> 1);
                        const int qi = i0 + nt * 8 + 2 * tq + (e & 1);
                        const bool keep = key < Tk && qi < Tq && (!causal || key <= qi + off);
                        sp[nt][e] = keep ? sp[nt][e] : 0.0f;
                    }
            }

            /* dP^T = V dO^T, the same layout as S^T. */
            float ds[NQ][4];
#pragma unroll
            for (int nt = 0; nt < NQ; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    ds[nt][e] = 0.0f;
#pragma unroll
            for (int kd = 0; kd < KD; ++kd) {
                uint32_t a[4];
                if constexpr (Cfg::kKVRegs) {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        a[e] = vf[kd][e];
                } else {
                    ldsm_x4(a, vs_u + a_off + kd * 32);
                }
#pragma unroll
                for (int np = 0; np < NQ / 2; ++np) {
                    uint32_t b[4];
                    ldsm_x4(b, do_st + bn_off + np * 16 * kRow + kd * 32);
                    mma_bf16(ds[2 * np], a, b[0], b[1]);
                    mma_bf16(ds[2 * np + 1], a, b[2], b[3]);
                }
            }

            /* dS^T = P^T (dP^T - D_i), D_i by query (column); P in fp32. */
#pragma unroll
            for (int nt = 0; nt < NQ; ++nt) {
                const float2 dd = *reinterpret_cast<const float2 *>(dd_s + nt * 8 + 2 * tq);
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    ds[nt][e] = sp[nt][e] * (ds[nt][e] - ((e & 1) ? dd.y : dd.x));
            }

            /* P^T and dS^T as bf16 A fragments over the query k-steps. */
            uint32_t pa[KQ][4], sa[KQ][4];
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk) {
                pa[kk][0] = pack_bf16(sp[2 * kk][0], sp[2 * kk][1]);
                pa[kk][1] = pack_bf16(sp[2 * kk][2], sp[2 * kk][3]);
                pa[kk][2] = pack_bf16(sp[2 * kk + 1][0], sp[2 * kk + 1][1]);
                pa[kk][3] = pack_bf16(sp[2 * kk + 1][2], sp[2 * kk + 1][3]);
                sa[kk][0] = pack_bf16(ds[2 * kk][0], ds[2 * kk][1]);
                sa[kk][1] = pack_bf16(ds[2 * kk][2], ds[2 * kk][3]);
                sa[kk][2] = pack_bf16(ds[2 * kk + 1][0], ds[2 * kk + 1][1]);
                sa[kk][3] = pack_bf16(ds[2 * kk + 1][2], ds[2 * kk + 1][3]);
            }

            /* dS^T to shared memory for dQ: a0 (key g, queries 16kk + 2tq, +1),
             * a1 (key g + 8, same), a2 (key g, queries + 8), a3 (key g + 8, + 8). */
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk) {
                ds_row[kk * 8] = sa[kk][0];
                ds_row[8 * LDS / 2 + kk * 8] = sa[kk][1];
                ds_row[kk * 8 + 4] = sa[kk][2];
                ds_row[8 * LDS / 2 + kk * 8 + 4] = sa[kk][3];
            }

            /* dV += P^T dO: element e of n tile dt is key g + 8 (e / 2),
             * column 8 dt + 2 tq + e % 2. */
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk)
#pragma unroll
                for (int dp = 0; dp < ND / 2; ++dp) {
                    uint32_t b[4];
                    ldsm_x4_trans(b, do_st + bt_off + kk * 16 * kRow + dp * 32);
                    mma_bf16(dv[2 * dp], pa[kk], b[0], b[1]);
                    mma_bf16(dv[2 * dp + 1], pa[kk], b[2], b[3]);
                }
            /* dK += dS^T Q, the same layout. */
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk)
#pragma unroll
                for (int dp = 0; dp < ND / 2; ++dp) {
                    uint32_t b[4];
                    ldsm_x4_trans(b, q_st + bt_off + kk * 16 * kRow + dp * 32);
                    mma_bf16(dk[2 * dp], sa[kk], b[0], b[1]);
                    mma_bf16(dk[2 * dp + 1], sa[kk], b[2], b[3]);
                }
        } else {
            /* dS^T rows of these keys: zeros (dQ reads every key's row). */
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk) {
                ds_row[kk * 8] = 0u;
                ds_row[8 * LDS / 2 + kk * 8] = 0u;
                ds_row[kk * 8 + 4] = 0u;
                ds_row[8 * LDS / 2 + kk * 8 + 4] = 0u;
            }
        }
        __syncthreads(); /* dS^T of all 128 keys */

        /* dQ_i += dS K_j over the block's 128 keys: element e of tile j is
         * query row i0 + 16 mq + g + 8 (e / 2), column 8 (2j + dh) + 2 tq + e % 2. */
        float dq[NDQ][4];
#pragma unroll
        for (int j = 0; j < NDQ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                dq[j][e] = 0.0f;
#pragma unroll
        for (int kp = 0; kp < BC / 32; ++kp) {
            uint32_t a0[4], a1[4];
            ldsm_x4_trans(a0, dss_u + ds_a_off + (2 * kp) * 16 * kSRow);
            ldsm_x4_trans(a1, dss_u + ds_a_off + (2 * kp + 1) * 16 * kSRow);
#pragma unroll
            for (int j = 0; j < NDQ; ++j) {
                uint32_t b[4];
                ldsm_x4_trans(b, ks_u + kq_off + kp * 32 * kRow + j * 32);
                mma_bf16(dq[j], a0, b[0], b[1]);
                mma_bf16(dq[j], a1, b[2], b[3]);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = i0 + 16 * mq + g + 8 * h;
            if (row < Tq) {
                float *dst = p.dq_acc + ((size_t)bhq * Tq + row) * D + 8 * dh + 2 * tq;
#pragma unroll
                for (int j = 0; j < NDQ; ++j)
                    red_add_f32x2(dst + 16 * j, dq[j][2 * h], dq[j][2 * h + 1]);
            }
        }
    }
    kb_cp_async_wait<0>(); /* only empty groups remain */
    __syncthreads();       /* every warp is done with K (dQ) and V */

    /* dK scale and dV in bf16, staged in this warp's own rows of Ks and Vs,
     * then written as 16-byte chunks of whole rows (keys past Tk dropped). */
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        bf16 *rk = Ks + (16 * warp + g + 8 * h) * LD + 2 * tq, *rv = Vs + (16 * warp + g + 8 * h) * LD + 2 * tq;
#pragma unroll
        for (int dt = 0; dt < ND; ++dt) {
            *reinterpret_cast<uint32_t *>(rk + dt * 8) =
                pack_bf16(dk[dt][2 * h] * p.scale, dk[dt][2 * h + 1] * p.scale);
            *reinterpret_cast<uint32_t *>(rv + dt * 8) = pack_bf16(dv[dt][2 * h], dv[dt][2 * h + 1]);
        }
    }
    __syncwarp();
    constexpr int kChunks = Cfg::kChunks;
#pragma unroll
    for (int it = 0; it < KB_CEIL_DIV(16 * kChunks, 32); ++it) {
        const int c = lane + 32 * it;
        const int r = c / kChunks, ch = c % kChunks;
        const int key = kw0 + r;
        if ((16 * kChunks % 32 == 0 || c < 16 * kChunks) && key < Tk) {
            const size_t at = ((size_t)kvh * Tk + key) * D + ch * 8;
            const int sh = (16 * warp + r) * LD + ch * 8;
            *reinterpret_cast<int4 *>(p.dk + at) = *reinterpret_cast<const int4 *>(Ks + sh);
            *reinterpret_cast<int4 *>(p.dv + at) = *reinterpret_cast<const int4 *>(Vs + sh);
        }
    }
}

/* dq = bf16(scale acc), eight elements a thread and step. */
__global__ void __launch_bounds__(256) attention_backward_flash_mma_dq_kernel(const float *__restrict__ acc,
                                                                             bf16 *__restrict__ dq, int64_t n8,
                                                                             float scale)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += (int64_t)gridDim.x * blockDim.x) {
        const float4 x = reinterpret_cast<const float4 *>(acc)[2 * i];
        const float4 y = reinterpret_cast<const float4 *>(acc)[2 * i + 1];
        uint4 out;
        out.x = pack_bf16(x.x * scale, x.y * scale);
        out.y = pack_bf16(x.z * scale, x.w * scale);
        out.z = pack_bf16(y.x * scale, y.y * scale);
        out.w = pack_bf16(y.z * scale, y.w * scale);
        reinterpret_cast<uint4 *>(dq)[i] = out;
    }
}

/* ---- host side ---------------------------------------------------------------- */

/* Calls f with the main kernel for D and its shared-memory size, or returns false. */
template <class F>
static bool bwd_dispatch(int D, F &&f)
{
    switch (D) {
    case 16: f(attention_backward_flash_mma_kernel<16>, BwdCfg<16>::kSmemBytes); return true;
    case 32: f(attention_backward_flash_mma_kernel<32>, BwdCfg<32>::kSmemBytes); return true;
    case 48: f(attention_backward_flash_mma_kernel<48>, BwdCfg<48>::kSmemBytes); return true;
    case 64: f(attention_backward_flash_mma_kernel<64>, BwdCfg<64>::kSmemBytes); return true;
    case 80: f(attention_backward_flash_mma_kernel<80>, BwdCfg<80>::kSmemBytes); return true;
    case 96: f(attention_backward_flash_mma_kernel<96>, BwdCfg<96>::kSmemBytes); return true;
    case 112: f(attention_backward_flash_mma_kernel<112>, BwdCfg<112>::kSmemBytes); return true;
    case 128: f(attention_backward_flash_mma_kernel<128>, BwdCfg<128>::kSmemBytes); return true;
    default: return false;
    }
}

static const char *const kBadD = "flash_mma needs D a multiple of 16 up to 128 (MMA k-steps of 16)";

static const char *unsupported(const kb_shape *s)
{
    const int64_t D = s->d[4];
    return D % 16 == 0 && D <= 128 ? NULL : kBadD;
}

typedef struct {
    float *dq_acc; /* B*H*Tq*D floats */
    float *dd;     /* B*H*Tq floats: D_i */
    int64_t rows;  /* the query rows they were sized for */
    int D;
} bwd_ctx;

static void teardown(void *ctx)
{
    bwd_ctx *c = (bwd_ctx *)ctx;
    if (!c)
        return;
    cudaFree(c->dq_acc);
    cudaFree(c->dd);
    free(c);
}

/* The shared-memory opt-in and the workspaces for the shape, outside all
 * timing.  With no arguments (no shape) only the opt-in of D = 128. */
static const char *setup(const void *args, void **ctx)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    *ctx = NULL;
    cudaError_t e = cudaSuccess;
    if (!bwd_dispatch(a ? a->D : 128, [&](auto kernel, int smem) {
            e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        }))
        return kBadD;
    KB_CUDA_TRY(e);
    bwd_ctx *c = (bwd_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    if (a) {
        const int64_t rows = (int64_t)a->B * a->H * a->Tq;
        const char *err = kb_alloc_workspace((void **)&c->dq_acc, (size_t)rows * a->D * sizeof(float),
                                             "flash_mma's fp32 dq accumulator");
        if (!err)
            err = kb_alloc_workspace((void **)&c->dd, (size_t)rows * sizeof(float), "flash_mma's D_i");
        if (err) {
            teardown(c);
            return err;
        }
        c->rows = rows;
        c->D = a->D;
    }
    *ctx = c;
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    const bwd_ctx *c = (const bwd_ctx *)ctx;
    const int64_t rows = (int64_t)a->B * a->H * a->Tq;
    if (a->D % 16 || a->D > 128)
        return kBadD;
    if (!c || rows * a->D > c->rows * c->D || rows > c->rows)
        return "flash_mma's workspace was set up for a smaller shape";
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o | (uintptr_t)a->dout |
         (uintptr_t)a->dq | (uintptr_t)a->dk | (uintptr_t)a->dv) & 15 ||
        (uintptr_t)a->lse & 3)
        return "flash_mma needs 16-byte aligned tensors";
    const int group = a->Hkv > 0 ? a->H / a->Hkv : 1;
    const int64_t kv_heads = (int64_t)a->B * (a->H / group);
    const int n_kb = KB_CEIL_DIV(a->Tk, BwdCfg<128>::kBC);
    static_assert(BwdCfg<64>::kBC == BwdCfg<128>::kBC, "one key block for every D");

    /* 1. dq's fp32 accumulator zeroed, D_i = do_i . o_i. */
    KB_CUDA_TRY(cudaMemsetAsync(c->dq_acc, 0, (size_t)rows * a->D * sizeof(float), stream));
    KB_TRY(atb_row_dots(a, c->dd, stream));

    /* 2. dK, dV and dq's accumulator. */
    BwdParams p;
    p.q = (const bf16 *)a->q;
    p.k = (const bf16 *)a->k;
    p.v = (const bf16 *)a->v;
    p.dout = (const bf16 *)a->dout;
    p.lse = a->lse;
    p.dd = c->dd;
    p.dq_acc = c->dq_acc;
    p.dk = (bf16 *)a->dk;
    p.dv = (bf16 *)a->dv;
    p.Tq = a->Tq;
    p.Tk = a->Tk;
    p.group = group;
    p.causal = a->causal != 0;
    p.kv_heads = kv_heads;
    p.n_kb = n_kb;
    p.sl2 = a->scale * KB_LOG2E;
    p.scale = a->scale;
    const unsigned grid = (unsigned)(kv_heads * n_kb);
    bwd_dispatch(a->D, [&](auto kernel, int smem) { kernel<<<grid, BwdCfg<128>::kThreads, smem, stream>>>(p); });
    KB_CUDA_TRY(cudaGetLastError());

    /* 3. dq = bf16(scale acc). */
    const int64_t n8 = rows * a->D / 8;
    const int64_t blocks = KB_CEIL_DIV(n8, 256);
    attention_backward_flash_mma_dq_kernel<<<(unsigned)(blocks < 8192 ? blocks : 8192), 256, 0, stream>>>(
        c->dq_acc, (bf16 *)a->dq, n8, a->scale);
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_backward_flash_mma[] = {
    {
        .name = "flash_mma",
        .summary = "FlashAttention-2 backward: mma.sync bf16, 128 keys x 64-row query tiles, dq by fp32 reductions "
                   "(nondeterministic); D % 16 == 0, D <= 128",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .unsupported = unsupported,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
