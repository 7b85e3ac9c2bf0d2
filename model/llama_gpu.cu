/* The Llama-style model in bf16 on the GPU (model/llama_gpu.h).
 *
 * Decode is memory-bound: at batch 1 each weight is read once per token, so
 * the time is the bytes of the weights and the KV cache over the copy
 * bandwidth.  Every linear layer is one matrix-vector kernel (gemv_kernel):
 * a block stages its input vector in shared memory as bf16 (RMSNorm fused
 * in front when the input is the residual stream), then each warp takes
 * two weight rows at a time and streams them with 16-byte loads, four in
 * flight per row per lane.  The two rows are chosen so that the epilogue
 * has what it needs: a RoPE pair (i, i + head_dim/2) of one head, or a
 * SwiGLU pair (gate row i, up row i); elsewhere two neighbours.
 *
 *   per layer: qkv  gemv(RMSNorm(x)) -> RoPE -> q, and k, v into the cache
 *              o    flash_decode(q, cache)
 *              x   += gemv(o)                     (Wo, residual)
 *              h    gemv(RMSNorm(x)) -> silu(g) u (gate and up rows stacked)
 *              x   += gemv(h)                     (Wdown, residual)
 *   logits = gemv(RMSNorm(x)) (the LM head); pick = argmax, the next token
 *
 * 5 kernels a layer and 2 more, one graph per step.
 *
 * Prefill: the same steps over n tokens with cuBLASLt products (bf16 in,
 * fp32 accumulation; x += in the epilogue for Wo and Wdown) and flash_wgmma
 * (causal) over the cache; off Hopper, or at a head dim flash_wgmma does
 * not take, flash_mma, the rung it builds on (pick_attention). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include "harness/harness.h"
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "kernels/llama.cuh"
#include "kernels/reduce.cuh"
#include "model/kernel_call.h"
#include "ops/gather.h"
#include "ops/heads.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "model/llama_gpu.h"

typedef __nv_bfloat16 bf16;


enum { ST_LEN, ST_STEP, ST_TOK, ST_COUNT }; /* device state: keys in the cache after this token, step, token */

#define GEMV_WARPS 8
#define MAX_HEAD_DIM 128

