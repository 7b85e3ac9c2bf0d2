/* The modern stage (model/stages.h): the Llama decoder of reference/llama.h
 * in fp32 on the GPU, the plain composition of kbench's pieces with a KV
 * cache.  Per layer, over n new tokens at positions p0.. (a prefill: p0 = 0,
 * n = the prompt; a decode step: n = 1 at the cache's length):
 *
 *   h   = RMSNorm(x) * input_layernorm     the rmsnorm op's `vectorized`
 *   qkv = h [Wq; Wk; Wv]^T                 one cuBLASLt SGEMM
 *   q, and k, v into the cache             the rope op's `table` (HF's
 *                                          rotate_half, from a cos/sin table)
 *   o   = attention(q, k, v)               the attention op's `flash`,
 *                                          causal (see below)
 *   x  += merge(o) Wo^T                    merge_heads `naive`, SGEMM with
 *                                          the residual as its C (beta = 1)
 *   h   = RMSNorm(x) * post_attention_layernorm
 *   x  += (silu(h Wg^T) * (h Wu^T)) Wd^T   one SGEMM for gate and up,
 *                                          swiglu `naive`, SGEMM (beta = 1)
 *
 * then the final RMSNorm of the last position, the LM head (one SGEMM on
 * one row) and the greedy pick on the device (argmax `block`), into the id
 * list the next step embeds from (embed_t `naive`).  flash reads K and V as (Hkv, Tk, D) with no stride
 * of its own (its kv_stride and tk_len are flash_mma's and flash_decode's),
 * while the cache is (KV, max_len, hd) per layer so that it can grow.  A
 * prefill's keys are its own tokens: they go to a (KV, n, hd) copy that one
 * launch reads, then into the cache (two strided copies).  A decode step
 * reads the cache: a launch per KV head, its group of query heads over
 * that head's Tk cached rows.  The cache layout and the step structure
 * follow model/llama_gpu.cu; nothing here is fused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "ops/rmsnorm.h"
#include "ops/heads.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "model/llama.h"
#include "model/stage_gpu.h"


#define ATTENTION_VARIANT "flash"
#define NORM_VARIANT "vectorized"
#define SWIGLU_VARIANT "naive"
#define MERGE_VARIANT "naive"
#define ROPE_VARIANT "table"

/* ---- the stage's state -------------------------------------------------------------- */

namespace {

struct Layer {
    float *attn_norm, *wqkv, *wo, *mlp_norm, *wgu, *wd; /* products' W: [in x out] */
};
/* The four products of a layer at M rows (0: none planned). */
struct Products {
    int M;
    kb_lt_product qkv, o, gu, down;
};

struct Modern {
    kb_stage_shape sh;
    kb_llama_model m;
    int max_len, max_n; /* cache positions; the most tokens one forward runs */
    Layer *layers;
    float *emb_t, *head_t, *final_norm; /* head_t == emb_t when tied */
    float2 *rope;                       /* (cos, sin) of position p, pair i at p * hd/2 + i */
    float *kc, *vc, *kn, *vn; /* the cache, (layers, KV, max_len, hd); a prefill's keys, (KV, n, hd) */
    float *x, *h, *qkv, *q, *o, *om, *gu, *a, *hl, *logits;
    int *ids; /* the sequence, max_len + 1 (the last pick) */
    void *ws;
    cublasLtHandle_t lt;
    Products pre, dec;
    kb_lt_product head;
    kb_call attn, norm, rotary, swiglu, merge;
    kb_stage_ends ends; /* the embedding and the pick */
    kb_stage_mem mem;
};

}  // namespace

/* ---- weights ------------------------------------------------------------------------- */

static float *put(kb_stage_block *b, const float *src, int64_t n)
{
    float *h, *dev = kb_stage_take(b, n, &h);
    if (h)
        memcpy(h, src, sizeof(float) * n);
    return dev;
}

/* Weights [rows_k x cols] for k < parts side by side as one product's W
 * [cols x sum rows_k]: fused QKV, and gate | up. */
