/* attention flash_decode: split-KV attention for decoding (bf16 in and out,
 * fp32 arithmetic), Tq = 1 to 16 over a long Tk.
 *
 * Idea: at Tq <= 16 a (batch, KV head) pair has group * Tq query rows
 * (group = H / Hkv) against the whole of its K and V, so the work is
 * reading K and V once: memory-bound, about 4 D FLOPs per 4 D bytes read.
 * One block per (batch, KV head) would leave most SMs idle at B = 1, so the
 * keys are split into chunks (FlashDecoding): block (b, kv, rows, chunk)
 * takes up to 16 of the group's query rows (rows r = head-in-group * Tq +
 * i, which are contiguous in Q and O) against its chunk, and writes each
 * row's (max, sum, unnormalized O) to a workspace; the last block of a
 * row group to arrive (a counter per group) merges the chunks with its
 * own, so one launch does it all.  Every K and V tile is loaded once for all the
 * query heads that share it.
 *   Pass 1: 4 warps; each warp takes every fourth 32-key tile of the chunk
 *   through its own 2-stage cp.async buffer (rows padded by 16 bytes:
 *   conflict-free 16-byte reads), evict-first in L2: K and V are read once,
 *   so they replace their own lines rather than dirty ones whose write-back
 *   they would pay for.  Scores: lane = key, the query rows (fp32,
 *   pre-scaled by scale * log2(e)) broadcast from shared memory.  Online
 *   softmax per row in exp2 with warp max; P to shared memory; O += P V with
 *   lane = D/32 consecutive output columns.  The 4 warps' states are merged
 *   in shared memory at the end.
 *   The merge, in the group's last block, once the others' states are
 *   written: M = max m_s, O = sum_s O_s 2^(m_s - M) / sum_s l_s
 *   2^(m_s - M), its own state from shared memory, the chunks' weights
 *   in shared memory and every column's loads in flight at once.
 * Causal (bottom-right, query i sees keys j <= i + Tk - Tq) is a per-row key
 * limit; a row that sees no key keeps m = -inf and l = 0 and is written as
 * zeros.  Shapes: Tq <= 16 (more is a prefill: SKIP), D a multiple of 8 up
 * to 128, any B, H, Hkv, Tk with B*H*Tq < 2^31.
 *
 * Builds on flash_mma (the online softmax), with the split over keys in
 * place of the split over query rows, which decoding does not have.
 * Measured (results/h100/kbench-20261127-195738.csv, cold L2, % of the
 * run's 3005 GB/s copy ceiling): 2132 GB/s (71%) at 1x32x1x32768x128x8,
 * 2564 (85%) at Tk = 131072, 2418 (80%) at 8x32x1x8192x128x8, 2641 (88%)
 * and 2842 (95%) at B = 8 and Tk = 32768, 131072, 2763 (92%) at
 * 64x32x1x8192x128x8; PyTorch's SDPA in the same run 2099 (a 7%
 * spread), 2737 (9%), 2327 (8%), 2919 (2%), 3056 and 3008 (ahead of
 * ours at four of the six; ours 0.90-1.04x); cudnn 2079, 2773, 2473,
 * 2936, 3077 and 3033 (ours 0.90-1.03x).
 * Rounding the split's waves down (it had launched 2.4 waves at B = 8)
 * bought most of the B = 8 figures (2333 -> 2661 GB/s at Tk = 32768 in a
 * check call, docs/notes/attention.md).
 * Gap to the limit: 71% at 1x32x1x32768x128x8 against issue 16's 80%: per
 * key work, ~1300 instructions a warp per 32-key tile (counted, not
 * profiled) at 1 warp a scheduler (the 2 stages' 136 KiB of tiles let one
 * block an SM); flash_decode_mma puts the tiles on the tensor cores. */
#include "variants/attention/decode_split.cuh"

/* flash_decode's own shared memory beyond the K/V tiles: the query rows in
 * fp32 and each warp's P. */
template <int DP, int RC>
struct DecF32 : DecCfg<DP, RC> {
    static constexpr int kNC = DP / 32; /* output columns per lane */
    static constexpr int kQBytes = RC * DP * (int)sizeof(float);
    static constexpr int kPBytes = DEC_WARPS * RC * DEC_KEYS * (int)sizeof(float);
    static constexpr int kSmemBytes = DecCfg<DP, RC>::kKVBytes + kQBytes + kPBytes;
};

