/* attention flash_decode_mma: flash_decode's split-KV decoding with each
 * key tile on the tensor cores (bf16 in and out, fp32 accumulation).
 *
 * Idea: flash_decode spends ~1300 instructions a warp on a 32-key tile at
 * 4 query rows (a lane per key for the scores, a lane per column for P V,
 * fp32 FMAs on unpacked bf16), more with more rows: short chunks, several
 * query rows (Tq > 1) and the pipeline's ramp pay for it.  Here the block's
 * query rows (RC = 4, 8 or 16, padded to the MMA's 16) are the A operand of
 * mma.sync m16n8k16, as FlashInfer does for grouped-query decoding:
 *   S = Q K^T: Q's fragments are loaded once by ldmatrix and stay in
 *     registers; K's by ldmatrix.x4 from the tile; KEYS/8 n-tiles x D/16 MMAs;
 *   the online softmax on the accumulators: a row's max over the 4 lanes
 *     of a quad, exp2 with scale * log2(e) folded into one FFMA;
 *   O += P V: the accumulators, rounded to bf16 pairs, are already P's A
 *     fragments; V's by ldmatrix.x4.trans; KEYS/16 k-steps x D/8 MMAs.
 * 32 MMAs and 16 ldmatrix a 16-key tile at D = 128 in place of the FMAs.
 * With the tile this cheap, three stages of tiles a warp (in place of two)
 * and one block an SM (in place of two waves: one ramp, not two) pay.  At
 * D of 64 and 128 the K and V tiles are swizzled rather than padded, so
 * that each warp's copy moves whole 128-byte lines (a padded row made the
 * copies fetch 1.5 times the bytes from L2); rows g + 8 of the MMA, pure
 * padding unless RC = 16, skip the softmax.  The
 * rest is flash_decode's (decode_split.cuh): the chunks, the warps'
 * cp.async tiles with evict-first, the merge of the warps and the last
 * block's merge of the chunks, the bottom-right causal mask, the shapes.
 *
 * Builds on flash_decode: the tile's arithmetic moves to the tensor cores.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2, % of the
 * run's 3005 GB/s copy ceiling): 2332 GB/s (77.6%) at 1x32x1x32768x128x8
 * (flash_decode 2132, cudnn 2079: 1.12x; PyTorch's SDPA, which runs
 * cuDNN's kernel, read 2099 with a 7% spread), 2719 (90%) at Tk = 131072
 * (SDPA 2737 with a 9% spread, cudnn 2773), 3041 (101%) at
 * 8x32x1x131072x128x8 (SDPA 3056, cudnn 3077), 2960 (98%) at
 * 64x32x1x8192x128x8 (SDPA 3008, cudnn 3033); causal Tq = 16 at
 * 1x32x16x4096x128x8c 0.022 ms in a check call (flash_decode 0.077,
 * cudnn 0.056).
 * Gap to the limit: 77.6% at 1x32x1x32768x128x8 against issue 16's 80%.
 * A plain read of the same 134 MB after the flush takes 52-54 us in the
 * event timing however it is spread (128 to 1056 blocks of 512 threads,
 * 83-86% of the ceiling); 80% leaves 2-3.5 us beyond it.  A trace of the
 * blocks: the keys stream until 49-50 us at that rate (blocks end
 * 40-50 us apart: SMs read 10% apart, and claiming tiles to even them out
 * did not pay), then 3.1 us to the merged output (traced before the last
 * block kept its own state), plus ~4 us of launch in the event timing.
 * From B = 8 it reads within 1-3% of cudnn. */
#include "variants/attention/decode_split.cuh"

/* Each warp's tiles in flight: 3 stages measured 2% faster than 2 at B = 8,
 * level elsewhere.  Tiles of 16 keys at D > 64 (32 below): 1-3% faster
 * than 32 at one block an SM, and 104 KiB at D = 128 where 32 took 208. */
#define DEC_MMA_STAGES 3
#define DEC_MMA_KEYS(DP) ((DP) > 64 ? 16 : 32)

/* Beyond the K/V tiles: the query rows as stored (bf16), 16 of them (the
 * MMA's M, zero past RC), rows padded by 16 bytes.  The K and V tiles are
 * swizzled where DP is 64 or 128 (DecTileCopy), padded elsewhere. */