static float *put_side_by_side(kb_stage_block *b, int parts, const float *const *W, const int64_t *rows, int64_t cols)
{
    int64_t out = 0;
    for (int k = 0; k < parts; ++k)
        out += rows[k];
    float *h, *dev = kb_stage_take(b, out * cols, &h);
    int64_t at = 0;
    for (int k = 0; h && k < parts; at += rows[k++])
        kb_stage_transpose(h + at, out, W[k], rows[k], cols);
    return dev;
}

/* RoPE's angles in double (reference/llama.h's f_i), rounded once. */
static float2 *put_rope(kb_stage_block *b, const kb_llama_config *c, int max_len)
{
    const int half = c->head_dim / 2;
    float *h, *dev = kb_stage_take(b, (int64_t)max_len * c->head_dim, &h);
    for (int64_t p = 0; h && p < max_len; ++p)
        for (int i = 0; i < half; ++i) {
            const double angle = (double)p * kb_llama_inv_freq(c, i);
            h[(p * half + i) * 2] = (float)cos(angle);
            h[(p * half + i) * 2 + 1] = (float)sin(angle);
        }
    return (float2 *)dev;
}

static void lay_out(void *user, kb_stage_block *b)
{
    Modern *g = (Modern *)user;
    const kb_llama_config *c = &g->m.cfg;
    const int64_t d = c->d_model, ff = c->d_ff, qd = (int64_t)c->heads * c->head_dim;
    const int64_t kvd = (int64_t)c->kv_heads * c->head_dim, V = c->vocab;
    for (int l = 0; l < c->layers; ++l) {
        const kb_llama_layer *W = &g->m.layers[l];
        Layer *L = &g->layers[l];
        const float *qkv[3] = {W->wq, W->wk, W->wv}, *gu[2] = {W->w_gate, W->w_up};
        const int64_t qkv_rows[3] = {qd, kvd, kvd}, gu_rows[2] = {ff, ff};
        L->attn_norm = put(b, W->attn_norm, d);
        L->wqkv = put_side_by_side(b, 3, qkv, qkv_rows, d);
        L->wo = put_side_by_side(b, 1, &W->wo, &d, qd);
        L->mlp_norm = put(b, W->mlp_norm, d);
        L->wgu = put_side_by_side(b, 2, gu, gu_rows, d);
        L->wd = put_side_by_side(b, 1, &W->w_down, &d, ff);
    }
    g->final_norm = put(b, g->m.norm, d);
    g->emb_t = put_side_by_side(b, 1, &g->m.embed, &V, d);
    g->head_t = c->tied ? g->emb_t : put_side_by_side(b, 1, &g->m.lm_head, &V, d);
    /* Not a weight, but made once on the host as they are. */
    g->rope = put_rope(b, c, g->max_len);
}

/* ---- device set-up ------------------------------------------------------------------- */

/* A launch's shape: H query heads over Hkv KV heads, causal. */
static kb_shape attention_shape(const kb_llama_config *c, int H, int Hkv, int Tq, int Tk)
{
    kb_shape s = {};
    s.nd = 6, s.d[0] = 1, s.d[1] = H, s.d[2] = Tq, s.d[3] = Tk, s.d[4] = c->head_dim, s.d[5] = Hkv;
    s.flags = 1;
    return s;
}

