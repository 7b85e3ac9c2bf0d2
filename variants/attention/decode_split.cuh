/* Split-KV decoding, shared by flash_decode and flash_decode_mma (a header
 * of this folder, not a variant): how the keys are cut into chunks
 * (dec_plan), a warp's copy of a 32-key K or V tile, the block's merge of
 * its warps' states and the last block's merge of the chunks (dec_finish),
 * and the host's workspace and launch.  A variant brings its pass-1 kernel,
 * the arithmetic of a tile, and a dispatcher that names its instance and
 * shared memory for (DP, RC).  flash_decode.cu's header describes the
 * scheme. */
#ifndef KBENCH_DECODE_SPLIT_CUH
#define KBENCH_DECODE_SPLIT_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include "ops/attention.h"
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

/* bf16 per padded shared K/V row: 16 bytes past DP keep ldmatrix and the
 * scalar kernel's row reads free of bank conflicts. */
template <int DP> constexpr int kDecPaddedRow = DP + 8;

/* The shared-memory layout every pass-1 kernel shares: per warp, ST stages
 * of (K, V) tiles of KEYS keys, rows padded by 16 bytes; the block's and
 * the warps' final states and the merge's weights reuse that space
 * (dec_own_o). */
template <int DP, int RC, int ST = 2, int KEYS = DEC_KEYS>
struct DecCfg {
    static constexpr int kLd = kDecPaddedRow<DP>;     /* bf16 per shared K/V row */
    static constexpr int kChunks = DP / 8;            /* 16-byte chunks per row */
    static constexpr int kTileElems = KEYS * kLd;     /* one K or V tile */
    static constexpr int kKVBytes = DEC_WARPS * ST * 2 * kTileElems * (int)sizeof(bf16);
    static_assert(DEC_STEP % (DEC_WARPS * KEYS) == 0, "a chunk is whole rounds of tiles");
    static constexpr int kStateBytes = RC * (DP + 2) * (int)sizeof(float); /* RC rows' (O, m, l) */
    static_assert((DEC_WARPS + 1) * kStateBytes <= kKVBytes, "the block's and its warps' states fit in the K/V space");
    static_assert(kStateBytes + RC * (DEC_MAX_SPLITS + 1) * (int)sizeof(float) <= kKVBytes, "chunk weights fit too");
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

static DecPlan dec_plan(const kb_attention_args *a, int sms, int waves)
{
    DecPlan p;
    const int group = kb_attention_group(a);
    const int64_t R = (int64_t)group * a->Tq;
    p.rc = R <= 4 ? 4 : R <= 8 ? 8 : 16;
    p.dp = a->D <= 32 ? 32 : a->D <= 64 ? 64 : a->D <= 96 ? 96 : 128;
    p.row_chunks = (int)((R + p.rc - 1) / p.rc);
    const int64_t base = (int64_t)a->B * (a->H / group) * p.row_chunks;
    const int64_t steps = (a->Tk + DEC_STEP - 1) / DEC_STEP;
    /* `waves` blocks an SM at most (rounded down: a part-filled last wave
     * would be a tail), never a chunk under DEC_STEP keys */
    const int64_t target = waves * (int64_t)(sms > 0 ? sms : 132);
    int64_t splits = target / base;
    if (splits > steps)
        splits = steps;
    if (splits > DEC_MAX_SPLITS)
        splits = DEC_MAX_SPLITS;
    if (splits < 1)
        splits = 1;
    /* at least two rounds a chunk, so each warp's pipeline has something
     * to overlap and fewer chunks are left to merge */
    int64_t chunk_steps = (steps + splits - 1) / splits;
    if (chunk_steps < 2)
        chunk_steps = steps < 2 ? steps : 2;
    p.chunk = (int)(chunk_steps * DEC_STEP);
    p.splits = (int)((a->Tk + p.chunk - 1) / p.chunk);
    p.blocks = base * p.splits;
    p.rows = (int64_t)a->B * a->H * a->Tq;
    return p;
}

/* What pass-1 block blockIdx.x takes: block id -> (bkv, key chunk s, row
 * chunk rchunk), row chunks fastest, so the blocks that share a chunk of K
 * and V run together and share it in L2. */
struct DecBlock {
    int rchunk, s;
    int64_t bkv;           /* b * Hkv + kv */
    int R, r0;             /* the group's query rows; this block's first (local) */
    int64_t grow0;         /* Q/O row of local row 0: (b*H + kv*group)*Tq + r0 */
    int Tk, cbeg, end;     /* keys holding data; this chunk's, cbeg .. end - 1 */
    const bf16 *k_head, *v_head;
};

template <int RC>
__device__ __forceinline__ DecBlock dec_block(int Tq, int Tk, const int *tk_len, int group, int row_chunks,
                                              int splits, int chunk, int64_t kv_stride, const bf16 *k,
                                              const bf16 *v)
{
    DecBlock b;
    const int64_t id = blockIdx.x;
    b.rchunk = (int)(id % row_chunks);
    b.s = (int)(id / row_chunks % splits);
    b.bkv = id / ((int64_t)row_chunks * splits);
    b.R = group * Tq;
    b.r0 = b.rchunk * RC;
    b.grow0 = b.bkv * b.R + b.r0;
    /* a cache: only the first *tk_len keys hold data; chunks past them write empty states */
    b.Tk = tk_len ? min(*tk_len, Tk) : Tk;
    b.cbeg = b.s * chunk;
    b.end = min(b.cbeg + chunk, b.Tk);
    b.k_head = k + (size_t)b.bkv * kv_stride;
    b.v_head = v + (size_t)b.bkv * kv_stride;
    return b;
}

/* A warp's copy of keys j0 .. j0 + KEYS - 1 of a (Tk, D) head into one of
 * its tiles, zero past `end` and past D.  A lane copies the same 16-byte
 * column of every kRpi-th row, so its offsets and its column's test are
 * worked out once, here, and a tile costs a pointer step and a copy per
 * row it takes (a whole tile tests no row).  K and V are read once:
 * evict-first in L2.
 * Layout: rows padded by 16 bytes (kDecPaddedRow, as DecCfg's), or with
 * Swizzle rows of exactly DP whose 16-byte chunk c sits at c ^ (row % 8)
 * (DP of 64 or 128).  Both keep ldmatrix free of bank conflicts, but a padded row
 * straddles 128-byte lines of shared memory, which split each warp's copy
 * into 2.6 times the L2 requests and fetch 1.5 times the sectors
 * (docs/notes/attention.md); a swizzled row maps each 128-byte line of
 * the head onto one of shared memory. */
template <int DP, int KEYS, bool Swizzle = false>
struct DecTileCopy {
    static_assert(!Swizzle || DP == 64 || DP == 128, "the swizzle permutes 8 chunks of 16 bytes");
    static constexpr int kChunks = DP / 8;                      /* 16-byte chunks per row */
    static constexpr int kLanesPerRow = DP == 96 ? 16 : kChunks; /* a power of two: 4 of 16 idle at DP = 96 */
    static constexpr int kRpi = 32 / kLanesPerRow;               /* rows per round of the warp's copies */
    static constexpr int kRow = Swizzle ? DP : kDecPaddedRow<DP>; /* bf16 per shared row */
    static_assert(KEYS % kRpi == 0, "whole rounds of the warp's 16-byte copies");
    bool active;             /* the lane has a column under DP */
    int D, row0, col_bytes;  /* col_bytes: 16, or 0 for a column past D */
    int chunk;               /* the lane's chunk in row0's shared row (swizzled: ch ^ row0) */
    int64_t src_off;         /* the lane's first element in a tile: row0 * D + column */
    uint64_t policy;

