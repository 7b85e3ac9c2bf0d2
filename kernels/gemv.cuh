/* The Llama model's decode GEMV (model/llama_gpu.cu): y = W x for a batch
 * of one token, with the epilogue of the product it serves, shared by the
 * `gemv` variants of linear, qkv_rope, gate_up and lm_head (each
 * instantiates one GemvOut).
 *
 * A block stages its input vector in shared memory as bf16 (RMSNorm fused
 * in front when the input is the residual stream), then each warp takes
 * two weight rows at a time and streams them with 16-byte loads, four in
 * flight per row per lane.  The two rows are chosen so that the epilogue
 * has what it needs: a RoPE pair (i, i + head_dim/2) of one head, or a
 * SwiGLU pair (gate row i, up row i); elsewhere two neighbours.  Grids are
 * persistent (at most the blocks the GPU holds at once), K is split across
 * warps only while the pairs fit one round of the resident warps, and
 * every launch is a programmatic dependent (kernels/llama.cuh) where the
 * GPU has it, so one kernel's start overlaps the last one's tail. */
#ifndef KBENCH_GEMV_CUH
#define KBENCH_GEMV_CUH

#include <stdlib.h>
#include <string.h>
#include <cuda_bf16.h>
#include "kernels/cuda_util.h"
#include "kernels/llama.cuh"
#include "kernels/reduce.cuh"
#include "ops/decode.h"