template <int DP, int RC, int ST>
struct DecMma : DecCfg<DP, RC, ST, DEC_MMA_KEYS(DP)> {
    using KV = DecCfg<DP, RC, ST, DEC_MMA_KEYS(DP)>;
    static constexpr int kKeys = DEC_MMA_KEYS(DP);
    static constexpr bool kSwizzle = DP % 64 == 0;
    using Copy = DecTileCopy<DP, kKeys, kSwizzle>;
    static constexpr int kQBytes = 16 * KV::kLd * (int)sizeof(bf16);
    static constexpr int kSmemBytes = KV::kKVBytes + kQBytes;
    static constexpr int kKS = DP / 16; /* k-steps of S = Q K^T */
    static constexpr int kDN = DP / 8;  /* 8-column tiles of O */
};

/* Pass 1, as flash_decode's, with a tile's scores and P V on mma.sync.  A
 * lane holds rows g = lane / 4 and g + 8 of the 16, keys (or columns)
 * 2 (lane % 4) and one more of each 8-wide n-tile. */
template <int DP, int RC, int ST>
__global__ void __launch_bounds__(DEC_WARPS * 32, 1)
attention_flash_decode_mma_kernel(int Tq, int Tk, const int *tk_len, int64_t kv_stride, int D, int causal,
                                  int group, float sl2, int row_chunks, int splits, int chunk, int64_t nrows,
                                  const bf16 *__restrict__ q,
                                  const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                                  float *__restrict__ part_o, float2 *__restrict__ part_ml,
                                  unsigned *__restrict__ arrived, bf16 *__restrict__ o)
{
    using Cfg = DecMma<DP, RC, ST>;
    constexpr int LD = Cfg::kLd, KS = Cfg::kKS, DN = Cfg::kDN, KEYS = Cfg::kKeys, NT = KEYS / 8;
    constexpr int kHalves = RC > 8 ? 2 : 1; /* a lane's rows that hold queries: g, and g + 8 at RC = 16 */
    constexpr uint32_t kQRowBytes = LD * sizeof(bf16), kRowBytes = Cfg::Copy::kRow * sizeof(bf16);
    extern __shared__ __align__(128) unsigned char smem_raw[];
#if __CUDA_ARCH__ >= 900
    /* A successor launched as a programmatic dependent (a model's next
     * product) may start now: it waits for this grid before reading. */
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    bf16 *kv_s = reinterpret_cast<bf16 *>(smem_raw);
    bf16 *q_s = reinterpret_cast<bf16 *>(smem_raw + Cfg::kKVBytes); /* [16][LD] */

    const DecBlock blk = dec_block<RC>(Tq, Tk, tk_len, group, row_chunks, splits, chunk, kv_stride, k, v);
    const int R = blk.R, r0 = blk.r0, cbeg = blk.cbeg, end = blk.end;
    const int64_t grow0 = blk.grow0;
    const bf16 *k_head = blk.k_head, *v_head = blk.v_head;
    Tk = blk.Tk;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    /* This warp's tiles: t = warp, warp + 4, ... of the chunk's tiles. */
    const int tiles = (end - cbeg + KEYS - 1) / KEYS;
    const int mine = tiles > warp ? (tiles - warp + DEC_WARPS - 1) / DEC_WARPS : 0;
    /* Stage st of this warp: K at stage_k(st), V right after it.  Tile u
     * goes to stage u % ST, ST - 1 tiles ahead of the one in use; the
     * stages are counted round, not divided. */
    auto stage_k = [&](int st) { return kv_s + (size_t)((warp * ST + st) * 2) * Cfg::kTileElems; };
    auto next_stage = [](int st) { return st + 1 == ST ? 0 : st + 1; };
    const typename Cfg::Copy copy(D, lane);
    int fetch_st = 0;
    auto fetch = [&](int u) {
        if (u < mine) {
            const int j0 = cbeg + (warp + u * DEC_WARPS) * KEYS;
            copy(stage_k(fetch_st), k_head, j0, end);
            copy(stage_k(fetch_st) + Cfg::kTileElems, v_head, j0, end);
        }
        fetch_st = next_stage(fetch_st);
        kb_cp_async_commit(); /* a group even when empty: the waits count groups */
    };
#pragma unroll
    for (int u = 0; u < ST - 1; ++u)
        fetch(u);

    /* Q rows as stored, zero past D, past RC and past the group's rows. */
    for (int c = threadIdx.x; c < 16 * Cfg::kChunks; c += DEC_WARPS * 32) {
        const int r = c / Cfg::kChunks, ch = c % Cfg::kChunks;
        uint4 x = make_uint4(0u, 0u, 0u, 0u);
        if (r < RC && r0 + r < R && ch * 8 < D)
            x = *reinterpret_cast<const uint4 *>(q + (size_t)(grow0 + r) * D + ch * 8);
        *reinterpret_cast<uint4 *>(q_s + r * LD + ch * 8) = x;
    }
    __syncthreads();

    /* ldmatrix.x4 addresses (lane -> matrix mi = lane / 8, its row lr):
     * Q (A): rows 0-7 / 8-15 by mi & 1, d 0-7 / 8-15 by mi >> 1;
     * K (B): keys 0-7 / 8-15 by mi >> 1, d by mi & 1 (b0, b1 of n-tiles
     * 2np and 2np + 1); V (B, trans): keys by mi & 1, d by mi >> 1 (b0, b1
     * of d-tiles 2dp and 2dp + 1).  A lane's K and V rows are lr modulo
     * 8, so in a swizzled tile its chunk c sits at c ^ lr: the offsets of
     * its KS chunks of K and DN / 2 pairs of V are the same in every tile. */
    const int mi = lane / 8, lr = lane % 8;
    uint32_t qa[KS][4];
    {
        const uint32_t q_addr = (uint32_t)__cvta_generic_to_shared(q_s) +
                                ((mi & 1) * 8 + lr) * kQRowBytes + (mi >> 1) * 16;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
            ldsm_x4(qa[ks], q_addr + ks * 32);
    }
    auto chunk_at = [&](int c) { return (uint32_t)(Cfg::kSwizzle ? c ^ lr : c) * 16; };
    uint32_t k_off[KS], v_off[DN / 2];
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
        k_off[ks] = ((mi >> 1) * 8 + lr) * kRowBytes + chunk_at(2 * ks + (mi & 1));
#pragma unroll
    for (int dp = 0; dp < DN / 2; ++dp)
        v_off[dp] = ((mi & 1) * 8 + lr) * kRowBytes + chunk_at(2 * dp + (mi >> 1));

    /* This lane's rows g and g + 8: their last visible key, i + Tk - Tq
     * (bottom-right causal mask); padding rows are never written. */
    const int g = lane / 4, t2 = 2 * (lane % 4);
    int lim[2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
        lim[h] = causal ? (r0 + g + 8 * h) % Tq + Tk - Tq : Tk - 1;

    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f}; /* l: this lane's keys; the quad's sum at the end */
    float acc[DN][4];
#pragma unroll
    for (int dn = 0; dn < DN; ++dn)
#pragma unroll
        for (int e = 0; e < 4; ++e)
            acc[dn][e] = 0.0f;

    for (int u = 0, st = 0; u < mine; ++u, st = next_stage(st)) {
        const int j0 = cbeg + (warp + u * DEC_WARPS) * KEYS;
        fetch(u + ST - 1);
        kb_cp_async_wait<ST - 1>(); /* tile u is in (this lane's copies) */
        __syncwarp();               /* and the other lanes' */
        const uint32_t k_tile = (uint32_t)__cvta_generic_to_shared(stage_k(st));
        const uint32_t v_tile = k_tile + Cfg::kTileElems * (uint32_t)sizeof(bf16);

        /* S = Q K^T over the tile's NT n-tiles of 8 keys. */
        float sc[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                sc[nt][e] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
#pragma unroll
            for (int np = 0; np < NT / 2; ++np) {
                uint32_t kb[4];
                ldsm_x4(kb, k_tile + k_off[ks] + np * 16 * kRowBytes);
                mma_bf16(sc[2 * np], qa[ks], kb[0], kb[1]);
                mma_bf16(sc[2 * np + 1], qa[ks], kb[2], kb[3]);
            }

        /* Mask, online softmax in the log2 domain; sc becomes P.  Rows
         * g + 8 hold queries only when RC = 16 (else they pad the MMA, and
         * their P is zero). */
#pragma unroll
        for (int h = 0; h < kHalves; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int j = j0 + nt * 8 + t2 + e;
                    float &x = sc[nt][2 * h + e];
                    x = j < end && j <= lim[h] ? x * sl2 : -INFINITY;
                    mx = fmaxf(mx, x);
                }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx);
            /* A row that has seen no key yet: m_new = -inf; use 0, so p = 0
             * and alpha = 0 on its zero state, never -inf - -inf. */
            const float m_use = m_new == -INFINITY ? 0.0f : m_new;
            const float alpha = kb_ex2(m[h] - m_use);
            float sum = 0.0f;
#pragma unroll
            for (int nt = 0; nt < NT; ++nt)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    float &x = sc[nt][2 * h + e];
                    x = kb_ex2(x - m_use);
                    sum += x;
                }
            m[h] = m_new;
            l[h] = l[h] * alpha + sum;
#pragma unroll
            for (int dn = 0; dn < DN; ++dn) {
                acc[dn][2 * h] *= alpha;
                acc[dn][2 * h + 1] *= alpha;
            }
        }

        /* O += P V: P's A fragments straight from the accumulators, keys
         * 16 kk .. 16 kk + 15 being n-tiles 2 kk and 2 kk + 1. */