    __device__ __forceinline__ DecTileCopy(int D_, int lane) : D(D_)
    {
        const int ch = lane % kLanesPerRow;
        active = ch < kChunks;
        row0 = lane / kLanesPerRow;
        col_bytes = ch * 8 < D ? 16 : 0;
        chunk = Swizzle ? ch ^ row0 : ch; /* row0 < kRpi, so (row0 + it kRpi) % 8 = row0 | it kRpi % 8 */
        src_off = (int64_t)row0 * D + (col_bytes ? ch * 8 : 0); /* a column past D reads nothing: its row's start */
        policy = kb_l2_evict_first_policy();
    }

    /* Where round it's copy lands in a tile. */
    __device__ __forceinline__ bf16 *at(bf16 *tile, int it) const
    {
        const int c = Swizzle ? chunk ^ (it * kRpi % 8) : chunk;
        return tile + (row0 + it * kRpi) * kRow + c * 8;
    }

    __device__ __forceinline__ void operator()(bf16 *tile, const bf16 *head, int j0, int end) const
    {
        if (!active)
            return;
        const bf16 *src = head + (size_t)j0 * D + src_off;
        const int64_t step = (int64_t)kRpi * D;
        if (j0 + KEYS <= end) {
#pragma unroll
            for (int it = 0; it < KEYS / kRpi; ++it)
                kb_cp_async16_policy(at(tile, it), src + it * step, col_bytes, policy);
            return;
        }
        const int rows = end - j0 - row0; /* this lane's rows under `end`: it * kRpi < rows */
#pragma unroll
        for (int it = 0; it < KEYS / kRpi; ++it) {
            const bool ok = it * kRpi < rows;
            kb_cp_async16_policy(at(tile, it), ok ? src + it * step : head, ok ? col_bytes : 0, policy);
        }
    }
};

/* The last block of a row group merges every chunk's state of its RC rows:
 * M = max m_s, O = sum_s O_s 2^(m_s - M) / sum_s l_s 2^(m_s - M).  Other
 * blocks wrote their states, so they are read from L2 (ld.cg), never a
 * stale L1 line; the merging block's own chunk, `own`, is in shared memory.
 * The merge ends every launch's critical path (a B = 1 decode waits on
 * it), so it pays L2's latency as few times as it can: each thread's float4
 * columns of the first SB chunks are loaded before anything else and stay
 * in flight while a warp per row loads (m, l), once for up to 32 chunks,
 * and puts the weights 2^(m_s - M) and 1 / L in shared memory (ws: RC x
 * splits, then RC).  At B = 1 and 16 chunks that is one round trip, where
 * a load per phase and per four chunks took six (3.4 us of a 55 us launch,
 * by a trace of the blocks). */
template <int DP, int RC>
__device__ __forceinline__ void dec_merge(float *ws, const float *own_o, const float2 *own_ml, int own, int64_t grow0,
                                          int rows_here, int D, int splits, int64_t nrows, const float *part_o,
                                          const float2 *part_ml, bf16 *o)
{
    constexpr int kThreads = DEC_WARPS * 32;
    constexpr int kGroups = RC * DP / 4;                         /* float4 columns of the RC rows */
    constexpr int NG = (kGroups + kThreads - 1) / kThreads;      /* a thread's: 1, 2 or 4 */
    constexpr int SB = 16 / NG;                                  /* chunks loaded at once: 64 registers */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *inv_l = ws + RC * splits;

    bool ok[NG];
    int row[NG], own_at[NG];
    size_t at[NG];
#pragma unroll
    for (int k = 0; k < NG; ++k) {
        const int g = threadIdx.x + k * kThreads, d = g % (DP / 4) * 4;
        row[k] = g / (DP / 4);
        ok[k] = g < kGroups && row[k] < rows_here && d < D; /* D % 8 = 0: a float4 under D is whole */
        at[k] = (size_t)(grow0 + row[k]) * D + d;
        own_at[k] = row[k] * DP + d;
    }
    float4 x[SB][NG];
    auto load = [&](int sp0) {
#pragma unroll
        for (int b = 0; b < SB; ++b)
#pragma unroll
            for (int k = 0; k < NG; ++k) {
                const int sp = sp0 + b;
                x[b][k] = !ok[k] || sp >= splits ? make_float4(0.0f, 0.0f, 0.0f, 0.0f)
                          : sp == own            ? *reinterpret_cast<const float4 *>(own_o + own_at[k])
                                                 : __ldcg(reinterpret_cast<const float4 *>(
                                                       part_o + (size_t)sp * nrows * D + at[k]));
            }
    };
    load(0);

    for (int r = warp; r < RC; r += DEC_WARPS) {
        auto ml_at = [&](int sp) {
            return r >= rows_here ? make_float2(-INFINITY, 0.0f)
                   : sp == own    ? own_ml[r]
                                  : __ldcg(&part_ml[(size_t)sp * nrows + grow0 + r]);
        };
        const float2 ml0 = lane < splits ? ml_at(lane) : make_float2(-INFINITY, 0.0f);
        float M = ml0.x;
        for (int sp = lane + 32; sp < splits; sp += 32)
            M = fmaxf(M, ml_at(sp).x);
        M = kb_warp_allreduce<32>(M, KbMax{});
        const float m_use = M == -INFINITY ? 0.0f : M;
        float f = kb_ex2(ml0.x - m_use); /* a chunk with no key: 0 */
        float L = ml0.y * f;
        if (lane < splits)
            ws[r * splits + lane] = f;
        for (int sp = lane + 32; sp < splits; sp += 32) {
            const float2 ml = ml_at(sp);
            f = kb_ex2(ml.x - m_use);
            L = fmaf(ml.y, f, L);
            ws[r * splits + sp] = f;
        }
        L = kb_warp_allreduce<32>(L, KbSum{});
        if (lane == 0)
            inv_l[r] = L > 0.0f ? 1.0f / L : 0.0f; /* L = 0: the row sees no key: zeros */
    }
    __syncthreads();

    float4 acc[NG];
#pragma unroll
    for (int k = 0; k < NG; ++k)
        acc[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int sp0 = 0;;) {
#pragma unroll
        for (int b = 0; b < SB; ++b)
#pragma unroll
            for (int k = 0; k < NG; ++k) {
                const float w = ok[k] && sp0 + b < splits ? ws[row[k] * splits + sp0 + b] : 0.0f;
                acc[k].x = fmaf(x[b][k].x, w, acc[k].x);
                acc[k].y = fmaf(x[b][k].y, w, acc[k].y);
                acc[k].z = fmaf(x[b][k].z, w, acc[k].z);
                acc[k].w = fmaf(x[b][k].w, w, acc[k].w);
            }
        sp0 += SB;
        if (sp0 >= splits)
            break;
        load(sp0);
    }
#pragma unroll
    for (int k = 0; k < NG; ++k) {
        if (!ok[k])
            continue;
        const float s = inv_l[row[k]];
        __nv_bfloat162 v[2] = {__floats2bfloat162_rn(acc[k].x * s, acc[k].y * s),
                               __floats2bfloat162_rn(acc[k].z * s, acc[k].w * s)};
        *reinterpret_cast<uint2 *>(o + at[k]) = *reinterpret_cast<const uint2 *>(v);
    }
}

/* The K/V space once every warp is done with it: first the block's state
 * of its RC rows, O (unnormalized) as own_o[r][DP] and (m, l) as
 * own_ml[r]; then where a pass-1 kernel leaves its warps' final states for
 * dec_finish, o_w[warp][r][DP] and ml_w[warp][r], which the last block's
 * merge then reuses for its weights. */
template <int DP, int RC>
__device__ __forceinline__ float *dec_own_o(unsigned char *smem) { return reinterpret_cast<float *>(smem); }
template <int DP, int RC>
__device__ __forceinline__ float2 *dec_own_ml(unsigned char *smem)
{
    return reinterpret_cast<float2 *>(dec_own_o<DP, RC>(smem) + RC * DP);
}
template <int DP, int RC>
__device__ __forceinline__ float *dec_o_w(unsigned char *smem)
{
    return reinterpret_cast<float *>(smem + RC * (DP + 2) * sizeof(float));
}
template <int DP, int RC>
__device__ __forceinline__ float2 *dec_ml_w(unsigned char *smem)
{
    return reinterpret_cast<float2 *>(dec_o_w<DP, RC>(smem) + DEC_WARPS * RC * DP);
}

/* A row group's counters: its blocks done with their keys, and those whose
 * state is written.  The group's last block zeroes them for the next
 * launch. */
enum { DEC_ARRIVED, DEC_WRITTEN, DEC_COUNTERS };
__device__ __forceinline__ unsigned *dec_counters(unsigned *arrived, const DecBlock &b, int row_chunks)
{
    return arrived + DEC_COUNTERS * (b.bkv * row_chunks + b.rchunk);
}

/* The end of pass 1, once the warps' states are in place: merge them into
 * the block's state, and either write it for the row group's last block,
 * or be that block and merge every chunk.  A block counts itself arrived
 * first, its answer coming back while it merges its warps; the last to
 * arrive waits for the others' states to be written (a second count,
 * mostly done by then) and merges them with its own from shared memory.
 * Its path after its keys is so two round trips to L2, and one of loads,
 * where writing its own state, fencing and counting first took two more
 * (1.5 us at 1x32x1x32768x128x8, by a trace of the blocks).  The wait
 * cannot hang: every block it waits for has arrived, so it is running. */
template <int DP, int RC>
__device__ __forceinline__ void dec_finish(unsigned char *smem_raw, const DecBlock &b, int D, int splits,
                                           int64_t nrows, int row_chunks, float *__restrict__ part_o,
                                           float2 *__restrict__ part_ml, unsigned *__restrict__ arrived,
                                           bf16 *__restrict__ o)
{
    const int R = b.R, r0 = b.r0, s = b.s;
    const int64_t grow0 = b.grow0;
    float *o_w = dec_o_w<DP, RC>(smem_raw);
    const float2 *ml_w = dec_ml_w<DP, RC>(smem_raw);
    float *own_o = dec_own_o<DP, RC>(smem_raw);
    float2 *own_ml = dec_own_ml<DP, RC>(smem_raw);
    unsigned *count = dec_counters(arrived, b, row_chunks);
    __shared__ bool last;
    unsigned arrival = 0;
    if (threadIdx.x == 0)
        arrival = atomicAdd(&count[DEC_ARRIVED], 1u);
    __syncthreads();

    /* Merge the warps: the block's (m, l, O) of each row. */
    for (int c = threadIdx.x; c < RC * DP; c += DEC_WARPS * 32) {
        const int r = c / DP, d = c % DP;
        if (r0 + r >= R || d >= D)
            continue;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; ++w)
            M = fmaxf(M, ml_w[w * RC + r].x);
        const float m_use = M == -INFINITY ? 0.0f : M;
        float acc = 0.0f, L = 0.0f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; ++w) {
            const float2 ml = ml_w[w * RC + r];
            const float f = kb_ex2(ml.x - m_use); /* a warp with no key: 0 */
            acc = fmaf(o_w[(w * RC + r) * DP + d], f, acc);
            L = fmaf(ml.y, f, L);
        }
        own_o[c] = acc;
        if (d == 0)
            own_ml[r] = make_float2(M, L);
    }
    if (threadIdx.x == 0)
        last = arrival == (unsigned)splits - 1;
    __syncthreads();

    if (!last) {
        /* Each thread writes what it merged, then the block counts itself written. */
        for (int c = threadIdx.x; c < RC * DP; c += DEC_WARPS * 32) {
            const int r = c / DP, d = c % DP;
            if (r0 + r >= R || d >= D)
                continue;
            const int64_t row = grow0 + r;
            part_o[((size_t)s * nrows + row) * D + d] = own_o[c];
            if (d == 0)
                part_ml[(size_t)s * nrows + row] = own_ml[r];
        }
        __syncthreads();
        if (threadIdx.x == 0)
            kb_add_release(&count[DEC_WRITTEN], 1u);
        return;
    }
    if (threadIdx.x == 0) {
        while (kb_load_acquire(&count[DEC_WRITTEN]) != (unsigned)splits - 1)
            ; /* the others have arrived: their states are on the way */
#pragma unroll
        for (int i = 0; i < DEC_COUNTERS; ++i)
            count[i] = 0; /* ready for the next launch */
    }
    __syncthreads();
    /* The warps' space is free again: the merge's weights go there. */
    dec_merge<DP, RC>(o_w, own_o, own_ml, s, grow0, min(RC, R - r0), D, splits, nrows,
                      part_o, part_ml, o);
}