/* ---- kernels ---------------------------------------------------------------------- */

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
    /* GEMV_QKV: q (H, 1, hd), and k, v at position len - 1 of this layer's cache */
    bf16 *q, *kc, *vc;
    int H, KV, hd, max_len;
    int *state;
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
__device__ void stage_input(const GemvArgs &a, bf16 *xs)
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
        const int half = a.hd / 2, head = p / half, i = p % half, pos = a.state[ST_LEN] - 1;
        bf16 *dst;
        if (head < a.H + a.KV) {
            kb_rope_rotate(s0, s1, pos, a.inv_freq[i]);
            dst = head < a.H ? a.q + (size_t)head * a.hd : a.kc + ((size_t)(head - a.H) * a.max_len + pos) * a.hd;
        } else
            dst = a.vc + ((size_t)(head - a.H - a.KV) * a.max_len + pos) * a.hd;
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
__device__ void pick_finish(const GemvArgs &a, int step)
{
    const int tok = (int)~(unsigned)(*a.best & 0xffffffffu);
    if (step < a.max_tokens)
        a.out[step] = tok;
    a.state[ST_TOK] = tok;
    a.state[ST_STEP] = step + 1;
    a.state[ST_LEN] = a.set_len >= 0 ? a.set_len : a.state[ST_LEN] + 1;
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
    const int step = OUT == GEMV_LOGITS ? a.state[ST_STEP] : 0;
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

/* ---- the model on the device -------------------------------------------------------- */

struct Layer {
    float *attn_norm, *mlp_norm;
    bf16 *wqkv, *wo, *wgu, *wd; /* [(H + 2 KV) hd, d], [d, H hd], [2 ff, d] (gate | up), [d, ff] */
};

struct Attn {
    const kb_variant *v;
    void *ctx;
    kb_attention_args args;
};

struct kb_llama_gpu {
    kb_llama_config c;
    int max_len, max_prefill, max_tokens, sms;
    bf16 *embed, *lm_head;
    Layer *layers;
    float *final_norm, *inv_freq;
    bf16 *kcache, *vcache;                     /* [layer][KV][max_len][hd] */
    float *x, *logits, *keep;                  /* [max_prefill, d], [V], [max_tokens, V] or NULL */
    int keeping;                               /* launches from now on keep the logits */
    bf16 *h, *qkv, *gu, *q, *o, *om;           /* prefill (and decode) activations */
    int *state, *out, *ids;
    unsigned long long *pick_best;             /* the LM head's greedy pick in flight (zero between steps) */
    unsigned *pick_done;
    int resident[4];                           /* blocks of each GEMV kernel an SM holds */
    int pdl;                                   /* programmatic dependent launch (sm_90 on) */
    cublasLtHandle_t lt;
    void *workspace;
    int planned;                               /* the n of the plans below; 0 when none */
    kb_lt_product p_qkv, p_o, p_gu, p_d;
    Attn decode_attn;                          /* flash_decode, set up once: Tk is the cache's length */
    Attn prefill_attn;                         /* flash_mma, set up per plan */
    kb_call embedding, norm, rotary, swiglu, merge; /* the op tables' variants, set up once (setup_kernels) */
    char why[256];
};

const char *kb_llama_gpu_unfit(const kb_llama_config *c)
{
    if (c->head_dim % 16 || c->head_dim > MAX_HEAD_DIM)
        return "the GPU path needs head_dim a multiple of 16 up to 128 (flash_mma, flash_decode)";
    if (c->d_model % 8 || c->d_ff % 8 || ((int64_t)c->heads * c->head_dim) % 8)
        return "the GPU path needs d_model, d_ff and heads x head_dim multiples of 8 (16-byte weight rows)";
    return NULL;
}

/* Device copy of n floats as bf16 (dst[i] = bf16(src[i])), through a host buffer. */
static const char *upload_bf16(bf16 *dst, const float *src, int64_t n)
{
    const int64_t CHUNK = 1 << 22;
    uint16_t *tmp = (uint16_t *)malloc(sizeof(uint16_t) * CHUNK);
    if (!tmp)
        return "out of host memory for the weight upload";
    cudaError_t e = cudaSuccess;
    for (int64_t off = 0; off < n && e == cudaSuccess; off += CHUNK) {
        const int64_t m = n - off < CHUNK ? n - off : CHUNK;
        for (int64_t i = 0; i < m; ++i)
            tmp[i] = kb_f32_to_bf16(src[off + i]);
        e = cudaMemcpy(dst + off, tmp, sizeof(uint16_t) * m, cudaMemcpyHostToDevice);
    }
    free(tmp);
    return kb_cuda_status(e);
}

template <class T>
static const char *dalloc(T **p, int64_t n)
{
    *p = NULL;
    cudaError_t e = cudaMalloc((void **)p, sizeof(T) * (size_t)(n > 0 ? n : 1));
    if (e != cudaSuccess) {
        cudaGetLastError();
        *p = NULL;
        return "out of device memory for the model, its KV cache and activations";
    }
    return NULL;
}

static const char *upload_f32(float **dst, const float *src, int64_t n)
{
    KB_TRY(dalloc(dst, n));
    KB_CUDA_TRY(cudaMemcpy(*dst, src, sizeof(float) * n, cudaMemcpyHostToDevice));
    return NULL;
}

static const char *upload_layer(kb_llama_gpu *g, Layer *L, const kb_llama_layer *w)
{
    const kb_llama_config *c = &g->c;
    const int64_t d = c->d_model, qd = (int64_t)c->heads * c->head_dim, kvd = (int64_t)c->kv_heads * c->head_dim;
    KB_TRY(upload_f32(&L->attn_norm, w->attn_norm, d));
    KB_TRY(upload_f32(&L->mlp_norm, w->mlp_norm, d));
    KB_TRY(dalloc(&L->wqkv, (qd + 2 * kvd) * d));
    KB_TRY(upload_bf16(L->wqkv, w->wq, qd * d));
    KB_TRY(upload_bf16(L->wqkv + qd * d, w->wk, kvd * d));
    KB_TRY(upload_bf16(L->wqkv + (qd + kvd) * d, w->wv, kvd * d));
    KB_TRY(dalloc(&L->wo, d * qd));
    KB_TRY(upload_bf16(L->wo, w->wo, d * qd));
    KB_TRY(dalloc(&L->wgu, 2 * (int64_t)c->d_ff * d));
    KB_TRY(upload_bf16(L->wgu, w->w_gate, (int64_t)c->d_ff * d));
    KB_TRY(upload_bf16(L->wgu + (int64_t)c->d_ff * d, w->w_up, (int64_t)c->d_ff * d));
    KB_TRY(dalloc(&L->wd, d * c->d_ff));
    KB_TRY(upload_bf16(L->wd, w->w_down, d * c->d_ff));
    return NULL;
}

/* RoPE's frequencies theta^(-2i / hd), in double on the host. */
static const char *upload_inv_freq(kb_llama_gpu *g)
{
    const int half = g->c.head_dim / 2;
    float f[MAX_HEAD_DIM / 2];
    for (int i = 0; i < half; ++i)
        f[i] = (float)pow(g->c.rope_theta, -2.0 * i / g->c.head_dim);
    return upload_f32(&g->inv_freq, f, half);
}

static const char *find_attention(Attn *a, const char *name)
{
    const kb_op *op = kb_find_op("attention");
    a->v = op ? kb_find_variant(op, name, KB_BF16) : NULL;
    return a->v ? NULL : "the attention variants flash_mma and flash_decode are not in this build";
}

/* The faster of two attention variants that this GPU and build can run at
 * the model's head dim: `fast` (flash_wgmma for prefill) where it is built,
 * the device has its compute capability and its kernels take the head dim,
 * else `fallback`, the rung it builds on.  Decode keeps flash_decode:
 * flash_decode_mma's tensor-core tiles made SmolLM2's step 10% shorter but
 * Llama-3.2-1B's 4.5% longer (docs/notes/llama-decode.md). */
static const char *pick_attention(Attn *a, const char *fast, const char *fallback, int cc, int head_dim)
{
    const kb_op *op = kb_find_op("attention");
    const kb_variant *v = op ? kb_find_variant(op, fast, KB_BF16) : NULL;
    kb_shape sh = {};
    sh.nd = 5, sh.d[0] = sh.d[1] = sh.d[2] = sh.d[3] = 1, sh.d[4] = head_dim; /* only D matters to them */
    if (v && v->min_cc <= cc && (!v->unsupported || !v->unsupported(&sh))) {
        a->v = v;
        return NULL;
    }
    return find_attention(a, fallback);
}

static const char *setup_attention(kb_llama_gpu *g, Attn *a)
{
    const char *no = a->v->setup ? a->v->setup(&a->args, &a->ctx) : NULL;
    if (no) {
        snprintf(g->why, sizeof g->why, "attention %s setup: %s", a->v->name, no);
        return g->why;
    }
    return NULL;
}

static void teardown_attention(Attn *a)
{
    if (a->v && a->v->teardown && a->ctx)
        a->v->teardown(a->ctx);
    a->ctx = NULL;
}

/* The prefill's and the decode's kernels: variants of the op tables. */
static const char *setup_kernels(kb_llama_gpu *g)
{
    const kb_llama_config *c = &g->c;
    const kb_rmsnorm_args norm = {g->max_prefill, c->d_model, (float)c->eps, g->x, g->final_norm, {NULL}};
    KB_TRY(kb_call_setup(&g->norm, "rmsnorm", "block", KB_BF16, &norm));
    const kb_gather_args embedding = {g->max_prefill, c->vocab, c->d_model, g->ids, g->embed, g->x};
    KB_TRY(kb_call_setup(&g->embedding, "gather", "block", KB_BF16, &embedding));
    const kb_swiglu_args swiglu = {g->max_prefill, c->d_ff, {NULL}, {NULL}};
    KB_TRY(kb_call_setup(&g->swiglu, "swiglu", "vectorized", KB_BF16, &swiglu));
    const kb_rope_args rope = {g->max_prefill, c->heads, c->kv_heads, c->head_dim, 0, g->max_len};
    KB_TRY(kb_call_setup(&g->rotary, "rope", "sincos", KB_BF16, &rope));
    const kb_merge_heads_args merge = {1, c->heads, g->max_prefill, c->head_dim, NULL, NULL};
    KB_TRY(kb_call_setup(&g->merge, "merge_heads", "vectorized", KB_BF16, &merge));
    return NULL;
}

static const char *allocate(kb_llama_gpu *g)
{
    const kb_llama_config *c = &g->c;
    const int64_t d = c->d_model, n = g->max_prefill, qd = (int64_t)c->heads * c->head_dim;
    const int64_t kvd = (int64_t)c->kv_heads * c->head_dim;
    const int64_t cache = (int64_t)c->layers * kvd * g->max_len;
    KB_TRY(dalloc(&g->kcache, cache));
    KB_TRY(dalloc(&g->vcache, cache));
    KB_TRY(dalloc(&g->x, n * d));
    KB_TRY(dalloc(&g->h, n * (c->d_ff > d ? c->d_ff : d)));
    KB_TRY(dalloc(&g->qkv, n * (qd + 2 * kvd)));
    KB_TRY(dalloc(&g->gu, n * 2 * c->d_ff));
    KB_TRY(dalloc(&g->q, n * qd));
    KB_TRY(dalloc(&g->o, n * qd));
    KB_TRY(dalloc(&g->om, n * qd));
    KB_TRY(dalloc(&g->logits, c->vocab));
    KB_TRY(dalloc(&g->state, ST_COUNT));
    KB_TRY(dalloc(&g->out, g->max_tokens));
    KB_TRY(dalloc(&g->ids, n));
    KB_TRY(dalloc(&g->pick_best, 1));
    KB_TRY(dalloc(&g->pick_done, 1));
    KB_CUDA_TRY(cudaMemset(g->pick_best, 0, sizeof *g->pick_best));
    KB_CUDA_TRY(cudaMemset(g->pick_done, 0, sizeof *g->pick_done));
    if (g->keeping)
        KB_TRY(dalloc(&g->keep, (int64_t)g->max_tokens * c->vocab));
    KB_CUDA_TRY(cudaMemset(g->state, 0, sizeof(int) * ST_COUNT));
    /* The cache past what a run has written is read by no kernel, but start it finite. */
    KB_CUDA_TRY(cudaMemset(g->kcache, 0, sizeof(bf16) * cache));
    KB_CUDA_TRY(cudaMemset(g->vcache, 0, sizeof(bf16) * cache));
    return NULL;
}

static const char *create(kb_llama_gpu *g, const kb_llama_model *m)
{
    const kb_llama_config *c = &g->c;
    const int64_t vd = (int64_t)c->vocab * c->d_model;
    int dev = 0;
    KB_CUDA_TRY(cudaGetDevice(&dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev));
    int major = 0, minor = 0;
    KB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    g->pdl = major >= 9;
    KB_TRY(find_attention(&g->decode_attn, "flash_decode"));
    KB_TRY(pick_attention(&g->prefill_attn, "flash_wgmma", "flash_mma", major * 10 + minor, c->head_dim));
    KB_TRY(dalloc(&g->embed, vd));
    KB_TRY(upload_bf16(g->embed, m->embed, vd));
    if (c->tied)
        g->lm_head = g->embed;
    else {
        KB_TRY(dalloc(&g->lm_head, vd));
        KB_TRY(upload_bf16(g->lm_head, m->lm_head, vd));
    }
    g->layers = (Layer *)calloc((size_t)c->layers, sizeof(Layer));
    if (!g->layers)
        return "out of host memory";
    for (int l = 0; l < c->layers; ++l)
        KB_TRY(upload_layer(g, &g->layers[l], &m->layers[l]));
    KB_TRY(upload_f32(&g->final_norm, m->norm, c->d_model));
    KB_TRY(upload_inv_freq(g));
    KB_TRY(allocate(g));
    if (cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    KB_CUDA_TRY(cudaMalloc(&g->workspace, KB_LT_WORKSPACE_BYTES));
    /* Decode attention: one query per head against the whole cache, of
     * which state[ST_LEN] keys hold data at each step. */
    g->decode_attn.args = kb_attention_args{1, c->heads, 1, g->max_len, c->head_dim, 0,
                                            (float)(1.0 / sqrt((double)c->head_dim)), g->q, g->kcache, g->vcache, g->o,
                                            c->kv_heads, (int64_t)g->max_len * c->head_dim, g->state + ST_LEN};
    const int widest = c->d_ff > c->d_model ? c->d_ff : c->d_model, qd = c->heads * c->head_dim;
    const int smem = (int)sizeof(bf16) * (widest > qd ? widest : qd); /* the input vector */
    const void *kernels[4] = {(const void *)gemv_kernel<GEMV_QKV>, (const void *)gemv_kernel<GEMV_RESIDUAL>,
                              (const void *)gemv_kernel<GEMV_SWIGLU>, (const void *)gemv_kernel<GEMV_LOGITS>};
    for (int k = 0; k < 4; ++k) {
        KB_CUDA_TRY(cudaFuncSetAttribute(kernels[k], cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&g->resident[k], kernels[k], GEMV_WARPS * 32, smem));
        if (g->resident[k] < 1)
            return "a GEMV kernel does not fit on an SM";
    }
    KB_TRY(setup_kernels(g));
    return setup_attention(g, &g->decode_attn);
}

extern "C" const char *kb_llama_gpu_create(const kb_llama_model *m, int max_len, int max_prefill, int max_tokens,
                                           int keep_logits, kb_llama_gpu **out)
{
    *out = NULL;
    KB_TRY(kb_llama_gpu_unfit(&m->cfg));
    kb_llama_gpu *g = (kb_llama_gpu *)calloc(1, sizeof *g);
    if (!g)
        return "out of host memory";
    g->c = m->cfg;
    g->max_len = max_len;
    g->max_prefill = max_prefill;
    g->max_tokens = max_tokens;
    g->keeping = keep_logits;
    const char *err = create(g, m);
    if (err) {
        static char why[256];
        snprintf(why, sizeof why, "%s", err);
        kb_llama_gpu_destroy(g);
        return why;
    }
    *out = g;
    return NULL;
}

static void destroy_plans(kb_llama_gpu *g)
{
    kb_lt_destroy(&g->p_qkv);
    kb_lt_destroy(&g->p_o);
    kb_lt_destroy(&g->p_gu);
    kb_lt_destroy(&g->p_d);
    teardown_attention(&g->prefill_attn);
    g->planned = 0;
}

extern "C" void kb_llama_gpu_destroy(kb_llama_gpu *g)
{
    if (!g)
        return;
    destroy_plans(g);
    teardown_attention(&g->decode_attn);
    for (kb_call *k : {&g->embedding, &g->norm, &g->rotary, &g->swiglu, &g->merge})
        kb_call_teardown(k);
    for (int l = 0; g->layers && l < g->c.layers; ++l) {
        Layer *L = &g->layers[l];
        cudaFree(L->attn_norm), cudaFree(L->mlp_norm), cudaFree(L->wqkv), cudaFree(L->wo), cudaFree(L->wgu),
            cudaFree(L->wd);
    }
    free(g->layers);
    if (g->lm_head != g->embed)
        cudaFree(g->lm_head);
    void *bufs[] = {g->embed, g->final_norm, g->inv_freq, g->kcache, g->vcache, g->x, g->logits, g->keep, g->h, g->qkv, g->gu, g->q, g->o, g->om, g->state,
                    g->out, g->ids, g->pick_best, g->pick_done, g->workspace};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i)
        cudaFree(bufs[i]);
    if (g->lt)
        cublasLtDestroy(g->lt);
    free(g);
}

extern "C" const char *kb_llama_gpu_plan(kb_llama_gpu *g, int n)
{
    if (g->planned == n)
        return NULL;
    destroy_plans(g);
    if (n < 1 || n > g->max_prefill || n > g->max_len)
        return "a prefill longer than the model was set up for";
    const kb_llama_config *c = &g->c;
    const int d = c->d_model, qd = c->heads * c->head_dim, kvd = c->kv_heads * c->head_dim;
    const Layer *L = &g->layers[0];
    KB_TRY(kb_lt_plan_linear(&g->p_qkv, g->lt, n, qd + 2 * kvd, d, 0, g->h, L->wqkv, g->qkv));
    KB_TRY(kb_lt_plan_linear(&g->p_o, g->lt, n, d, qd, 1, g->om, L->wo, g->x));
    KB_TRY(kb_lt_plan_linear(&g->p_gu, g->lt, n, 2 * c->d_ff, d, 0, g->h, L->wgu, g->gu));
    KB_TRY(kb_lt_plan_linear(&g->p_d, g->lt, n, d, c->d_ff, 1, g->h, L->wd, g->x));
    g->prefill_attn.args = kb_attention_args{1, c->heads, n, n, c->head_dim, 1,
                                             (float)(1.0 / sqrt((double)c->head_dim)), g->q, g->kcache, g->vcache,
                                             g->o, c->kv_heads, (int64_t)g->max_len * c->head_dim, NULL};
    KB_TRY(setup_attention(g, &g->prefill_attn));
    g->planned = n;
    return NULL;
}

/* x = the embedding's rows of the n tokens ids (device memory). */
static const char *embed(const kb_llama_gpu *g, const int *ids, int n, cudaStream_t s)
{
    const kb_gather_args a = {n, g->c.vocab, g->c.d_model, ids, g->embed, g->x};
    return kb_call_launch(&g->embedding, &a, s);
}

/* h = bf16(RMSNorm(x) * w) over rows of the residual stream. */
static const char *norm(const kb_llama_gpu *g, const float *x, const float *w, int rows, bf16 *h, cudaStream_t s)
{
    kb_rmsnorm_args a = {rows, g->c.d_model, (float)g->c.eps, x, w, {NULL}};
    a.y16 = (uint16_t *)h;
    return kb_call_launch(&g->norm, &a, s);
}

/* Launch kernel(*arg) with programmatic dependent launch where the GPU
 * has it (sm_90 on). */
static const char *launch_pdl(const kb_llama_gpu *g, const void *kernel, unsigned grid, size_t smem, cudaStream_t s,
                              void *arg)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(GEMV_WARPS * 32);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = &attr;
    cfg.numAttrs = g->pdl ? 1 : 0;
    void *args[] = {arg};
    return kb_cuda_status(cudaLaunchKernelExC(&cfg, kernel, args));
}

