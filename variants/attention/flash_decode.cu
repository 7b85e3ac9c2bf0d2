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
 * row group to finish (a counter per group) merges the chunks, so one
 * launch does it all.  Every K and V tile is loaded once for all the
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
 *   The merge, in the group's last block: M = max m_s,
 *   O = sum_s O_s 2^(m_s - M) / sum_s l_s 2^(m_s - M), with the chunks'
 *   weights in shared memory and every column's loads in flight at once.
 * Causal (bottom-right, query i sees keys j <= i + Tk - Tq) is a per-row key
 * limit; a row that sees no key keeps m = -inf and l = 0 and is written as
 * zeros.  Shapes: Tq <= 16 (more is a prefill: SKIP), D a multiple of 8 up
 * to 128, any B, H, Hkv, Tk with B*H*Tq < 2^31.
 *
 * Builds on flash_bf16 (the online softmax), with the split over keys in
 * place of the split over query rows, which decoding does not have.
 * Measured (results/h100/kbench-20261126-095837.csv, cold L2, % of the
 * run's 3007 GB/s copy ceiling): 2046 GB/s (68%) at 1x32x1x32768x128x8,
 * 2533 (84%) at Tk = 131072, 2166 (72%) at 8x32x1x8192x128x8, 2717 (90%)
 * at 64x32x1x8192x128x8; PyTorch's SDPA in the same run 2112, 2790,
 * 1860 and 3022.
 * Gap to the limit: 68% at 1x32x1x32768x128x8 against issue 16's 80%: per
 * key work, ~1300 instructions a warp per 32-key tile (counted, not
 * profiled) at 2 warps a scheduler (docs/notes/attention.md); tensor-core
 * tiles are the next rung. */
#include <stdint.h>
#include <cuda_bf16.h>
#include "kernels/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "variants/attention/attention_common.cuh"

typedef __nv_bfloat16 bf16;

#define DEC_MAX_TQ 16
#define DEC_WARPS 4
#define DEC_KEYS 32                     /* keys per warp tile: one per lane */
#define DEC_STEP (DEC_WARPS * DEC_KEYS) /* keys a block takes per round; chunks are multiples */
#define DEC_MAX_D 128
/* The most key chunks: the merge keeps RC x splits weights (and RC more) in
 * the K/V space, whose smallest (DP = 32) holds 10240 floats. */
#define DEC_MAX_SPLITS 512

template <int DP, int RC>
struct DecCfg {
    static constexpr int kLd = DP + 8;                /* bf16 per shared K/V row */
    static constexpr int kChunks = DP / 8;            /* 16-byte chunks per row */
    static constexpr int kNC = DP / 32;               /* output columns per lane */
    static constexpr int kTileElems = DEC_KEYS * kLd; /* one K or V tile */
    /* per warp: 2 stages of (K, V) */
    static constexpr int kKVBytes = DEC_WARPS * 2 * 2 * kTileElems * (int)sizeof(bf16);
    static constexpr int kQBytes = RC * DP * (int)sizeof(float);
    static constexpr int kPBytes = DEC_WARPS * RC * DEC_KEYS * (int)sizeof(float);
    /* the warps' final states reuse the K/V space */
    static constexpr int kMergeBytes = DEC_WARPS * RC * (DP + 2) * (int)sizeof(float);
    static_assert(kMergeBytes <= kKVBytes, "merge space fits in the K/V space");
    static_assert(RC * (DEC_MAX_SPLITS + 1) * (int)sizeof(float) <= kKVBytes, "chunk weights fit too");
    static constexpr int kSmemBytes = kKVBytes + kQBytes + kPBytes;
    static_assert(DP % 32 == 0 && DP <= DEC_MAX_D, "DP: 32, 64, 96 or 128");
};

/* How the work is cut: rows of a (b, kv) group per block (RC), row chunks,
 * key chunks; the same on the host in setup and launch. */
struct DecPlan {
    int rc, dp;           /* the kernel instance */
    int row_chunks;       /* ceil(group * Tq / rc) */
    int splits, chunk;    /* key chunks of `chunk` keys (a multiple of DEC_STEP) */
    int64_t blocks;       /* B * Hkv * row_chunks * splits */
    int64_t rows;         /* B * H * Tq */
};

static DecPlan dec_plan(const kb_attention_args *a, int sms)
{
    DecPlan p;
    const int group = kb_attention_group(a);
    const int64_t R = (int64_t)group * a->Tq;
    p.rc = R <= 4 ? 4 : R <= 8 ? 8 : 16;
    p.dp = a->D <= 32 ? 32 : a->D <= 64 ? 64 : a->D <= 96 ? 96 : 128;
    p.row_chunks = (int)((R + p.rc - 1) / p.rc);
    const int64_t base = (int64_t)a->B * (a->H / group) * p.row_chunks;
    const int64_t steps = (a->Tk + DEC_STEP - 1) / DEC_STEP;
    /* about two waves of blocks, never a chunk under DEC_STEP keys */
    const int64_t target = 2 * (int64_t)(sms > 0 ? sms : 132);
    int64_t splits = (target + base - 1) / base;
    if (splits > steps)
        splits = steps;
    if (splits > DEC_MAX_SPLITS)
        splits = DEC_MAX_SPLITS;
    if (splits < 1)
        splits = 1;
    /* at least two rounds a chunk, so each warp's 2-stage pipeline has
     * something to overlap and fewer chunks are left to merge */
    int64_t chunk_steps = (steps + splits - 1) / splits;
    if (chunk_steps < 2)
        chunk_steps = steps < 2 ? steps : 2;
    p.chunk = (int)(chunk_steps * DEC_STEP);
    p.splits = (int)((a->Tk + p.chunk - 1) / p.chunk);
    p.blocks = base * p.splits;
    p.rows = (int64_t)a->B * a->H * a->Tq;
    return p;
}

/* Copy keys j0 .. j0 + 31 of a (Tk, D) head into a warp's tile (row stride
 * kLd), zero past `end` and past D; only this warp's lanes take part.  K
 * and V are read once: evict-first in L2 (policy). */
template <int DP, int RC>
__device__ __forceinline__ void dec_copy_tile(bf16 *dst, const bf16 *head, int j0, int end, int D, int lane,
                                              uint64_t policy)
{
    using Cfg = DecCfg<DP, RC>;
#pragma unroll
    for (int it = 0; it < DEC_KEYS * Cfg::kChunks / 32; ++it) {
        const int c = lane + it * 32;
        const int r = c / Cfg::kChunks, ch = c % Cfg::kChunks;
        const bool ok = j0 + r < end && ch * 8 < D;
        kb_cp_async16_policy(dst + r * Cfg::kLd + ch * 8, ok ? head + (size_t)(j0 + r) * D + ch * 8 : head,
                             ok ? 16 : 0, policy);
    }
}

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

/* The last block of a row group merges every chunk's state of its RC rows:
 * M = max m_s, O = sum_s O_s 2^(m_s - M) / sum_s l_s 2^(m_s - M).  Other
 * blocks wrote the states, so they are read from L2 (ld.cg), never a stale
 * L1 line.  First each row's weights 2^(m_s - M) and 1 / L go to shared
 * memory (ws: RC x splits, then RC), a warp per row; then each thread sums
 * its columns over the chunks, chunk-major, so that its loads of all its
 * columns and of several chunks are in flight at once: the merge then pays
 * L2's latency a few times instead of once per chunk and column. */
template <int DP, int RC>
__device__ __forceinline__ void dec_merge(float *ws, int64_t grow0, int rows_here, int D, int splits, int64_t nrows,
                                          const float *part_o, const float2 *part_ml, bf16 *o)
{
    constexpr int NCOL = RC * DP / (DEC_WARPS * 32); /* columns per thread */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *inv_l = ws + RC * splits;
    for (int r = warp; r < RC; r += DEC_WARPS) {
        float M = -INFINITY;
        for (int sp = lane; r < rows_here && sp < splits; sp += 32)
            M = fmaxf(M, __ldcg(&part_ml[(size_t)sp * nrows + grow0 + r]).x);
        M = kb_warp_allreduce<32>(M, KbMax{});
        const float m_use = M == -INFINITY ? 0.0f : M;
        float L = 0.0f;
        for (int sp = lane; sp < splits; sp += 32) {
            float f = 0.0f;
            if (r < rows_here) {
                const float2 ml = __ldcg(&part_ml[(size_t)sp * nrows + grow0 + r]);
                f = kb_ex2(ml.x - m_use); /* a chunk with no key: 0 */
                L = fmaf(ml.y, f, L);
            }
            ws[r * splits + sp] = f;
        }
        L = kb_warp_allreduce<32>(L, KbSum{});
        if (lane == 0)
            inv_l[r] = L > 0.0f ? 1.0f / L : 0.0f; /* L = 0: the row sees no key: zeros */
    }
    __syncthreads();
    float acc[NCOL];
    bool ok[NCOL];
    size_t at[NCOL];
#pragma unroll
    for (int k = 0; k < NCOL; ++k) {
        const int c = threadIdx.x + k * DEC_WARPS * 32, r = c / DP, d = c % DP;
        acc[k] = 0.0f;
        ok[k] = r < rows_here && d < D;
        at[k] = (size_t)(grow0 + r) * D + d;
    }
#pragma unroll 4
    for (int sp = 0; sp < splits; ++sp) {
        const float *chunk_o = part_o + (size_t)sp * nrows * D;
#pragma unroll
        for (int k = 0; k < NCOL; ++k) {
            const int r = (threadIdx.x + k * DEC_WARPS * 32) / DP;
            if (ok[k])
                acc[k] = fmaf(__ldcg(&chunk_o[at[k]]), ws[r * splits + sp], acc[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < NCOL; ++k) {
        const int r = (threadIdx.x + k * DEC_WARPS * 32) / DP;
        if (ok[k])
            o[at[k]] = __float2bfloat16_rn(acc[k] * inv_l[r]);
    }
}

/* Pass 1.  Block id -> (bkv, chunk s, row chunk rc), row chunks fastest, so
 * the blocks that share a chunk of K and V run together and share it in L2. */
template <int DP, int RC>
__global__ void __launch_bounds__(DEC_WARPS * 32, 1)
attention_flash_decode_split_kernel(int Tq, int Tk, const int *tk_len, int64_t kv_stride, int D, int causal,
                                    int group, float sl2, int row_chunks, int splits, int chunk, int64_t nrows,
                                    const bf16 *__restrict__ q,
                                    const bf16 *__restrict__ k, const bf16 *__restrict__ v,
                                    float *__restrict__ part_o, float2 *__restrict__ part_ml,
                                    unsigned *__restrict__ arrived, bf16 *__restrict__ o)
{
    using Cfg = DecCfg<DP, RC>;
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

    const int64_t id = blockIdx.x;
    const int rchunk = (int)(id % row_chunks);
    const int s = (int)(id / row_chunks % splits);
    const int64_t bkv = id / ((int64_t)row_chunks * splits); /* b * Hkv + kv */
    const int R = group * Tq;                                  /* the group's query rows */
    const int r0 = rchunk * RC;
    const int64_t grow0 = bkv * R + r0; /* Q/O row of local row 0: (b*H + kv*group)*Tq + r0 */
    if (tk_len) /* a cache: only the first *tk_len keys hold data; chunks past them write empty states */
        Tk = min(*tk_len, Tk);
    const int cbeg = s * chunk;
    const int end = min(cbeg + chunk, Tk);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bf16 *k_head = k + (size_t)bkv * kv_stride;
    const bf16 *v_head = v + (size_t)bkv * kv_stride;

    /* This warp's tiles: t = warp, warp + 4, ... of the chunk's tiles. */
    const int tiles = (end - cbeg + DEC_KEYS - 1) / DEC_KEYS;
    const int mine = tiles > warp ? (tiles - warp + DEC_WARPS - 1) / DEC_WARPS : 0;
    /* Stage st of this warp: K at stage_k(st), V right after it. */
    auto stage_k = [&](int st) { return kv_s + (size_t)((warp * 2 + st) * 2) * Cfg::kTileElems; };
    const uint64_t policy = kb_l2_evict_first_policy();
    if (mine > 0) {
        const int j0 = cbeg + warp * DEC_KEYS;
        dec_copy_tile<DP, RC>(stage_k(0), k_head, j0, end, D, lane, policy);
        dec_copy_tile<DP, RC>(stage_k(0) + Cfg::kTileElems, v_head, j0, end, D, lane, policy);
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
            dec_copy_tile<DP, RC>(stage_k((u + 1) & 1), k_head, jn, end, D, lane, policy);
            dec_copy_tile<DP, RC>(stage_k((u + 1) & 1) + Cfg::kTileElems, v_head, jn, end, D, lane, policy);
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

    /* The warps' states into the K/V space: o_w[warp][r][DP], ml_w[warp][r]. */
    float *o_w = reinterpret_cast<float *>(smem_raw);
    float2 *ml_w = reinterpret_cast<float2 *>(o_w + DEC_WARPS * RC * DP);
#pragma unroll
    for (int r = 0; r < RC; ++r) {
        const float lsum = kb_warp_allreduce<32>(l[r], KbSum{});
#pragma unroll
        for (int c = 0; c < NC; ++c)
            o_w[(warp * RC + r) * DP + lane * NC + c] = acc[r][c];
        if (lane == 0)
            ml_w[warp * RC + r] = make_float2(m[r], lsum);
    }
    __syncthreads();

    /* Merge the warps; write this chunk's (m, l, O) of each row. */
    for (int c = threadIdx.x; c < RC * DP; c += DEC_WARPS * 32) {
        const int r = c / DP, d = c % DP;
        if (r0 + r >= R || d >= D)
            continue;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; ++w)
            M = fmaxf(M, ml_w[w * RC + r].x);
        const float m_use = M == -INFINITY ? 0.0f : M;
        float o = 0.0f, L = 0.0f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; ++w) {
            const float2 ml = ml_w[w * RC + r];
            const float f = kb_ex2(ml.x - m_use); /* a warp with no key: 0 */
            o = fmaf(o_w[(w * RC + r) * DP + d], f, o);
            L = fmaf(ml.y, f, L);
        }
        const int64_t row = grow0 + r;
        part_o[((size_t)s * nrows + row) * D + d] = o;
        if (d == 0)
            part_ml[(size_t)s * nrows + row] = make_float2(M, L);
    }

    /* The last block of these rows to finish merges every chunk's state. */
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence(); /* this block's states are visible before it counts itself */
        unsigned *count = arrived + bkv * row_chunks + rchunk;
        last = atomicAdd(count, 1u) == (unsigned)splits - 1;
        if (last)
            *count = 0; /* ready for the next launch */
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    /* The K/V space is free again: the merge's weights go there. */
    dec_merge<DP, RC>(reinterpret_cast<float *>(smem_raw), grow0, min(RC, R - r0), D, splits, nrows, part_o,
                      part_ml, o);
}

/* ---- host side ---------------------------------------------------------------- */

/* Calls f with the pass-1 kernel for (dp, rc) and its shared-memory size. */
template <class F>
static bool dec_dispatch(int dp, int rc, F &&f)
{
#define DEC_CASE(DP_, RC_)                                                                             \
    if (dp == DP_ && rc == RC_) {                                                                      \
        f(attention_flash_decode_split_kernel<DP_, RC_>, DecCfg<DP_, RC_>::kSmemBytes);                \
        return true;                                                                                   \
    }
    DEC_CASE(32, 4) DEC_CASE(32, 8) DEC_CASE(32, 16)
    DEC_CASE(64, 4) DEC_CASE(64, 8) DEC_CASE(64, 16)
    DEC_CASE(96, 4) DEC_CASE(96, 8) DEC_CASE(96, 16)
    DEC_CASE(128, 4) DEC_CASE(128, 8) DEC_CASE(128, 16)
#undef DEC_CASE
    return false;
}

static const char *unsupported(const kb_shape *sh)
{
    if (sh->d[2] > DEC_MAX_TQ)
        return "Tq > 16: a prefill, not a decode (the flash kernels take it)";
    if (sh->d[4] % 8 != 0 || sh->d[4] > DEC_MAX_D)
        return "D must be a multiple of 8 up to 128 (16-byte copies of K and V rows)";
    /* The merge's grid is B*H*Tq blocks; pass 1 has at most that many, or
     * under 4 * SMs when the keys are split (dec_plan). */
    const int64_t rows = kb_mul_dims(kb_mul_dims(sh->d[0], sh->d[1]), sh->d[2]);
    if (rows < 0 || rows > (int64_t)INT32_MAX)
        return "B*H*Tq > 2^31 - 1: more query rows than the grids index";
    return NULL;
}

struct DecCtx {
    DecPlan plan;
    float *part_o;
    float2 *part_ml;
    unsigned *arrived; /* per (b, kv, row chunk): blocks done; zero between launches */
};

/* The shared-memory opt-in and the workspace, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    *ctx = NULL;
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return kb_cuda_status(e);
    DecCtx *c = new DecCtx{dec_plan(a, sms), NULL, NULL, NULL};
    if (!dec_dispatch(c->plan.dp, c->plan.rc, [&](auto kernel, int smem) {
            e = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        })) {
        delete c;
        return "no kernel for this D";
    }
    const size_t n = (size_t)c->plan.splits * (size_t)c->plan.rows;
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&c->part_o, n * a->D * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&c->part_ml, n * sizeof(float2));
    const size_t groups = (size_t)c->plan.blocks / c->plan.splits;
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&c->arrived, groups * sizeof(unsigned));
    if (e == cudaSuccess)
        e = cudaMemset(c->arrived, 0, groups * sizeof(unsigned));
    if (e != cudaSuccess) {
        cudaGetLastError(); /* a failed allocation must not reach the next launch */
        cudaFree(c->part_o);
        cudaFree(c->part_ml);
        cudaFree(c->arrived);
        delete c;
        return "the split workspace does not fit";
    }
    *ctx = c;
    return NULL;
}

static void teardown(void *ctx)
{
    DecCtx *c = (DecCtx *)ctx;
    if (!c)
        return;
    cudaFree(c->part_o);
    cudaFree(c->part_ml);
    cudaFree(c->arrived);
    delete c;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    const DecCtx *c = (const DecCtx *)ctx;
    const DecPlan &p = c->plan;
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15)
        return "flash_decode needs 16-byte aligned tensors";
    const float sl2 = a->scale * KB_LOG2E;
    const int group = kb_attention_group(a);
    if (!dec_dispatch(p.dp, p.rc, [&](auto kernel, int smem) {
            kernel<<<(unsigned)p.blocks, DEC_WARPS * 32, smem, stream>>>(
                a->Tq, a->Tk, a->tk_len, a->kv_stride ? a->kv_stride : (int64_t)a->Tk * a->D, a->D, a->causal,
                group, sl2, p.row_chunks, p.splits, p.chunk, p.rows,
                (const bf16 *)a->q, (const bf16 *)a->k, (const bf16 *)a->v, c->part_o, c->part_ml, c->arrived,
                (bf16 *)a->o);
        }))
        return "no kernel for this D";
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_flash_decode = {
    .name = "flash_decode",
    .summary = "split-KV decoding, Tq <= 16: KV chunks per block for all query heads of a KV head, the last block merges",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
