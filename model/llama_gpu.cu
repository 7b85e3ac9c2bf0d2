/* The Llama-style model in bf16 on the GPU (model/llama_gpu.h), composed
 * from variants of the op tables, found by name and set up once
 * (setup_kernels; docs/model.md lists them).
 *
 * Decode is memory-bound: at batch 1 each weight is read once per token, so
 * the time is the bytes of the weights and the KV cache over the copy
 * bandwidth.  Every linear layer is one matrix-vector kernel, the `gemv`
 * variant of its op (kernels/gemv.cuh): a block stages its input vector in
 * shared memory as bf16 (RMSNorm fused in front when the input is the
 * residual stream), then each warp streams two weight rows at a time,
 * chosen so that the epilogue has what it needs.
 *
 *   embedding  gather block (the token from the decode state)
 *   per layer: q, k, v  qkv_rope gemv: RMSNorm, the product, RoPE, the cache
 *              o        attention flash_decode(q, cache)
 *              x       += linear gemv (Wo)
 *              h        gate_up gemv: RMSNorm, the product, SwiGLU
 *              x       += linear gemv (Wdown)
 *   logits, pick: lm_head gemv: RMSNorm, the product, the greedy pick
 *
 * 5 kernels a layer and 2 more, one graph per step; the GEMVs launch as
 * programmatic dependents (sm_90 on), so one kernel's start overlaps the
 * last one's tail, and the embedding starts that chain.
 *
 * Prefill: the same steps over n tokens: rmsnorm block, cuBLASLt products
 * (bf16 in, fp32 accumulation; x += in the epilogue for Wo and Wdown),
 * rope sincos into the cache, flash_wgmma (causal) over it (off Hopper,
 * or at a head dim flash_wgmma does not take, flash_mma, the rung it
 * builds on: pick_attention), merge_heads vectorized and swiglu
 * vectorized; the last row's LM head is lm_head gemv's. */
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
#include "model/kernel_call.h"
#include "ops/decode.h"
#include "ops/gather.h"
#include "ops/heads.h"
#include "ops/linear.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "model/llama_gpu.h"

typedef __nv_bfloat16 bf16;

#define MAX_HEAD_DIM 128

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
    int max_len, max_prefill, max_tokens;
    bf16 *embed, *lm_head;
    Layer *layers;
    float *final_norm, *inv_freq;
    bf16 *kcache, *vcache;                     /* [layer][KV][max_len][hd] */
    float *x, *logits, *keep;                  /* [max_prefill, d], [V], [max_tokens, V] or NULL */
    int keeping;                               /* launches from now on keep the logits */
    bf16 *h, *qkv, *gu, *q, *o, *om;           /* prefill (and decode) activations */
    int *state, *out, *ids;                    /* state: the decode state (ops/decode.h) */
    cublasLtHandle_t lt;
    void *workspace;
    int planned;                               /* the n of the plans below; 0 when none */
    kb_lt_product p_qkv, p_o, p_gu, p_d;
    Attn decode_attn;                          /* flash_decode, set up once: Tk is the cache's length */
    Attn prefill_attn;                         /* flash_mma, set up per plan */
    /* The op tables' variants, set up once (setup_kernels): the prefill's
     * embedding, norm, RoPE, SwiGLU and head merge, the decode's GEMVs. */
    kb_call embedding, norm, rotary, swiglu, merge, step_qkv, step_residual, step_gate_up, step_head;
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

/* RoPE's frequencies (kb_llama_inv_freq: rope_scaling's applied), in
 * double on the host. */
static const char *upload_inv_freq(kb_llama_gpu *g)
{
    const int half = g->c.head_dim / 2;
    float f[MAX_HEAD_DIM / 2];
    for (int i = 0; i < half; ++i)
        f[i] = (float)kb_llama_inv_freq(&g->c, i);
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
    /* The GEMVs set up at the widest input, whose vector each block holds:
     * one shared-memory size and one occupancy for all four kernels. */
    const int qd = c->heads * c->head_dim, ff_or_d = c->d_ff > c->d_model ? c->d_ff : c->d_model;
    const int widest = ff_or_d > qd ? ff_or_d : qd;
    const kb_qkv_rope_args qkv = {widest, c->heads, c->kv_heads, c->head_dim, g->max_len};
    const kb_linear_args residual = {1, c->d_model, widest};
    const kb_gate_up_args gate_up = {c->d_ff, widest};
    const kb_lm_head_args head = {c->vocab, widest};
    KB_TRY(kb_call_setup(&g->step_qkv, "qkv_rope", "gemv", KB_BF16, &qkv));
    KB_TRY(kb_call_setup(&g->step_residual, "linear", "gemv", KB_BF16, &residual));
    KB_TRY(kb_call_setup(&g->step_gate_up, "gate_up", "gemv", KB_BF16, &gate_up));
    return kb_call_setup(&g->step_head, "lm_head", "gemv", KB_BF16, &head);
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
    KB_TRY(dalloc(&g->state, KB_DECODE_STATE));
    KB_TRY(dalloc(&g->out, g->max_tokens));
    KB_TRY(dalloc(&g->ids, n));
    if (g->keeping)
        KB_TRY(dalloc(&g->keep, (int64_t)g->max_tokens * c->vocab));
    KB_CUDA_TRY(cudaMemset(g->state, 0, sizeof(int) * KB_DECODE_STATE));
    /* The cache past what a run has written is read by no kernel, but start it finite. */
    KB_CUDA_TRY(cudaMemset(g->kcache, 0, sizeof(bf16) * cache));
    KB_CUDA_TRY(cudaMemset(g->vcache, 0, sizeof(bf16) * cache));
    return NULL;
}