namespace kb_gemv {

typedef __nv_bfloat16 bf16;

#define GEMV_WARPS 8

enum GemvOut { GEMV_QKV, GEMV_RESIDUAL, GEMV_SWIGLU, GEMV_LOGITS };

struct GemvArgs {
    const bf16 *w;      /* [rows, K] */
    int N, K;           /* outputs; K a multiple of 8 */
    int ksplit;         /* warps that share one pair of rows, each a slice of K: 1, 2, 4 or 8 */
    const float *x;     /* fp32 input, RMSNorm'd with norm (when norm is set) */
    const float *norm;
    float eps;
    const bf16 *xb;     /* bf16 input (when norm is NULL) */
    float *y;           /* GEMV_RESIDUAL: y += W x; GEMV_LOGITS: y = W x */
    bf16 *yb;           /* GEMV_SWIGLU: silu(W[i] x) * (W[N + i] x) */
    /* GEMV_QKV: q (H, 1, hd), and k, v at position len - 1 of this layer's
     * cache, len = state[KB_DECODE_LEN] (ld rows a head) */
    bf16 *q, *kc, *vc;
    int H, KV, hd, ld;
    int *state;               /* the decode state (ops/decode.h); GEMV_QKV reads its len */
    const float *inv_freq;
    /* GEMV_LOGITS: the greedy pick (see pick_finish) */
    unsigned long long *best; /* the largest (logit, -index) so far, packed; 0 between steps */
    unsigned *done;           /* blocks finished; 0 between steps */
    int *out, max_tokens, set_len;
    float *keep;              /* the logits of each step, when kept */
};

#define STAGE_REGS 2 /* 16-byte loads a thread issues at once when staging a GEMV's input */

/* Stage the GEMV input in shared memory as bf16: xb as it is, or x
 * RMSNorm'd and scaled by norm.  Each thread issues all its loads (up to
 * STAGE_REGS of x and of norm) before it uses any, so staging costs one
 * trip to memory for K up to 4 STAGE_REGS blockDim; longer inputs loop. */
static __device__ void stage_input(const GemvArgs &a, bf16 *xs)
{
    const int t = threadIdx.x, nt = blockDim.x;
    if (!a.norm) {
        const uint4 *src = reinterpret_cast<const uint4 *>(a.xb);
        uint4 *dst = reinterpret_cast<uint4 *>(xs);
        for (int c0 = 0; c0 < a.K / 8; c0 += STAGE_REGS * nt) {
            uint4 v[STAGE_REGS];
#pragma unroll
            for (int i = 0; i < STAGE_REGS; ++i)
                if (c0 + t + i * nt < a.K / 8)
                    v[i] = src[c0 + t + i * nt];
#pragma unroll
            for (int i = 0; i < STAGE_REGS; ++i)
                if (c0 + t + i * nt < a.K / 8)
                    dst[c0 + t + i * nt] = v[i];
        }
        return;
    }
    const float4 *x4 = reinterpret_cast<const float4 *>(a.x), *w4 = reinterpret_cast<const float4 *>(a.norm);
    const int n = a.K / 4;
    float4 xv[STAGE_REGS], wv[STAGE_REGS];
    float ss = 0;
#pragma unroll
    for (int i = 0; i < STAGE_REGS; ++i)
        if (t + i * nt < n)
            xv[i] = x4[t + i * nt], wv[i] = w4[t + i * nt];
#pragma unroll
    for (int i = 0; i < STAGE_REGS; ++i)
        if (t + i * nt < n)
            ss += xv[i].x * xv[i].x + xv[i].y * xv[i].y + xv[i].z * xv[i].z + xv[i].w * xv[i].w;
    for (int c = t + STAGE_REGS * nt; c < n; c += nt) {
        const float4 v = x4[c];
        ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    const float r = rsqrtf(kb_llama_block_sum(ss) / a.K + a.eps);
    auto put = [&](int c, float4 v, float4 w) {
        __nv_bfloat162 *d = reinterpret_cast<__nv_bfloat162 *>(xs + 4 * c);
        d[0] = __floats2bfloat162_rn(v.x * r * w.x, v.y * r * w.y);
        d[1] = __floats2bfloat162_rn(v.z * r * w.z, v.w * r * w.w);
    };
#pragma unroll
    for (int i = 0; i < STAGE_REGS; ++i)
        if (t + i * nt < n)
            put(t + i * nt, xv[i], wv[i]);
    for (int c = t + STAGE_REGS * nt; c < n; c += nt)
        put(c, x4[c], w4[c]);
}

/* Rows (r0, r1) of output pair p: a RoPE pair of one head, a SwiGLU pair
 * (gate, up), or neighbours (the last one twice when N is odd). */
template <int OUT>
__device__ __forceinline__ void pair_rows(const GemvArgs &a, int p, int &r0, int &r1)
{
    if (OUT == GEMV_QKV)
        r0 = p / (a.hd / 2) * a.hd + p % (a.hd / 2), r1 = r0 + a.hd / 2;
    else if (OUT == GEMV_SWIGLU)
        r0 = p, r1 = a.N + p;
    else
        r0 = 2 * p, r1 = min(2 * p + 1, a.N - 1);
}

template <int OUT>
__device__ __forceinline__ int pair_count(const GemvArgs &a)
{
    return OUT == GEMV_QKV ? (a.H + 2 * a.KV) * (a.hd / 2) : OUT == GEMV_SWIGLU ? a.N : (a.N + 1) / 2;
}

/* Four 16-byte chunks of each row from chunk c on (32 apart: one per lane). */
__device__ __forceinline__ void load4(const uint4 *a, const uint4 *b, int c, int end, uint4 (&wa)[4], uint4 (&wb)[4])
{
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        const bool ok = c + u * 32 < end;
        wa[u] = ok ? __ldcs(a + c + u * 32) : make_uint4(0, 0, 0, 0);
        wb[u] = ok ? __ldcs(b + c + u * 32) : make_uint4(0, 0, 0, 0);
    }
}

__device__ __forceinline__ void fma4(const uint4 (&wa)[4], const uint4 (&wb)[4], const uint4 *xv, int c, int end,
                                     float &s0, float &s1)
{
#pragma unroll
    for (int u = 0; u < 4; ++u) {
        if (c + u * 32 >= end)
            break;
        const uint4 xx = xv[c + u * 32];
        const __nv_bfloat162 *pa = reinterpret_cast<const __nv_bfloat162 *>(&wa[u]);
        const __nv_bfloat162 *pb = reinterpret_cast<const __nv_bfloat162 *>(&wb[u]);
        const __nv_bfloat162 *px = reinterpret_cast<const __nv_bfloat162 *>(&xx);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const float2 fx = __bfloat1622float2(px[e]), fa = __bfloat1622float2(pa[e]), fb = __bfloat1622float2(pb[e]);
            s0 = fmaf(fa.x, fx.x, fmaf(fa.y, fx.y, s0));
            s1 = fmaf(fb.x, fx.x, fmaf(fb.y, fx.y, s1));
        }
    }
}