/* 8 bf16 (a uint4) as floats. */
__device__ __forceinline__ void dec_unpack8(const uint4 &u, float (&f)[8])
{
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

/* NC consecutive bf16 from shared memory as floats: one 8- or 4-byte load
 * when NC is 4 or 2 (the address is then that aligned: rows are
 * 16-byte multiples and the lane's offset is 2 NC bytes times the lane). */
template <int NC>
__device__ __forceinline__ void dec_load_cols(const bf16 *src, float (&f)[NC])
{
    if constexpr (NC == 4) {
        const uint2 u = *reinterpret_cast<const uint2 *>(src);
        f[0] = __uint_as_float(u.x << 16), f[1] = __uint_as_float(u.x & 0xffff0000u);
        f[2] = __uint_as_float(u.y << 16), f[3] = __uint_as_float(u.y & 0xffff0000u);
    } else if constexpr (NC == 2) {
        const uint32_t u = *reinterpret_cast<const uint32_t *>(src);
        f[0] = __uint_as_float(u << 16), f[1] = __uint_as_float(u & 0xffff0000u);
    } else {
#pragma unroll
        for (int c = 0; c < NC; ++c)
            f[c] = __bfloat162float(src[c]);
    }
}

/* Pass 1: block dec_block() of the split, its tiles in fp32 on the FMA units. */
template <int DP, int RC>
__global__ void __launch_bounds__(DEC_WARPS * 32, 1)
attention_flash_decode_split_kernel(int Tq, int Tk, const int *tk_len, int64_t kv_stride, int D, int causal,
                                    int group, float sl2, int row_chunks, int splits, int chunk, int64_t nrows,
                                    const bf16 *__restrict__ q,
                                    const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                                    float *__restrict__ part_o, float2 *__restrict__ part_ml,
                                    unsigned *__restrict__ arrived, bf16 *__restrict__ o)
{
    using Cfg = DecF32<DP, RC>;
    constexpr int NC = Cfg::kNC, LD = Cfg::kLd;
    extern __shared__ __align__(128) unsigned char smem_raw[];
#if __CUDA_ARCH__ >= 900
    /* A successor launched as a programmatic dependent (a model's next
     * product) may start now: it waits for this grid before reading. */
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    bf16 *kv_s = reinterpret_cast<bf16 *>(smem_raw);
    float *q_s = reinterpret_cast<float *>(smem_raw + Cfg::kKVBytes);        /* [RC][DP] */
    float *p_s = reinterpret_cast<float *>(smem_raw + Cfg::kKVBytes + Cfg::kQBytes); /* [warp][RC][32] */

    const DecBlock blk = dec_block<RC>(Tq, Tk, tk_len, group, row_chunks, splits, chunk, kv_stride, k, v);
    const int R = blk.R, r0 = blk.r0, cbeg = blk.cbeg, end = blk.end;
    const int64_t grow0 = blk.grow0;
    const bf16 *k_head = blk.k_head, *v_head = blk.v_head;
    Tk = blk.Tk;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    /* This warp's tiles: t = warp, warp + 4, ... of the chunk's tiles. */
    const int tiles = (end - cbeg + DEC_KEYS - 1) / DEC_KEYS;
    const int mine = tiles > warp ? (tiles - warp + DEC_WARPS - 1) / DEC_WARPS : 0;
    /* Stage st of this warp: K at stage_k(st), V right after it. */
    auto stage_k = [&](int st) { return kv_s + (size_t)((warp * 2 + st) * 2) * Cfg::kTileElems; };
    const DecTileCopy<DP, DEC_KEYS> copy(D, lane);
    if (mine > 0) {
        const int j0 = cbeg + warp * DEC_KEYS;
        copy(stage_k(0), k_head, j0, end);
        copy(stage_k(0) + Cfg::kTileElems, v_head, j0, end);
    }
    kb_cp_async_commit();

    /* Q rows, scaled, zero past D and past the group's rows. */
    for (int c = threadIdx.x; c < RC * DP; c += DEC_WARPS * 32) {
        const int r = c / DP, d = c % DP;
        float x = 0.0f;
        if (r0 + r < R && d < D)
            x = __bfloat162float(q[(size_t)(grow0 + r) * D + d]) * sl2;
        q_s[c] = x;
    }
    __syncthreads();

    /* Row r's last visible key: i + Tk - Tq (bottom-right causal mask). */
    int lim[RC];
#pragma unroll
    for (int r = 0; r < RC; ++r)
        lim[r] = causal ? (r0 + r) % Tq + Tk - Tq : Tk - 1;

    float m[RC], l[RC], acc[RC][NC];
#pragma unroll
    for (int r = 0; r < RC; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.0f; /* this lane's keys only; summed over the warp at the end */
#pragma unroll
        for (int c = 0; c < NC; ++c)
            acc[r][c] = 0.0f;
    }
    float *p_w = p_s + warp * RC * DEC_KEYS;

    for (int u = 0; u < mine; ++u) {
        const int j0 = cbeg + (warp + u * DEC_WARPS) * DEC_KEYS;
        if (u + 1 < mine) {
            const int jn = j0 + DEC_WARPS * DEC_KEYS;
            copy(stage_k((u + 1) & 1), k_head, jn, end);
            copy(stage_k((u + 1) & 1) + Cfg::kTileElems, v_head, jn, end);
        }
        kb_cp_async_commit();
        kb_cp_async_wait<1>(); /* tile u is in (this lane's copies) */
        __syncwarp();          /* and the other lanes' */
        const bf16 *Ks = stage_k(u & 1), *Vs = Ks + Cfg::kTileElems;

        /* Scores of key j0 + lane against the RC rows. */
        float sc[RC];
#pragma unroll
        for (int r = 0; r < RC; ++r)
            sc[r] = 0.0f;
#pragma unroll 2
        for (int ch = 0; ch < Cfg::kChunks; ++ch) {
            float kf[8];
            dec_unpack8(*reinterpret_cast<const uint4 *>(Ks + lane * LD + ch * 8), kf);
#pragma unroll
            for (int r = 0; r < RC; ++r) {
                const float4 qa = *reinterpret_cast<const float4 *>(q_s + r * DP + ch * 8);
                const float4 qb = *reinterpret_cast<const float4 *>(q_s + r * DP + ch * 8 + 4);
                float x = sc[r];
                x = fmaf(qa.x, kf[0], x);
                x = fmaf(qa.y, kf[1], x);
                x = fmaf(qa.z, kf[2], x);
                x = fmaf(qa.w, kf[3], x);
                x = fmaf(qb.x, kf[4], x);
                x = fmaf(qb.y, kf[5], x);
                x = fmaf(qb.z, kf[6], x);
                x = fmaf(qb.w, kf[7], x);
                sc[r] = x;
            }
        }

        /* Mask, online softmax (log2 domain), P to shared memory. */
        const int j = j0 + lane;
#pragma unroll
        for (int r = 0; r < RC; ++r) {
            if (j >= end || j > lim[r])
                sc[r] = -INFINITY;
            const float mx = kb_warp_allreduce<32>(sc[r], KbMax{});
            const float m_new = fmaxf(m[r], mx);
            /* A row that has seen no key yet: m_new = -inf; use 0, so p = 0
             * and alpha = 0 on its zero state, never -inf - -inf. */
            const float m_use = m_new == -INFINITY ? 0.0f : m_new;
            const float alpha = kb_ex2(m[r] - m_use);
            const float p = kb_ex2(sc[r] - m_use);
            m[r] = m_new;
            l[r] = l[r] * alpha + p;
#pragma unroll
            for (int c = 0; c < NC; ++c)
                acc[r][c] *= alpha;
            p_w[r * DEC_KEYS + lane] = p;
        }
        __syncwarp(); /* P visible to the warp */

        /* O += P V: lane owns columns lane * NC .. lane * NC + NC - 1; four
         * keys' V values at a time, then each row's four P values. */
#pragma unroll 2
        for (int jj = 0; jj < DEC_KEYS; jj += 4) {
            float vf[4][NC];
#pragma unroll
            for (int e = 0; e < 4; ++e)
                dec_load_cols<NC>(Vs + (jj + e) * LD + lane * NC, vf[e]);
#pragma unroll
            for (int r = 0; r < RC; ++r) {
                const float4 pr = *reinterpret_cast<const float4 *>(p_w + r * DEC_KEYS + jj);
#pragma unroll
                for (int c = 0; c < NC; ++c) {
                    float x = acc[r][c];
                    x = fmaf(pr.x, vf[0][c], x);
                    x = fmaf(pr.y, vf[1][c], x);
                    x = fmaf(pr.z, vf[2][c], x);
                    x = fmaf(pr.w, vf[3][c], x);
                    acc[r][c] = x;
                }
            }
        }
        __syncwarp(); /* the warp is done with this stage and with P */
    }
    kb_cp_async_wait<0>(); /* only empty groups remain */
    __syncthreads();       /* every warp is done with the K/V space */

    /* The warps' states into the K/V space (dec_o_w, dec_ml_w). */
    float *o_w = dec_o_w<DP, RC>(smem_raw);
    float2 *ml_w = dec_ml_w<DP, RC>(smem_raw);
#pragma unroll
    for (int r = 0; r < RC; ++r) {
        const float lsum = kb_warp_allreduce<32>(l[r], KbSum{});
#pragma unroll
        for (int c = 0; c < NC; ++c)
            o_w[(warp * RC + r) * DP + lane * NC + c] = acc[r][c];
        if (lane == 0)
            ml_w[warp * RC + r] = make_float2(m[r], lsum);
    }
    dec_finish<DP, RC>(smem_raw, blk, D, splits, nrows, row_chunks, part_o, part_ml, arrived, o);
}

/* ---- host side ---------------------------------------------------------------- */

/* The pass-1 kernel for (DP, RC) and its shared memory (dec_dispatch). */
template <int DP, int RC>
struct DecF32Kernel {
    static constexpr auto kernel = attention_flash_decode_split_kernel<DP, RC>;
    static constexpr int kSmemBytes = DecF32<DP, RC>::kSmemBytes;
};

extern "C" const kb_variant attention_flash_decode[] = {
    {
        .name = "flash_decode",
        .summary = "split-KV decoding, Tq <= 16: KV chunks per block for all query heads of a KV head, the last block merges",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .unsupported = dec_unsupported,
        .setup = dec_setup<DecF32Kernel, 2>, /* two waves of blocks: more, shorter chunks measured slower */
        .teardown = dec_teardown,
        .launch = dec_launch<DecF32Kernel>,
    },
    KB_VARIANT_END,
};
