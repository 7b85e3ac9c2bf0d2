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

/* bf16 per padded shared K/V row: 16 bytes past DP keep ldmatrix and the
 * scalar kernel's row reads free of bank conflicts. */
template <int DP> constexpr int kDecPaddedRow = DP + 8;

/* The shared-memory layout every pass-1 kernel shares: per warp, ST stages
 * of (K, V) tiles of KEYS keys, rows padded by 16 bytes; the warps' final
 * states and the merge's weights reuse that space. */
template <int DP, int RC, int ST = 2, int KEYS = DEC_KEYS>
struct DecCfg {
    static constexpr int kLd = kDecPaddedRow<DP>;     /* bf16 per shared K/V row */
    static constexpr int kChunks = DP / 8;            /* 16-byte chunks per row */
    static constexpr int kTileElems = KEYS * kLd;     /* one K or V tile */
    static constexpr int kKVBytes = DEC_WARPS * ST * 2 * kTileElems * (int)sizeof(bf16);
    static_assert(DEC_STEP % (DEC_WARPS * KEYS) == 0, "a chunk is whole rounds of tiles");
    static constexpr int kMergeBytes = DEC_WARPS * RC * (DP + 2) * (int)sizeof(float);
    static_assert(kMergeBytes <= kKVBytes, "merge space fits in the K/V space");
    static_assert(RC * (DEC_MAX_SPLITS + 1) * (int)sizeof(float) <= kKVBytes, "chunk weights fit too");
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

/* Where a pass-1 kernel leaves its warps' final states for dec_finish, in
 * the K/V space once every warp is done with it: O (unnormalized) as
 * o_w[warp][r][DP], (m, l) as ml_w[warp][r]. */
template <int DP, int RC>
__device__ __forceinline__ float *dec_o_w(unsigned char *smem) { return reinterpret_cast<float *>(smem); }
template <int DP, int RC>
__device__ __forceinline__ float2 *dec_ml_w(unsigned char *smem)
{
    return reinterpret_cast<float2 *>(dec_o_w<DP, RC>(smem) + DEC_WARPS * RC * DP);
}

/* The end of pass 1, once the warps' states are in place: merge them, write
 * this chunk's (m, l, O) of each row, and in the row group's last block to
 * finish, merge every chunk. */
template <int DP, int RC>
__device__ __forceinline__ void dec_finish(unsigned char *smem_raw, const DecBlock &b, int D, int splits,
                                           int64_t nrows, int row_chunks, float *__restrict__ part_o,
                                           float2 *__restrict__ part_ml, unsigned *__restrict__ arrived,
                                           bf16 *__restrict__ o)
{
    const int R = b.R, r0 = b.r0, s = b.s;
    const int64_t grow0 = b.grow0;
    const float *o_w = dec_o_w<DP, RC>(smem_raw);
    const float2 *ml_w = dec_ml_w<DP, RC>(smem_raw);
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
        unsigned *count = arrived + b.bkv * row_chunks + b.rchunk;
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
    unsigned *arrived; /* per (b, kv, row chunk): blocks done; zero between launches */
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