/* One GEMV launch over `pairs` pairs of rows: at most as many blocks as
 * the GPU holds at once; warps share a pair (ksplit) while all the pairs
 * still fit in one round of the resident warps, each slice at least 256
 * elements, so a small product takes one trip to memory per warp. */
template <int OUT>
static const char *gemv(const kb_llama_gpu *g, GemvArgs &a, int64_t pairs, cudaStream_t s)
{
    const int64_t capacity = (int64_t)g->sms * g->resident[OUT], warps = capacity * GEMV_WARPS;
    const int chunks = a.K / 8;
    a.ksplit = 1;
    while (a.ksplit < GEMV_WARPS && pairs * 2 * a.ksplit <= warps && chunks / (2 * a.ksplit) >= 32)
        a.ksplit *= 2;
    const int64_t want = (pairs * a.ksplit + GEMV_WARPS - 1) / GEMV_WARPS;
    return launch_pdl(g, (const void *)gemv_kernel<OUT>, (unsigned)(want < capacity ? want : capacity),
                      sizeof(bf16) * a.K, s, &a);
}

static GemvArgs gemv_args(const bf16 *w, int N, int K)
{
    GemvArgs a;
    memset(&a, 0, sizeof a);
    a.w = w, a.N = N, a.K = K;
    return a;
}