/* The epilogue of pair (s0, s1) at rows (r0, r1); lane 0 only. */
template <int OUT>
__device__ __forceinline__ void epilogue(const GemvArgs &a, int p, int r0, int r1, float s0, float s1, int step,
                                         unsigned long long &best)
{
    if (OUT == GEMV_QKV) {
        const int half = a.hd / 2, head = p / half, i = p % half, pos = a.state[KB_DECODE_LEN] - 1;
        bf16 *dst;
        if (head < a.H + a.KV) {
            kb_rope_rotate(s0, s1, pos, a.inv_freq[i]);
            dst = head < a.H ? a.q + (size_t)head * a.hd : a.kc + ((size_t)(head - a.H) * a.ld + pos) * a.hd;
        } else
            dst = a.vc + ((size_t)(head - a.H - a.KV) * a.ld + pos) * a.hd;
        dst[i] = __float2bfloat16_rn(s0);
        dst[i + half] = __float2bfloat16_rn(s1);
    } else if (OUT == GEMV_RESIDUAL) {
        a.y[r0] += s0;
        if (r1 != r0)
            a.y[r1] += s1;
    } else if (OUT == GEMV_SWIGLU)
        a.yb[p] = __float2bfloat16_rn(kb_swiglu_fast(s0, s1));
    else {
        a.y[r0] = s0, a.y[r1] = s1;
        if (a.keep && step < a.max_tokens)
            a.keep[(size_t)step * a.N + r0] = s0, a.keep[(size_t)step * a.N + r1] = s1;
        best = max(best, max(kb_pick_key(s0, r0), kb_pick_key(s1, r1)));
    }
}

/* GEMV_LOGITS, the last block to finish: the greedy pick becomes the next
 * token and generated token `step`; set_len >= 0 (a prefill) sets the
 * cache length for the next token, else it grows by one.  The pick's
 * slots are left zeroed for the next step. */
static __device__ void pick_finish(const GemvArgs &a, int step)
{
    kb_decode_advance(a.state, a.out, a.max_tokens, a.set_len, step, kb_pick_index(*a.best));
    *a.best = 0;
    *a.done = 0;
}

/* y = W x for a batch of one.  The block stages x in shared memory (as
 * bf16, RMSNorm'd when norm is set); ksplit warps take each pair of rows,
 * each a slice of K, and the block's pairs advance by the grid, so a block
 * pays for its staging once.  The first loads are issued before the
 * staging, and each pair's before the last one's epilogue, so the memory
 * pipe is never idle for long. */