#pragma unroll
        for (int kk = 0; kk < NT / 2; ++kk) {
            uint32_t pa[4];
            pa[0] = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
            pa[1] = kHalves == 2 ? pack_bf16(sc[2 * kk][2], sc[2 * kk][3]) : 0u;
            pa[2] = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
            pa[3] = kHalves == 2 ? pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]) : 0u;
#pragma unroll
            for (int dp = 0; dp < DN / 2; ++dp) {
                uint32_t vb[4];
                ldsm_x4_trans(vb, v_tile + v_off[dp] + kk * 16 * kRowBytes);
                mma_bf16(acc[2 * dp], pa, vb[0], vb[1]);
                mma_bf16(acc[2 * dp + 1], pa, vb[2], vb[3]);
            }
        }
        __syncwarp(); /* the warp is done with this stage */
    }
    kb_cp_async_wait<0>(); /* only empty groups remain */
    __syncthreads();       /* every warp is done with the K/V space */

    /* The warps' states into the K/V space (dec_o_w, dec_ml_w): rows under
     * RC only. */
    float *o_w = dec_o_w<DP, RC>(smem_raw);
    float2 *ml_w = dec_ml_w<DP, RC>(smem_raw);
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        const int r = g + 8 * h;
        if (r >= RC)
            continue;