/* Whether flash runs the prefill's and the decode's shapes on this GPU. */
static const char *attention_refusal(const Modern *g)
{
    static char why[192];
    const kb_op *op = kb_find_op("attention");
    const kb_variant *v = op ? kb_find_variant(op, ATTENTION_VARIANT, KB_F32) : NULL;
    int dev = 0, major = 0, minor = 0;
    KB_CUDA_TRY(cudaGetDevice(&dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    KB_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    const kb_llama_config *c = &g->m.cfg;
    const kb_shape shapes[2] = {attention_shape(c, c->heads, c->kv_heads, g->max_n, g->max_n),
                                attention_shape(c, c->heads / c->kv_heads, 1, 1, g->max_len)};
    const char *no = !v ? "not in this build" : v->min_cc > major * 10 + minor ? "needs a newer GPU" : NULL;
    for (int i = 0; !no && i < 2; ++i)
        no = v->unsupported ? v->unsupported(&shapes[i]) : NULL;
    if (!no)
        return NULL;
    snprintf(why, sizeof why, "attention %s: %s", ATTENTION_VARIANT, no);
    return why;
}

static const char *allocate(Modern *g)
{
    const kb_llama_config *c = &g->m.cfg;
    const int64_t d = c->d_model, ff = c->d_ff, n = g->max_n, qd = (int64_t)c->heads * c->head_dim;
    const int64_t kvd = (int64_t)c->kv_heads * c->head_dim, cache = (int64_t)c->layers * kvd * g->max_len;
    const kb_stage_buf bufs[] = {
        {(void **)&g->kc, 4 * cache},          {(void **)&g->vc, 4 * cache},
        {(void **)&g->kn, 4 * n * kvd},        {(void **)&g->vn, 4 * n * kvd},
        {(void **)&g->x, 4 * n * d},           {(void **)&g->h, 4 * n * d},
        {(void **)&g->qkv, 4 * n * (qd + 2 * kvd)}, {(void **)&g->q, 4 * n * qd},
        {(void **)&g->o, 4 * n * qd},          {(void **)&g->om, 4 * n * qd},
        {(void **)&g->gu, 4 * n * 2 * ff},     {(void **)&g->a, 4 * n * ff},
        {(void **)&g->hl, 4 * d},              {(void **)&g->logits, 4 * (int64_t)c->vocab},
        {(void **)&g->ids, 4 * ((int64_t)g->max_len + 1)}, {&g->ws, KB_LT_WORKSPACE_BYTES},
    };
    const int count = (int)(sizeof bufs / sizeof *bufs);
    int64_t bytes = 4 * kb_stage_count(lay_out, g);
    for (int i = 0; i < count; ++i)
        bytes += bufs[i].bytes;
    KB_TRY(kb_stage_alloc(&g->mem, bufs, count, bytes));
    return kb_stage_upload(&g->mem, lay_out, g);
}

static void destroy_products(Products *p)
{
    kb_lt_destroy(&p->qkv), kb_lt_destroy(&p->o), kb_lt_destroy(&p->gu), kb_lt_destroy(&p->down);
    p->M = 0;
}

static void tear_down(Modern *g)
{
    destroy_products(&g->pre);
    destroy_products(&g->dec);
    kb_lt_destroy(&g->head);
    kb_call_teardown(&g->attn);
    kb_call_teardown(&g->norm);
    kb_call_teardown(&g->rotary);
    kb_call_teardown(&g->swiglu);
    kb_call_teardown(&g->merge);
    kb_stage_ends_teardown(&g->ends);
    if (g->lt)
        cublasLtDestroy(g->lt);
    kb_stage_free(&g->mem);
    free(g->layers);
    kb_llama_free(&g->m);
}

/* Y (M x N) = X W, or Y += X W for a residual (beta = 1, so the add is the
 * product's own C and needs no kernel). */
static const char *product(const Modern *g, kb_lt_product *p, int M, int N, int K, const float *X, const float *W,
                           const float *Y, int residual)
{
    KB_TRY(kb_lt_plan(p, g->lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, M, N, K, CUBLASLT_EPILOGUE_DEFAULT, NULL, X, W, Y));
    p->accumulate = residual;
    return NULL;
}

/* The layer products at M rows, planned with layer 0's weights: every
 * layer's sit in 256-byte slots, so one plan serves them all. */
static const char *plan(Modern *g, Products *p, int M)
{
    if (p->M == M)
        return NULL;
    destroy_products(p);
    const kb_llama_config *c = &g->m.cfg;
    const int d = c->d_model, ff = c->d_ff, qd = c->heads * c->head_dim, kvd = c->kv_heads * c->head_dim;
    const Layer *L = &g->layers[0];
    KB_TRY(product(g, &p->qkv, M, qd + 2 * kvd, d, g->h, L->wqkv, g->qkv, 0));
    KB_TRY(product(g, &p->o, M, d, qd, g->om, L->wo, g->x, 1));
    KB_TRY(product(g, &p->gu, M, 2 * ff, d, g->h, L->wgu, g->gu, 0));
    KB_TRY(product(g, &p->down, M, d, ff, g->a, L->wd, g->x, 1));
    p->M = M;
    return NULL;
}

static const char *set_up(Modern *g)
{
    const kb_llama_config *c = &g->m.cfg;
    g->layers = (Layer *)calloc((size_t)c->layers, sizeof(Layer));
    if (!g->layers)
        return "out of host memory";
    KB_TRY(attention_refusal(g));
    KB_TRY(allocate(g));
    if (cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    kb_attention_args a = {};
    a.B = 1, a.H = c->heads / c->kv_heads, a.Tq = 1, a.Tk = 1, a.D = c->head_dim, a.Hkv = 1;
    KB_TRY(kb_call_setup(&g->attn, "attention", ATTENTION_VARIANT, KB_F32, &a));
    const kb_rmsnorm_args r = {g->max_n, c->d_model, (float)c->eps, g->x, g->final_norm, {g->h}};
    KB_TRY(kb_call_setup(&g->norm, "rmsnorm", NORM_VARIANT, KB_F32, &r));
    const kb_swiglu_args sw = {g->max_n, c->d_ff, {g->gu}, {g->a}};
    KB_TRY(kb_call_setup(&g->swiglu, "swiglu", SWIGLU_VARIANT, KB_F32, &sw));
    const kb_rope_args ro = {g->max_n, c->heads, c->kv_heads, c->head_dim, 0, g->max_len};
    KB_TRY(kb_call_setup(&g->rotary, "rope", ROPE_VARIANT, KB_F32, &ro));
    const kb_merge_heads_args mh = {1, c->heads, g->max_n, c->head_dim, g->o, g->om};
    KB_TRY(kb_call_setup(&g->merge, "merge_heads", MERGE_VARIANT, KB_F32, &mh));
    KB_TRY(kb_stage_ends_setup(&g->ends));
    KB_TRY(plan(g, &g->dec, 1));
    return kb_lt_plan(&g->head, g->lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, c->vocab, c->d_model,
                      CUBLASLT_EPILOGUE_DEFAULT, NULL, g->hl, g->head_t, g->logits);
}

/* ---- the forward ------------------------------------------------------------------- */

static const char *lt(const Modern *g, const kb_lt_product *p, const float *X, const float *W, float *Y,
                      cudaStream_t s)
{
    return kb_lt_run(p, g->lt, NULL, X, W, Y, g->ws, s);
}

static const char *norm(const Modern *g, const float *x, const float *w, int rows, float *y, cudaStream_t s)
{
    const kb_rmsnorm_args a = {rows, g->m.cfg.d_model, (float)g->m.cfg.eps, x, w, {y}};
    return g->norm.v->launch(&a, g->norm.ctx, s);
}

/* o = attention of the n new queries over `keys` positions of K and V,
 * (KV, ld, hd): one launch when ld is keys, else one per KV head. */
static const char *attend(const Modern *g, const float *K, const float *V, int64_t ld, int n, int keys,
                          cudaStream_t s)
{
    const kb_llama_config *c = &g->m.cfg;
    const int hd = c->head_dim, parts = ld == keys ? 1 : c->kv_heads, H = c->heads / parts;
    const int64_t qs = (int64_t)H * n * hd;
    for (int k = 0; k < parts; ++k) {
        kb_attention_args a = {};
        a.B = 1, a.H = H, a.Tq = n, a.Tk = keys, a.D = hd, a.causal = 1, a.Hkv = c->kv_heads / parts;
        a.scale = (float)(1.0 / sqrt((double)hd));
        a.q = g->q + k * qs, a.o = g->o + k * qs;
        a.k = K + k * ld * hd, a.v = V + k * ld * hd;
        KB_TRY(g->attn.v->launch(&a, g->attn.ctx, s));
    }
    return NULL;
}

/* A prefill's keys and values, (KV, n, hd), into the layer's cache at 0..n-1. */
static const char *keep_prefill(const Modern *g, int64_t cache, int n, cudaStream_t s)
{
    const kb_llama_config *c = &g->m.cfg;
    const size_t row = sizeof(float) * n * c->head_dim, pitch = sizeof(float) * g->max_len * c->head_dim;
    KB_CUDA_TRY(cudaMemcpy2DAsync(g->kc + cache, pitch, g->kn, row, row, c->kv_heads, cudaMemcpyDeviceToDevice, s));
    return kb_cuda_status(
        cudaMemcpy2DAsync(g->vc + cache, pitch, g->vn, row, row, c->kv_heads, cudaMemcpyDeviceToDevice, s));
}

static const char *layer(const Modern *g, const Products *p, int l, int p0, int n, int keys, cudaStream_t s)
{
    const kb_llama_config *c = &g->m.cfg;
    const int H = c->heads, KV = c->kv_heads, hd = c->head_dim;
    const int64_t cache = (int64_t)l * KV * g->max_len * hd;
    const bool prefill = p0 == 0; /* its keys are its own tokens */
    const int64_t ld = prefill ? n : g->max_len;
    float *K = prefill ? g->kn : g->kc + cache, *V = prefill ? g->vn : g->vc + cache;
    const Layer *L = &g->layers[l];
    KB_TRY(norm(g, g->x, L->attn_norm, n, g->h, s));
    KB_TRY(lt(g, &p->qkv, g->h, L->wqkv, g->qkv, s));
    const kb_rope_args ro = {n, H, KV, hd, p0, ld, g->qkv, NULL, (const float *)g->rope, g->q, K, V};
    KB_TRY(kb_call_launch(&g->rotary, &ro, s));
    KB_TRY(attend(g, K, V, ld, n, keys, s));
    if (prefill)
        KB_TRY(keep_prefill(g, cache, n, s));
    const kb_merge_heads_args mh = {1, H, n, hd, g->o, g->om};
    KB_TRY(kb_call_launch(&g->merge, &mh, s));
    KB_TRY(lt(g, &p->o, g->om, L->wo, g->x, s));
    KB_TRY(norm(g, g->x, L->mlp_norm, n, g->h, s));
    KB_TRY(lt(g, &p->gu, g->h, L->wgu, g->gu, s));
    const kb_swiglu_args sw = {n, c->d_ff, {g->gu}, {g->a}};
    KB_TRY(kb_call_launch(&g->swiglu, &sw, s));
    return lt(g, &p->down, g->a, L->wd, g->x, s);
}

/* ids[p0 .. p0 + n) at positions p0.. through the model (products planned
 * at n rows), their keys and values into the cache, attention over `keys`
 * positions (p0 + n but under the planted fault), the last position's
 * logits and the greedy pick into ids[p0 + n]. */
static const char *forward(const Modern *g, const Products *p, int p0, int n, int keys, cudaStream_t s)
{
    const kb_llama_config *c = &g->m.cfg;
    KB_TRY(kb_stage_embed(&g->ends, g->ids + p0, n, g->emb_t, c->vocab, c->d_model, 1.0f, NULL, g->x, s));
    for (int l = 0; l < c->layers; ++l)
        KB_TRY(layer(g, p, l, p0, n, keys, s));
    KB_TRY(norm(g, g->x + (size_t)(n - 1) * c->d_model, g->final_norm, 1, g->hl, s));
    KB_TRY(lt(g, &g->head, g->hl, g->head_t, g->logits, s));
    return kb_stage_argmax(&g->ends, g->logits, c->vocab, g->ids + p0 + n, s);
}

/* A decode step: the token at position p0 against the cache. */
static const char *step(const Modern *g, int p0, cudaStream_t s)
{
    return forward(g, &g->dec, p0, 1, kb_stage_fault == KB_STAGE_FAULT_SHORT ? p0 : p0 + 1, s);
}

static const char *run_prefill(void *user, cudaStream_t stream)
{
    const Modern *g = (const Modern *)user;
    return forward(g, &g->pre, 0, g->sh.prompt, g->sh.prompt, stream);
}

static const char *run_decode(void *user, cudaStream_t stream)
{
    const Modern *g = (const Modern *)user;
    for (int i = 0; i < g->sh.tokens; ++i)
        KB_TRY(step(g, g->sh.prompt + i, stream));
    return NULL;
}

/* ---- the check and the counts -------------------------------------------------------- */

/* The GPU's logits of a prefill over ids[0..P) and KB_STAGE_CHECK_STEPS
 * decode steps into got; ids gets the tokens it picked. */
static const char *gpu_steps(Modern *g, int P, int *ids, float *got, cudaStream_t s)
{
    const int S = KB_STAGE_CHECK_STEPS;
    const size_t V = (size_t)g->m.cfg.vocab;
    KB_TRY(plan(g, &g->pre, P));
    KB_CUDA_TRY(cudaMemcpyAsync(g->ids, ids, sizeof(int) * P, cudaMemcpyHostToDevice, s));
    for (int k = 0; k <= S; ++k) {
        KB_TRY(k ? step(g, P + k - 1, s) : forward(g, &g->pre, 0, P, P, s));
        KB_CUDA_TRY(cudaMemcpyAsync(got + k * V, g->logits, sizeof(float) * V, cudaMemcpyDeviceToHost, s));
    }
    KB_CUDA_TRY(cudaMemcpyAsync(ids, g->ids, sizeof(int) * (P + S), cudaMemcpyDeviceToHost, s));
    return kb_cuda_status(cudaStreamSynchronize(s));
}

/* The reference fed the GPU's tokens, step by step with its own cache. */
static const char *reference_steps(const Modern *g, int P, const int *ids, float *want)
{
    const int S = KB_STAGE_CHECK_STEPS;
    const size_t V = (size_t)g->m.cfg.vocab;
    kb_llama_cache c;
    if (kb_llama_cache_init(&c, &g->m.cfg, P + S) != 0)
        return "out of host memory for the reference's cache";
    int bad = 0;
    for (int k = 0; !bad && k <= S; ++k)
        bad = k ? kb_llama_forward(&g->m, &c, ids + P + k - 1, 1, want + k * V, NULL)
                : kb_llama_forward(&g->m, &c, ids, P, want, NULL);
    kb_llama_cache_free(&c);
    return bad ? "the reference forward failed (out of host memory)" : NULL;
}

static const char *check(Modern *g, cudaStream_t s, double *worst)
{
    const int P = kb_stage_check_prompt(&g->sh), S = KB_STAGE_CHECK_STEPS;
    const size_t V = (size_t)g->m.cfg.vocab;
    int *ids = (int *)malloc(sizeof(int) * (P + S));
    float *got = (float *)malloc(sizeof(float) * 2 * (S + 1) * V), *want = got ? got + (S + 1) * V : NULL;
    const char *err = !ids || !got ? "out of host memory for the check" : NULL;
    if (!err) {
        kb_stage_prompt(&g->sh, ids, P);
        err = gpu_steps(g, P, ids, got, s);
    }
    if (!err)
        err = reference_steps(g, P, ids, want);
    *worst = 0;
    for (int k = 0; !err && k <= S; ++k)
        *worst = fmax(*worst, kb_stage_rel_l2(got + k * V, want + k * V, (int64_t)V));
    free(ids);
    free(got);
    return err;
}

/* FLOPs of n new tokens over p0 + n positions: the products, attention at
 * the attention op's count (Tq Tk - Tq^2/2 pairs a head), the head on one row. */
static double forward_flops(const kb_llama_config *c, double p0, double n)
{
    const double d = c->d_model, ff = c->d_ff, qd = (double)c->heads * c->head_dim;
    const double kvd = (double)c->kv_heads * c->head_dim, keys = p0 + n;
    const double products = 2 * n * (d * (qd + 2 * kvd) + qd * d + 3 * d * ff);
    const double attention = 4.0 * c->heads * c->head_dim * (n * keys - n * n / 2);
    return c->layers * (products + attention) + 2 * d * c->vocab;
}

static void count(const Modern *g, kb_stage_result *r)
{
    const kb_llama_config *c = &g->m.cfg;
    const int P = g->sh.prompt, T = g->sh.tokens;
    r->prefill_flops = forward_flops(c, 0, P);
    r->decode_flops = 0;
    for (int i = 0; i < T; ++i)
        r->decode_flops += forward_flops(c, P + i, 1) / T;
    /* Every weight once, and K and V of every layer at the mean context of
     * the timed steps (P + 1 .. P + T keys). */
    const double context = P + (T + 1) / 2.0;
    const double kv = 2.0 * c->layers * c->kv_heads * c->head_dim * context;
    r->decode_bytes = 4 * ((double)kb_llama_weight_count(c) + kv);
}

/* ---- the stage ------------------------------------------------------------------------ */

static const char *model(Modern *g, char *err, size_t errlen)
{
    const kb_stage_shape *sh = &g->sh;
    if (sh->prompt < 1 || sh->tokens < 1 || sh->heads < 1 || sh->kv_heads < 1)
        return "prompt, tokens, heads and kv_heads must be at least 1";
    if (sh->d_model % sh->heads)
        return "heads must divide d_model";
    if ((int64_t)sh->prompt + sh->tokens + KB_STAGE_CHECK_STEPS > (1 << 24))
        return "prompt + tokens over 2^24";
    /* SmolLM2's eps and rope_theta. */
    const kb_llama_config c = {sh->d_model, sh->d_ff, sh->layers, sh->heads, sh->kv_heads, sh->d_model / sh->heads,
                               sh->vocab, g->max_len, sh->tied, 1e-5, 100000.0};
    if (kb_llama_config_check(&c, "the shape", err, errlen) != 0)
        return err;
    /* The weights alone must fit the device before the host makes them. */
    KB_TRY(kb_stage_alloc(&g->mem, NULL, 0, 4 * kb_llama_weight_count(&c)));
    return kb_llama_init_random(&g->m, &c, sh->seed) ? "out of host memory for the weights" : NULL;
}

static const char *measure(Modern *g, cudaStream_t s, const kb_time_opts *timing, kb_stage_result *r)
{
    double worst;
    KB_TRY(set_up(g));
    KB_TRY(check(g, s, &worst));
    kb_stage_checked(r, worst);
    int *ids = (int *)malloc(sizeof(int) * g->sh.prompt);
    if (!ids)
        return "out of host memory for the prompt";
    kb_stage_prompt(&g->sh, ids, g->sh.prompt);
    const cudaError_t e = cudaMemcpy(g->ids, ids, sizeof(int) * g->sh.prompt, cudaMemcpyHostToDevice);
    free(ids);
    KB_CUDA_TRY(e);
    KB_TRY(plan(g, &g->pre, g->sh.prompt));
    /* The prefill first: it fills the cache the decode steps read. */
    KB_TRY(kb_stage_time(timing, run_prefill, g, s, 1, &r->prefill));
    KB_TRY(kb_stage_time(timing, run_decode, g, s, g->sh.tokens, &r->decode));
    count(g, r);
    snprintf(r->how, sizeof r->how, "KV cache, one token a step");
    return NULL;
}

extern "C" int kb_stage_modern(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                               size_t errlen)
{
    Modern *g = (Modern *)calloc(1, sizeof *g);
    char line[256] = "";
    memset(r, 0, sizeof *r);
    if (!g) {
        snprintf(err, errlen, "modern: out of host memory");
        return -1;
    }
    g->sh = *shape;
    const int checked = kb_stage_check_prompt(shape) + KB_STAGE_CHECK_STEPS;
    r->checked_tokens = checked;
    g->max_n = shape->prompt;
    g->max_len = shape->prompt + shape->tokens > checked ? shape->prompt + shape->tokens : checked;
    cudaStream_t s = NULL;
    const char *why = model(g, line, sizeof line);
    if (!why)
        why = kb_cuda_status(cudaStreamCreate(&s));
    if (!why)
        why = measure(g, s, timing, r);
    if (s)
        cudaStreamDestroy(s);
    tear_down(g);
    free(g);
    if (why)
        snprintf(err, errlen, "modern: %s", why);
    return why ? -1 : 0;
}