/* Logits of the residual row x_last and the greedy pick. */
static const char *head_and_pick(kb_llama_gpu *g, const float *x_last, int set_len, cudaStream_t s)
{
    const kb_llama_config *c = &g->c;
    GemvArgs a = gemv_args(g->lm_head, c->vocab, c->d_model);
    a.x = x_last, a.norm = g->final_norm, a.eps = (float)c->eps, a.y = g->logits;
    a.state = g->state, a.best = g->pick_best, a.done = g->pick_done, a.out = g->out;
    a.max_tokens = g->max_tokens, a.set_len = set_len, a.keep = g->keeping ? g->keep : NULL;
    return gemv<GEMV_LOGITS>(g, a, (c->vocab + 1) / 2, s);
}

static const char *lt(const kb_llama_gpu *g, const kb_lt_product *p, const void *X, const void *W, void *Y,
                      cudaStream_t s)
{
    return kb_lt_run(p, g->lt, NULL, X, W, Y, g->workspace, s);
}

extern "C" const char *kb_llama_gpu_prefill(kb_llama_gpu *g, const int *ids, int n, cudaStream_t s)
{
    if (g->planned != n)
        return "kb_llama_gpu_prefill: not planned for this length";
    const kb_llama_config *c = &g->c;
    const int d = c->d_model, H = c->heads, KV = c->kv_heads, hd = c->head_dim;
    const int64_t kv_layer = (int64_t)KV * g->max_len * hd;
    KB_CUDA_TRY(cudaMemcpyAsync(g->ids, ids, sizeof(int) * n, cudaMemcpyHostToDevice, s));
    KB_CUDA_TRY(cudaMemsetAsync(g->state + ST_STEP, 0, sizeof(int), s));
    KB_TRY(embed(g, g->ids, n, s));
    for (int l = 0; l < c->layers; ++l) {
        const Layer *L = &g->layers[l];
        KB_TRY(norm(g, g->x, L->attn_norm, n, g->h, s));
        KB_TRY(lt(g, &g->p_qkv, g->h, L->wqkv, g->qkv, s));
        const kb_rope_args ra = {n, H, KV, hd, 0, g->max_len, g->qkv, g->inv_freq, NULL, g->q,
                                 g->kcache + l * kv_layer, g->vcache + l * kv_layer};
        KB_TRY(kb_call_launch(&g->rotary, &ra, s));
        kb_attention_args a = g->prefill_attn.args;
        a.k = g->kcache + l * kv_layer, a.v = g->vcache + l * kv_layer;
        KB_TRY(g->prefill_attn.v->launch(&a, g->prefill_attn.ctx, s));
        const kb_merge_heads_args mh = {1, H, n, hd, g->o, g->om};
        KB_TRY(kb_call_launch(&g->merge, &mh, s));
        KB_TRY(lt(g, &g->p_o, g->om, L->wo, g->x, s));
        KB_TRY(norm(g, g->x, L->mlp_norm, n, g->h, s));
        KB_TRY(lt(g, &g->p_gu, g->h, L->wgu, g->gu, s));
        kb_swiglu_args sw = {n, c->d_ff, {NULL}, {NULL}};
        sw.gu16 = (const uint16_t *)g->gu, sw.h16 = (uint16_t *)g->h;
        KB_TRY(kb_call_launch(&g->swiglu, &sw, s));
        KB_TRY(lt(g, &g->p_d, g->h, L->wd, g->x, s));
    }
    return head_and_pick(g, g->x + (size_t)(n - 1) * d, n + 1, s);
}