template <int OUT>
__global__ void __launch_bounds__(GEMV_WARPS * 32, 3) gemv_kernel(GemvArgs a)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ float2 part[GEMV_WARPS];
    __shared__ unsigned long long block_best[GEMV_WARPS];
    bf16 *xs = reinterpret_cast<bf16 *>(smem_raw);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, ks = a.ksplit, per_block = GEMV_WARPS / ks;
    const int pairs = pair_count<OUT>(a), chunks = a.K / 8, slice = ((chunks + ks - 1) / ks + 31) / 32 * 32;
    const int c_beg = warp % ks * slice, c_end = min(c_beg + slice, chunks);
    const int block_iters = (pairs + per_block - 1) / per_block;
    unsigned long long best = 0;
    kb_pdl_release();

    uint4 wa[4], wb[4];
    int bp = blockIdx.x, p = bp * per_block + warp / ks, r0 = 0, r1 = 0;
    if (bp < block_iters && p < pairs) {
        pair_rows<OUT>(a, p, r0, r1);
        load4(reinterpret_cast<const uint4 *>(a.w + (size_t)r0 * a.K), reinterpret_cast<const uint4 *>(a.w + (size_t)r1 * a.K),
              c_beg + lane, c_end, wa, wb);
    }
    kb_pdl_wait(); /* the input, the state and every output are the previous kernels' */
    const int step = OUT == GEMV_LOGITS ? a.state[KB_DECODE_STEP] : 0;
    stage_input(a, xs);
    __syncthreads();
    const uint4 *xv = reinterpret_cast<const uint4 *>(xs);

    for (; bp < block_iters; bp += gridDim.x) {
        p = bp * per_block + warp / ks;
        const bool mine = p < pairs;
        float s0 = 0, s1 = 0;
        if (mine) {
            pair_rows<OUT>(a, p, r0, r1);
            const uint4 *ra = reinterpret_cast<const uint4 *>(a.w + (size_t)r0 * a.K);
            const uint4 *rb = reinterpret_cast<const uint4 *>(a.w + (size_t)r1 * a.K);
            for (int c = c_beg + lane;; c += 128) { /* wa, wb hold chunks c.. */
                fma4(wa, wb, xv, c, c_end, s0, s1);
                if (c + 128 >= c_end)
                    break;
                load4(ra, rb, c + 128, c_end, wa, wb);
            }
            /* The next pair's first loads, in flight during this one's sums. */
            const int pn = (bp + gridDim.x) * per_block + warp / ks;
            if (bp + gridDim.x < block_iters && pn < pairs) {
                int n0, n1;
                pair_rows<OUT>(a, pn, n0, n1);
                load4(reinterpret_cast<const uint4 *>(a.w + (size_t)n0 * a.K),
                      reinterpret_cast<const uint4 *>(a.w + (size_t)n1 * a.K), c_beg + lane, c_end, wa, wb);
            }
            s0 = kb_warp_allreduce<32>(s0, KbSum{});
            s1 = kb_warp_allreduce<32>(s1, KbSum{});
        }
        if (ks > 1) { /* the slices' sums, to the pair's first warp */
            if (lane == 0)
                part[warp] = make_float2(s0, s1);
            __syncthreads();
            if (mine && warp % ks == 0 && lane == 0)
                for (int j = 1; j < ks; ++j)
                    s0 += part[warp + j].x, s1 += part[warp + j].y;
            __syncthreads();
        }
        if (mine && warp % ks == 0 && lane == 0)
            epilogue<OUT>(a, p, r0, r1, s0, s1, step, best);
    }
    if (OUT != GEMV_LOGITS)
        return;
    /* The block's best to the grid's; the last block to finish picks. */
    if (lane == 0)
        block_best[warp] = best;
    __syncthreads();
    if (threadIdx.x)
        return;
    for (int w = 0; w < GEMV_WARPS; ++w)
        best = max(best, block_best[w]);
    atomicMax(a.best, best);
    __threadfence();
    if (atomicAdd(a.done, 1u) == gridDim.x - 1) {
        __threadfence();
        pick_finish(a, step);
    }
}


/* ---- the host side: set-up and launch ---- */

/* What a launch needs of the GPU, from the variant's setup. */
struct Ctx {
    int sms, resident; /* SMs, and blocks of this kernel an SM holds at the set-up K */
    int pdl;           /* programmatic dependent launch (sm_90 on) */
    unsigned long long *best; /* GEMV_LOGITS: the pick in flight, zero between launches */
    unsigned *done;
};