/* ---- host side ---------------------------------------------------------------- */

/* Calls f with a variant's pass-1 kernel for (dp, rc) and its shared
 * memory: K<DP, RC>::kernel and K<DP, RC>::kSmemBytes. */
template <template <int, int> class K, class F>
static bool dec_dispatch(int dp, int rc, F &&f)
{
#define DEC_CASE(DP_, RC_)                                                                             \
    if (dp == DP_ && rc == RC_) {                                                                      \
        f(K<DP_, RC_>::kernel, K<DP_, RC_>::kSmemBytes);                                               \
        return true;                                                                                   \
    }
    DEC_CASE(32, 4) DEC_CASE(32, 8) DEC_CASE(32, 16)
    DEC_CASE(64, 4) DEC_CASE(64, 8) DEC_CASE(64, 16)
    DEC_CASE(96, 4) DEC_CASE(96, 8) DEC_CASE(96, 16)
    DEC_CASE(128, 4) DEC_CASE(128, 8) DEC_CASE(128, 16)
#undef DEC_CASE
    return false;
}

static const char *dec_unsupported(const kb_shape *sh)
{
    if (sh->d[2] > DEC_MAX_TQ)
        return "Tq > 16: a prefill, not a decode (the flash kernels take it)";
    if (sh->d[4] % 8 != 0 || sh->d[4] > DEC_MAX_D)
        return "D must be a multiple of 8 up to 128 (16-byte copies of K and V rows)";
    /* Rows are indexed in int; pass 1's blocks are no more than B*H*Tq, or
     * than a few per SM when the keys are split (dec_plan). */
    const int64_t rows = kb_mul_dims(kb_mul_dims(sh->d[0], sh->d[1]), sh->d[2]);
    if (rows < 0 || rows > (int64_t)INT32_MAX)
        return "B*H*Tq > 2^31 - 1: more query rows than the grids index";
    return NULL;
}