static const char *create(kb_llama_gpu *g, const kb_llama_model *m)
{
    const kb_llama_config *c = &g->c;
    const int64_t vd = (int64_t)c->vocab * c->d_model;
    int dev = 0, major = 0, minor = 0;
    KB_CUDA_TRY(cudaGetDevice(&dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
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
     * which state[KB_DECODE_LEN] keys hold data at each step. */
    g->decode_attn.args = kb_attention_args{1, c->heads, 1, g->max_len, c->head_dim, 0,
                                            (float)(1.0 / sqrt((double)c->head_dim)), g->q, g->kcache, g->vcache, g->o,
                                            c->kv_heads, (int64_t)g->max_len * c->head_dim, g->state + KB_DECODE_LEN};
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
    for (kb_call *k : {&g->embedding, &g->norm, &g->rotary, &g->swiglu, &g->merge, &g->step_qkv, &g->step_residual,
                       &g->step_gate_up, &g->step_head})
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
                    g->out, g->ids, g->workspace};
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

/* Logits of the residual row x_last and the greedy pick (the LM head's
 * GEMV: every step, a prefill's last row too). */
static const char *head_and_pick(kb_llama_gpu *g, const float *x_last, int set_len, cudaStream_t s)
{
    const kb_llama_config *c = &g->c;
    const kb_lm_head_args a = {c->vocab, c->d_model, (float)c->eps, x_last, g->final_norm,
                               (const uint16_t *)g->lm_head, g->logits, g->state, g->out, g->max_tokens, set_len,
                               g->keeping ? g->keep : NULL};
    return kb_call_launch(&g->step_head, &a, s);
}

/* The residual stream x += W in, a decode step's o_proj or down_proj. */
static const char *residual(const kb_llama_gpu *g, const bf16 *in, const bf16 *w, int N, int K, cudaStream_t s)
{
    const kb_linear_args a = {1, N, K, (const uint16_t *)in, (const uint16_t *)w, g->x};
    return kb_call_launch(&g->step_residual, &a, s);
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
    KB_CUDA_TRY(cudaMemsetAsync(g->state + KB_DECODE_STEP, 0, sizeof(int), s));
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
    KB_TRY(embed(g, g->state + KB_DECODE_TOKEN, 1, s));
    for (int l = 0; l < c->layers; ++l) {
        const Layer *L = &g->layers[l];
        bf16 *kc = g->kcache + l * kv_layer, *vc = g->vcache + l * kv_layer;
        const kb_qkv_rope_args qkv = {d, c->heads, c->kv_heads, c->head_dim, g->max_len, (float)c->eps, g->x,
                                      L->attn_norm, (const uint16_t *)L->wqkv, g->inv_freq, g->state + KB_DECODE_LEN,
                                      (uint16_t *)g->q, (uint16_t *)kc, (uint16_t *)vc};
        KB_TRY(kb_call_launch(&g->step_qkv, &qkv, s));
        kb_attention_args at = g->decode_attn.args;
        at.k = kc, at.v = vc;
        KB_TRY(g->decode_attn.v->launch(&at, g->decode_attn.ctx, s));
        KB_TRY(residual(g, g->o, L->wo, d, qd, s));
        const kb_gate_up_args gu = {c->d_ff, d, (float)c->eps, g->x, L->mlp_norm, (const uint16_t *)L->wgu,
                                    (uint16_t *)g->h};
        KB_TRY(kb_call_launch(&g->step_gate_up, &gu, s));
        KB_TRY(residual(g, g->h, L->wd, d, c->d_ff, s));
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