#pragma unroll
        for (int dn = 0; dn < DN; ++dn)
            *reinterpret_cast<float2 *>(&o_w[(warp * RC + r) * DP + dn * 8 + t2]) =
                make_float2(acc[dn][2 * h], acc[dn][2 * h + 1]);
        if (t2 == 0)
            ml_w[warp * RC + r] = make_float2(m[h], lsum);
    }
    dec_finish<DP, RC>(smem_raw, blk, D, splits, nrows, row_chunks, part_o, part_ml, arrived, o);
}

/* ---- host side ---------------------------------------------------------------- */

/* The pass-1 kernel for (DP, RC) and its shared memory (dec_dispatch). */
template <int DP, int RC>
struct DecMmaKernel {
    static constexpr auto kernel = attention_flash_decode_mma_kernel<DP, RC, DEC_MMA_STAGES>;
    static constexpr int kSmemBytes = DecMma<DP, RC, DEC_MMA_STAGES>::kSmemBytes;
};

extern "C" const kb_variant attention_flash_decode_mma[] = {
    {
        .name = "flash_decode_mma",
        .summary = "flash_decode with each key tile on mma.sync m16n8k16 (the query rows padded to 16)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .unsupported = dec_unsupported,
        .setup = dec_setup<DecMmaKernel, 1>, /* one block an SM: one ramp; two an SM were slower (docs/notes/attention.md) */
        .teardown = dec_teardown,
        .launch = dec_launch<DecMmaKernel>,
    },
    KB_VARIANT_END,
};