struct DecCtx {
    DecPlan plan;
    float *part_o;
    float2 *part_ml;
    unsigned *arrived; /* dec_counters of every (b, kv, row chunk); zero between launches */
};

/* The shared-memory opt-in and the workspace, outside the timed launches;
 * `waves` blocks an SM at most (dec_plan). */
template <template <int, int> class K, int waves>
static const char *dec_setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    *ctx = NULL;
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return kb_cuda_status(e);
    DecCtx *c = new DecCtx{dec_plan(a, sms, waves), NULL, NULL, NULL};
    if (!dec_dispatch<K>(c->plan.dp, c->plan.rc, [&](auto kernel, int smem) {
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
        e = cudaMalloc((void **)&c->arrived, DEC_COUNTERS * groups * sizeof(unsigned));
    if (e == cudaSuccess)
        e = cudaMemset(c->arrived, 0, DEC_COUNTERS * groups * sizeof(unsigned));
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

static void dec_teardown(void *ctx)
{
    DecCtx *c = (DecCtx *)ctx;
    if (!c)
        return;
    cudaFree(c->part_o);
    cudaFree(c->part_ml);
    cudaFree(c->arrived);
    delete c;
}

template <template <int, int> class K>
static const char *dec_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    const DecCtx *c = (const DecCtx *)ctx;
    const DecPlan &p = c->plan;
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15)
        return "split-KV decoding needs 16-byte aligned tensors";
    const float sl2 = a->scale * KB_LOG2E;
    const int group = kb_attention_group(a);
    if (!dec_dispatch<K>(p.dp, p.rc, [&](auto kernel, int smem) {
            kernel<<<(unsigned)p.blocks, DEC_WARPS * 32, smem, stream>>>(
                a->Tq, a->Tk, a->tk_len, a->kv_stride ? a->kv_stride : (int64_t)a->Tk * a->D, a->D, a->causal,
                group, sl2, p.row_chunks, p.splits, p.chunk, p.rows,
                (const bf16 *)a->q, (const bf16 *)a->k, (const bf16 *)a->v, c->part_o, c->part_ml, c->arrived,
                (bf16 *)a->o);
        }))
        return "no kernel for this D";
    KB_LAUNCHED();
}

#endif