extern "C" const char *kb_llama_gpu_decode(kb_llama_gpu *g, cudaStream_t s)
{
    const kb_llama_config *c = &g->c;
    const int d = c->d_model, qd = c->heads * c->head_dim;
    const int64_t kv_layer = (int64_t)c->kv_heads * g->max_len * c->head_dim;
    KB_TRY(embed(g, g->state + ST_TOK, 1, s));
    for (int l = 0; l < c->layers; ++l) {
        const Layer *L = &g->layers[l];
        GemvArgs a = gemv_args(L->wqkv, qd + 2 * c->kv_heads * c->head_dim, d);
        a.x = g->x, a.norm = L->attn_norm, a.eps = (float)c->eps;
        a.q = g->q, a.kc = g->kcache + l * kv_layer, a.vc = g->vcache + l * kv_layer;
        a.H = c->heads, a.KV = c->kv_heads, a.hd = c->head_dim, a.max_len = g->max_len;
        a.state = g->state, a.inv_freq = g->inv_freq;
        KB_TRY(gemv<GEMV_QKV>(g, a, a.N / 2, s));
        kb_attention_args at = g->decode_attn.args;
        at.k = a.kc, at.v = a.vc;
        KB_TRY(g->decode_attn.v->launch(&at, g->decode_attn.ctx, s));
        a = gemv_args(L->wo, d, qd);
        a.xb = g->o, a.y = g->x;
        KB_TRY(gemv<GEMV_RESIDUAL>(g, a, (d + 1) / 2, s));
        a = gemv_args(L->wgu, c->d_ff, d);
        a.x = g->x, a.norm = L->mlp_norm, a.eps = (float)c->eps, a.yb = g->h;
        KB_TRY(gemv<GEMV_SWIGLU>(g, a, c->d_ff, s));
        a = gemv_args(L->wd, d, c->d_ff);
        a.xb = g->h, a.y = g->x;
        KB_TRY(gemv<GEMV_RESIDUAL>(g, a, (d + 1) / 2, s));
    }
    return head_and_pick(g, g->x, -1, s);
}

extern "C" const char *kb_llama_gpu_results(kb_llama_gpu *g, int n, int *tokens, float *logits)
{
    if (n > g->max_tokens)
        return "more tokens asked for than were set up";
    KB_CUDA_TRY(cudaMemcpy(tokens, g->out, sizeof(int) * n, cudaMemcpyDeviceToHost));
    if (logits && g->keep)
        KB_CUDA_TRY(cudaMemcpy(logits, g->keep, sizeof(float) * n * g->c.vocab, cudaMemcpyDeviceToHost));
    return NULL;
}

extern "C" void kb_llama_gpu_keep_logits(kb_llama_gpu *g, int on) { g->keeping = on && g->keep; }

extern "C" int kb_llama_gpu_logits_finite(kb_llama_gpu *g)
{
    float *h = (float *)malloc(sizeof(float) * g->c.vocab);
    int ok = h && cudaMemcpy(h, g->logits, sizeof(float) * g->c.vocab, cudaMemcpyDeviceToHost) == cudaSuccess;
    for (int i = 0; ok && i < g->c.vocab; ++i)
        ok = isfinite(h[i]);
    free(h);
    return ok;
}