static void teardown(void *ctx)
{
    Ctx *c = (Ctx *)ctx;
    if (c) {
        cudaFree(c->best);
        cudaFree(c->done);
    }
    free(c);
}

/* GEMV_LOGITS's slots for the pick in flight, zeroed. */
static const char *alloc_pick(Ctx *c)
{
    KB_CUDA_TRY(cudaMalloc(&c->best, sizeof *c->best));
    KB_CUDA_TRY(cudaMalloc(&c->done, sizeof *c->done));
    KB_CUDA_TRY(cudaMemset(c->best, 0, sizeof *c->best));
    return kb_cuda_status(cudaMemset(c->done, 0, sizeof *c->done));
}

template <int OUT>
static const char *setup_into(Ctx *c, int K)
{
    int dev = 0, major = 0;
    KB_CUDA_TRY(cudaGetDevice(&dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    c->pdl = major >= 9;
    const int smem = (int)sizeof(bf16) * K; /* the input vector */
    KB_CUDA_TRY(cudaFuncSetAttribute((const void *)gemv_kernel<OUT>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c->resident, gemv_kernel<OUT>, GEMV_WARPS * 32, smem));
    if (c->resident < 1)
        return "the GEMV kernel does not fit on an SM at this K (its input vector in shared memory)";
    return OUT == GEMV_LOGITS ? alloc_pick(c) : NULL;
}

/* A context for kernel OUT at inputs up to K long. */
template <int OUT>
static const char *setup(int K, void **ctx)
{
    Ctx *c = (Ctx *)calloc(1, sizeof *c);
    const char *err = c ? setup_into<OUT>(c, K) : "out of host memory";
    if (err) {
        teardown(c);
        c = NULL;
    }
    *ctx = c;
    return err;
}

/* A variant's setup: kernel OUT for its op's argument struct A, sized by A's K. */
template <int OUT, class A>
static const char *setup_for(const void *args, void **ctx)
{
    return setup<OUT>(((const A *)args)->K, ctx);
}

/* One launch: at most as many blocks as the GPU holds at once; warps share
 * a pair (ksplit) while all the pairs still fit in one round of the
 * resident warps, each slice at least 256 elements, so a small product
 * takes one trip to memory per warp. */
template <int OUT>
static const char *launch(const Ctx *c, GemvArgs &a, cudaStream_t s)
{
    const int64_t pairs = OUT == GEMV_QKV ? (int64_t)(a.H + 2 * a.KV) * (a.hd / 2)
                          : OUT == GEMV_SWIGLU ? a.N : (a.N + 1) / 2;
    const int64_t capacity = (int64_t)c->sms * c->resident, warps = capacity * GEMV_WARPS;
    const int chunks = a.K / 8;
    a.ksplit = 1;
    while (a.ksplit < GEMV_WARPS && pairs * 2 * a.ksplit <= warps && chunks / (2 * a.ksplit) >= 32)
        a.ksplit *= 2;
    const int64_t want = (pairs * a.ksplit + GEMV_WARPS - 1) / GEMV_WARPS;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(want < capacity ? want : capacity));
    cfg.blockDim = dim3(GEMV_WARPS * 32);
    cfg.dynamicSmemBytes = sizeof(bf16) * a.K;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = c->pdl ? 1 : 0;
    void *args[] = {&a};
    return kb_cuda_status(cudaLaunchKernelExC(&cfg, (const void *)gemv_kernel<OUT>, args));
}

/* A GemvArgs with every field zero but the product's. */
static inline GemvArgs args_for(const void *w, int N, int K)
{
    GemvArgs a;
    memset(&a, 0, sizeof a);
    a.w = (const bf16 *)w, a.N = N, a.K = K;
    return a;
}

/* K as the gemv kernel takes it: 16-byte rows of bf16. */
static inline const char *k_refusal(int64_t K)
{
    return K % 8 ? "needs K a multiple of 8 (16-byte rows of bf16)" : NULL;
}

}  // namespace kb_gemv

#endif
