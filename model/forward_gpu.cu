/* The transformer's GPU forward (model/gpu.h).
 *
 * One encoder layer on n = B*T tokens of width d:
 *   qkv  = x Wqkv + b            cuBLASLt, bias in the epilogue      n x 3d
 *   q, k, v heads                split_heads: (B, T, 3, H, dh) -> 3 x (B, H, T, dh)
 *   o    = attention(q, k, v)    an attention variant (default flash)
 *   cat  = merge_heads(o)        (B, H, T, dh) -> n x d
 *   x    = LN1(x + cat Wo + bo)  cuBLASLt, then an add_layernorm variant (fused)
 *   x    = LN2(x + relu(x W1 + b1) W2 + b2)
 *                                cuBLASLt RELU_BIAS and BIAS epilogues,
 *                                then add_layernorm again
 * A decoder layer adds cross-attention: q from the decoder, k and v from
 * the memory (two products over different token counts).  seq2seq ends
 * each stack in a layernorm variant (welford).  The variants come from the
 * op tables by name (kb_tf_kernels), each set up once per shape it runs at
 * before anything is timed or captured, its context kept and passed to
 * every launch, as the harness does.
 *
 * Weights are uploaded once, in the layout the products read: a PyTorch
 * Linear weight [out x in] becomes W^T [in x out] row-major (fp32), or the
 * stacked [Wh; Wl; Wh] [3 in x out] for 3xtf32, each slot 256-byte aligned
 * so one cuBLASLt plan per (M, N, K, epilogue) serves every layer.
 *
 * Prediction.  At B=32, T=128, d=512, h=8, ff=2048 the products are 96% of
 * an encoder layer's 26.8 GFLOP.  fp32: cuBLASLt SGEMM ran the ffn op's
 * 4096x512x2048 at 46 TFLOP/s, so ~0.60 ms for the products and ~0.7 ms a
 * layer, level with PyTorch eager (0.70-0.83 ms on this H100).  3xtf32:
 * three times the FLOPs at the tf32 tensor rate (~400 TFLOP/s measured for
 * bf16/2), ~0.2-0.3 ms, plus the splits' traffic (each product's input
 * written three times): ~1.5x over fp32.  CUDA graphs save the launch gaps
 * of ~15 kernels a layer: a few percent at these sizes.
 * Measured on H100 (results/h100/kbench-20261127-195738.csv, cold L2,
 * encoder and decoder phases, graph, default kernels):
 *   encoder layer  fp32 0.697 ms, 3xtf32 0.443 ms (PyTorch eager 0.869)
 *   decoder layer  fp32 0.998 ms, 3xtf32 0.670 ms (PyTorch eager 1.526)
 *   seq2seq 6+6    fp32 10.08 ms, 3xtf32 6.57 ms  (PyTorch eager 12.72)
 * Plain stream launches are 1-5% slower than the graphs.
 * Relative L2 error against the double reference: fp32 1.7e-7 to 4.6e-7,
 * 3xtf32 5.9e-6 to 1.8e-5: larger than the dropped tail term predicts,
 * so the tensor cores' own accumulation likely costs more than the split.
 * Gap to the limit: 3xtf32's encoder layer runs at 61 TFLOP/s of model
 * FLOPs; its 80 GFLOP of tf32 products alone need ~0.2 ms at the tensor
 * ceiling, the rest is the split, head split/merge, attention and norm
 * kernels, each a pass over the activations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cublasLt.h>
#include "ops/add_layernorm.h"
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "ops/layernorm.h"
#include "kernels/lt_gemm.h"
#include "harness/harness.h"
#include "model/gpu.h"
#include "model/kernel_call.h"
#include "ops/heads.h"
#include "ops/split_tf32.h"


/* ---- weights on the device ---------------------------------------------------- */

namespace {

struct Linear {
    const float *w, *b;
    int in, out;
};
struct Attn {
    Linear qkv, q, kv, out;  /* self-attention uses qkv; cross-attention q and kv */
};
struct Norm {
    const float *g, *b;
};
struct Layer {
    Attn self, cross;
    Linear ff1, ff2;
    Norm n1, n2, n3;
};
/* One call site of a table variant: the variant and the context its setup
 * made for the shape of that site. */
struct Call {
    const kb_variant *v;
    void *ctx;
    bool ready; /* set up, so torn down at the end */
};
struct Plan {
    int M, N, K;
    cublasLtEpilogue_t epi;
    kb_lt_product product;
};

constexpr int kMaxPlans = 16;
constexpr int kMaxBuffers = 24;

/* Host-side staging of the device weight block: every tensor gets a
 * 256-byte-aligned slot, written on the host, then copied up in one go. */
struct Carver {
    float *host;
    float *dev;
    int64_t used; /* floats */
};

}  // namespace

struct kb_tf_gpu {
    kb_tf_config cfg;
    kb_tf_mode mode;
    kb_tf_gemm gemm;
    int B, Ts, Tt;
    int max_Ts, max_Tt; /* as created: kb_tf_gpu_set_tokens runs fewer */
    cublasLtHandle_t lt;
    void *workspace;
    float *weights;
    Layer *enc, *dec;
    Norm enc_norm, dec_norm;
    /* Activations.  x[0], x[1] alternate as a stack's running activation;
     * stack is the last layer's output where a final norm follows. */
    float *src, *tgt, *out, *mem, *x[2], *stack, *qkv, *heads[3], *o_heads, *cat, *proj, *sum, *hidden, *split;
    void *buffers[kMaxBuffers];
    size_t buffer_bytes[kMaxBuffers];
    int nbuffers;
    Plan plans[kMaxPlans];
    int nplans;
    /* Attention over the source, over the target (its mask), and across;
     * the residual norms over source and target tokens; the final norms. */
    Call attn_src, attn_tgt, attn_cross, add_src, add_tgt, norm_src, norm_tgt;
    kb_call to_heads, from_heads; /* split_heads and merge_heads around attention */
    kb_call split_tf32;           /* the 3xtf32 path's activations */
};

static int64_t slot_floats(int64_t n) { return (n + 63) / 64 * 64; }

static float *carve(Carver *cv, int64_t n, float **host)
{
    *host = cv->host + cv->used;
    float *d = cv->dev + cv->used;
    cv->used += slot_floats(n);
    return d;
}

static float tf32_round(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u = (u + 0xFFFu + ((u >> 13) & 1u)) & ~0x1FFFu; /* nearest, ties to even */
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Rows [row0, row0 + out) of a PyTorch weight W [* x in] as a product
 * operand: W^T [in x out], or [Wh; Wl; Wh] [3 in x out] for 3xtf32. */
static Linear put_linear(Carver *cv, kb_tf_gemm gemm, const float *W, const float *bias, int row0, int out,
                         int in)
{
    const int parts = gemm == KB_TF_GEMM_3XTF32 ? 3 : 1;
    float *hw, *hb;
    Linear l = {carve(cv, (int64_t)parts * in * out, &hw), carve(cv, out, &hb), in, out};
    for (int o = 0; o < out; ++o) {
        for (int k = 0; k < in; ++k) {
            const float v = W[(int64_t)(row0 + o) * in + k];
            if (parts == 1) {
                hw[(int64_t)k * out + o] = v;
                continue;
            }
            const float h = tf32_round(v);
            hw[(int64_t)k * out + o] = h;
            hw[(int64_t)(in + k) * out + o] = v - h;
            hw[(int64_t)(2 * in + k) * out + o] = h;
        }
        hb[o] = bias[row0 + o];
    }
    return l;
}

static Norm put_norm(Carver *cv, const kb_tf_norm *n, int d)
{
    float *hg, *hb;
    Norm r = {carve(cv, d, &hg), carve(cv, d, &hb)};
    memcpy(hg, n->w, sizeof(float) * d);
    memcpy(hb, n->b, sizeof(float) * d);
    return r;
}

static Attn put_attn(Carver *cv, kb_tf_gemm gemm, const kb_tf_attn *a, int d, int cross)
{
    Attn r = {};
    if (cross) {
        r.q = put_linear(cv, gemm, a->in_w, a->in_b, 0, d, d);
        r.kv = put_linear(cv, gemm, a->in_w, a->in_b, d, 2 * d, d);
    } else
        r.qkv = put_linear(cv, gemm, a->in_w, a->in_b, 0, 3 * d, d);
    r.out = put_linear(cv, gemm, a->out_w, a->out_b, 0, d, d);
    return r;
}

static void put_layer(Carver *cv, kb_tf_gemm gemm, const kb_tf_layer *L, const kb_tf_config *c, int decoder,
                      Layer *out)
{
    const int d = c->d_model;
    out->self = put_attn(cv, gemm, &L->self_attn, d, 0);
    if (decoder)
        out->cross = put_attn(cv, gemm, &L->cross_attn, d, 1);
    out->ff1 = put_linear(cv, gemm, L->w1, L->b1, 0, c->d_ff, d);
    out->ff2 = put_linear(cv, gemm, L->w2, L->b2, 0, d, c->d_ff);
    out->n1 = put_norm(cv, &L->norm1, d);
    out->n2 = put_norm(cv, &L->norm2, d);
    if (decoder)
        out->n3 = put_norm(cv, &L->norm3, d);
}

/* Lay out every weight; with cv->host NULL this only counts. */
static void put_weights(kb_tf_gpu *g, const kb_tf_model *m, Carver *cv)
{
    const kb_tf_config *c = &m->cfg;
    for (int l = 0; l < c->enc_layers && g->mode != KB_TF_DECODER; ++l)
        put_layer(cv, g->gemm, &m->enc[l], c, 0, &g->enc[l]);
    for (int l = 0; l < c->dec_layers && g->mode != KB_TF_ENCODER; ++l)
        put_layer(cv, g->gemm, &m->dec[l], c, 1, &g->dec[l]);
    if (g->mode == KB_TF_SEQ2SEQ) {
        g->enc_norm = put_norm(cv, &m->enc_norm, c->d_model);
        g->dec_norm = put_norm(cv, &m->dec_norm, c->d_model);
    }
}

static const char *upload_weights(kb_tf_gpu *g, const kb_tf_model *m)
{
    /* A bound on the block: every weight (x3 for 3xtf32) plus a slot's
     * padding for each of at most 24 tensors a layer. */
    const int64_t parts = g->gemm == KB_TF_GEMM_3XTF32 ? 3 : 1;
    const int64_t tensors = 24LL * (m->cfg.enc_layers + m->cfg.dec_layers) + 8;
    const int64_t cap = parts * kb_tf_weight_count(&m->cfg) + 64 * tensors;
    Carver cv = {(float *)calloc((size_t)cap, sizeof(float)), NULL, 0};
    if (!cv.host)
        return "out of host memory for the weights";
    cudaError_t e = cudaMalloc(&g->weights, (size_t)cap * sizeof(float));
    if (e != cudaSuccess) {
        free(cv.host);
        return e == cudaErrorMemoryAllocation ? "out of device memory for the weights" : cudaGetErrorString(e);
    }
    cv.dev = g->weights;
    put_weights(g, m, &cv);
    e = cudaMemcpy(g->weights, cv.host, (size_t)cv.used * sizeof(float), cudaMemcpyHostToDevice);
    free(cv.host);
    return kb_cuda_status(e);
}

/* ---- activations -------------------------------------------------------------- */

static const char *alloc(kb_tf_gpu *g, float **p, int64_t floats)
{
    const size_t bytes = (size_t)floats * sizeof(float);
    cudaError_t e = cudaMalloc((void **)p, bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return e == cudaErrorMemoryAllocation ? "out of device memory for the activations" : cudaGetErrorString(e);
    }
    g->buffers[g->nbuffers] = *p;
    g->buffer_bytes[g->nbuffers++] = bytes;
    return NULL;
}

static const char *alloc_activations(kb_tf_gpu *g)
{
    const int64_t d = g->cfg.d_model, ff = g->cfg.d_ff, ns = (int64_t)g->B * g->Ts, nt = (int64_t)g->B * g->Tt;
    const int64_t n = ns > nt ? ns : nt, widest = ff > d ? ff : d; /* the widest linear input */
    KB_TRY(alloc(g, &g->src, ns * d));
    KB_TRY(alloc(g, &g->tgt, nt * d));
    KB_TRY(alloc(g, &g->out, (g->mode == KB_TF_ENCODER ? ns : nt) * d));
    KB_TRY(alloc(g, &g->mem, ns * d));
    KB_TRY(alloc(g, &g->x[0], n * d));
    KB_TRY(alloc(g, &g->x[1], n * d));
    KB_TRY(alloc(g, &g->stack, n * d));
    /* Self-attention's qkv (n x 3d), or cross-attention's q (nt x d) then kv (ns x 2d). */
    KB_TRY(alloc(g, &g->qkv, (3 * n > nt + 2 * ns ? 3 * n : nt + 2 * ns) * d));
    for (int i = 0; i < 3; ++i)
        KB_TRY(alloc(g, &g->heads[i], n * d));
    KB_TRY(alloc(g, &g->o_heads, n * d));
    KB_TRY(alloc(g, &g->cat, n * d));
    KB_TRY(alloc(g, &g->proj, n * d));
    KB_TRY(alloc(g, &g->sum, n * d));
    KB_TRY(alloc(g, &g->hidden, n * ff));
    if (g->gemm == KB_TF_GEMM_3XTF32)
        KB_TRY(alloc(g, &g->split, 3 * n * widest));
    return NULL;
}

/* ---- the forward ---------------------------------------------------------------- */

static const char *plan_for(kb_tf_gpu *g, int M, const Linear &l, int K, cublasLtEpilogue_t epi, const float *A,
                            const float *Y, const kb_lt_product **out)
{
    for (int i = 0; i < g->nplans; ++i) {
        const Plan &p = g->plans[i];
        if (p.M == M && p.N == l.out && p.K == K && p.epi == epi) {
            *out = &p.product;
            return NULL;
        }
    }
    if (g->nplans == kMaxPlans) { /* many lengths (kb_tf_gpu_set_tokens): start the cache afresh */
        for (int i = 0; i < g->nplans; ++i)
            kb_lt_destroy(&g->plans[i].product);
        g->nplans = 0;
    }
    Plan &p = g->plans[g->nplans++];
    p = Plan{M, l.out, K, epi, {}};
    const cublasComputeType_t compute =
        g->gemm == KB_TF_GEMM_3XTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    *out = &p.product;
    return kb_lt_plan(&p.product, g->lt, compute, CUDA_R_32F, M, l.out, K, epi, l.b, A, l.w, Y);
}

/* Y (M x out) = epi(X (M x in) W + b). */
static const char *linear(kb_tf_gpu *g, const Linear &l, int M, const float *X, float *Y, cublasLtEpilogue_t epi,
                          cudaStream_t s)
{
    const float *A = X;
    int K = l.in;
    if (g->gemm == KB_TF_GEMM_3XTF32) {
        const kb_split_tf32_args a = {M, K, X, g->split};
        KB_TRY(kb_call_launch(&g->split_tf32, &a, s));
        A = g->split;
        K *= 3;
    }
    const kb_lt_product *p;
    KB_TRY(plan_for(g, M, l, K, epi, A, Y, &p));
    return kb_lt_run(p, g->lt, l.b, A, l.w, Y, g->workspace, s);
}

static kb_attention_args attention_args(const kb_tf_gpu *g, int Tq, int Tk, int causal)
{
    const int H = g->cfg.heads, dh = g->cfg.d_model / H;
    return kb_attention_args{g->B, H, Tq, Tk, dh, causal, (float)(1.0 / sqrt((double)dh)),
                             g->heads[0], g->heads[1], g->heads[2], g->o_heads};
}

/* Heads in g->heads[0..2] -> g->cat (B*Tq x d). */
static const char *attend(kb_tf_gpu *g, const Call &c, int Tq, int Tk, int causal, cudaStream_t s)
{
    const int H = g->cfg.heads, dh = g->cfg.d_model / H;
    const kb_attention_args a = attention_args(g, Tq, Tk, causal);
    KB_TRY(c.v->launch(&a, c.ctx, s));
    const kb_merge_heads_args m = {g->B, H, Tq, dh, g->o_heads, g->cat};
    return kb_call_launch(&g->from_heads, &m, s);
}

static const char *split(kb_tf_gpu *g, const float *x, int parts, int T, float *o0, float *o1, float *o2,
                         cudaStream_t s)
{
    const int H = g->cfg.heads, dh = g->cfg.d_model / H;
    const kb_split_heads_args a = {g->B, T, parts, H, dh, x, {o0, o1, o2}};
    return kb_call_launch(&g->to_heads, &a, s);
}

/* proj = SelfAttn(x) over T tokens per sequence. */
static const char *self_attention(kb_tf_gpu *g, const Call &c, const Attn &a, const float *x, int T, int causal,
                                  cudaStream_t s)
{
    const int M = g->B * T;
    KB_TRY(linear(g, a.qkv, M, x, g->qkv, CUBLASLT_EPILOGUE_BIAS, s));
    KB_TRY(split(g, g->qkv, 3, T, g->heads[0], g->heads[1], g->heads[2], s));
    KB_TRY(attend(g, c, T, T, causal, s));
    return linear(g, a.out, M, g->cat, g->proj, CUBLASLT_EPILOGUE_BIAS, s);
}

/* proj = CrossAttn(y, mem): queries from Tt decoder tokens, keys and values
 * from Ts memory tokens. */
static const char *cross_attention(kb_tf_gpu *g, const Attn &a, const float *y, const float *mem, cudaStream_t s)
{
    float *q = g->qkv, *kv = g->qkv + (int64_t)g->B * g->Tt * g->cfg.d_model;
    KB_TRY(linear(g, a.q, g->B * g->Tt, y, q, CUBLASLT_EPILOGUE_BIAS, s));
    KB_TRY(linear(g, a.kv, g->B * g->Ts, mem, kv, CUBLASLT_EPILOGUE_BIAS, s));
    KB_TRY(split(g, q, 1, g->Tt, g->heads[0], NULL, NULL, s));
    KB_TRY(split(g, kv, 2, g->Ts, g->heads[1], g->heads[2], NULL, s));
    KB_TRY(attend(g, g->attn_cross, g->Tt, g->Ts, 0, s));
    return linear(g, a.out, g->B * g->Tt, g->cat, g->proj, CUBLASLT_EPILOGUE_BIAS, s);
}

/* proj = relu(x W1 + b1) W2 + b2 */
static const char *feed_forward(kb_tf_gpu *g, const Layer &L, const float *x, int M, cudaStream_t s)
{
    KB_TRY(linear(g, L.ff1, M, x, g->hidden, CUBLASLT_EPILOGUE_RELU_BIAS, s));
    return linear(g, L.ff2, M, g->hidden, g->proj, CUBLASLT_EPILOGUE_BIAS, s);
}

/* y = LN(x + proj); g->sum takes the sum, which the model does not need. */
static const char *add_norm(kb_tf_gpu *g, const Call &c, const float *x, const Norm &n, int M, float *y,
                            cudaStream_t s)
{
    const kb_add_layernorm_args a = {M, g->cfg.d_model, g->cfg.eps, x, g->proj, n.g, n.b, y, g->sum};
    return c.v->launch(&a, c.ctx, s);
}

static const char *final_norm(kb_tf_gpu *g, const Call &c, const float *x, const Norm &n, int M, float *y,
                              cudaStream_t s)
{
    const kb_layernorm_args a = {M, g->cfg.d_model, g->cfg.eps, x, n.g, n.b, y};
    return c.v->launch(&a, c.ctx, s);
}

/* x = LN(x + proj), a residual step.  The running activation moves to the
 * other running buffer, or to the stack's destination (never a running
 * buffer) on its last step. */
static const char *residual(kb_tf_gpu *g, const Call &c, const float **x, const Norm &n, int M, int last,
                            float *dst, cudaStream_t s)
{
    float *y = last ? dst : *x == g->x[0] ? g->x[1] : g->x[0];
    KB_TRY(add_norm(g, c, *x, n, M, y, s));
    *x = y;
    return NULL;
}

/* The encoder stack from src, ending in dst. */
static const char *encoder_stack(kb_tf_gpu *g, float *dst, cudaStream_t s)
{
    const int M = g->B * g->Ts, layers = g->cfg.enc_layers;
    const float *x = g->src;
    for (int l = 0; l < layers; ++l) {
        const Layer &L = g->enc[l];
        KB_TRY(self_attention(g, g->attn_src, L.self, x, g->Ts, g->cfg.enc_causal, s));
        KB_TRY(residual(g, g->add_src, &x, L.n1, M, 0, dst, s));
        KB_TRY(feed_forward(g, L, x, M, s));
        KB_TRY(residual(g, g->add_src, &x, L.n2, M, l + 1 == layers, dst, s));
    }
    return NULL;
}

static const char *decoder_stack(kb_tf_gpu *g, const float *mem, float *dst, cudaStream_t s)
{
    const int M = g->B * g->Tt, layers = g->cfg.dec_layers;
    const float *x = g->tgt;
    for (int l = 0; l < layers; ++l) {
        const Layer &L = g->dec[l];
        KB_TRY(self_attention(g, g->attn_tgt, L.self, x, g->Tt, g->cfg.causal, s));
        KB_TRY(residual(g, g->add_tgt, &x, L.n1, M, 0, dst, s));
        KB_TRY(cross_attention(g, L.cross, x, mem, s));
        KB_TRY(residual(g, g->add_tgt, &x, L.n2, M, 0, dst, s));
        KB_TRY(feed_forward(g, L, x, M, s));
        KB_TRY(residual(g, g->add_tgt, &x, L.n3, M, l + 1 == layers, dst, s));
    }
    return NULL;
}

extern "C" const char *kb_tf_gpu_encode(kb_tf_gpu *g, cudaStream_t s)
{
    if (g->mode == KB_TF_ENCODER)
        return encoder_stack(g, g->out, s);
    if (g->mode == KB_TF_DECODER)
        return NULL;
    /* seq2seq: the stack's last step lands in a running buffer, and the
     * final norm writes the memory the decoder reads. */
    KB_TRY(encoder_stack(g, g->stack, s));
    return final_norm(g, g->norm_src, g->stack, g->enc_norm, g->B * g->Ts, g->mem, s);
}

extern "C" const char *kb_tf_gpu_decode(kb_tf_gpu *g, cudaStream_t s)
{
    if (g->mode == KB_TF_ENCODER)
        return NULL;
    if (g->mode == KB_TF_DECODER)
        return decoder_stack(g, g->src, g->out, s);
    KB_TRY(decoder_stack(g, g->mem, g->stack, s));
    return final_norm(g, g->norm_tgt, g->stack, g->dec_norm, g->B * g->Tt, g->out, s);
}

/* ---- lifetime ------------------------------------------------------------------- */

/* ---- the variants, by name ---------------------------------------------------- */

extern "C" const char *const kb_tf_kernel_ops[3] = {"attention", "add_layernorm", "layernorm"};
static const char *const kernel_defaults[3] = {KB_TF_DEFAULT_ATTENTION, KB_TF_DEFAULT_ADD_NORM, KB_TF_DEFAULT_NORM};

extern "C" const char *kb_tf_kernel_name(const kb_tf_kernels *k, int kind)
{
    const char *given = !k ? NULL : kind == 0 ? k->attention : kind == 1 ? k->add_norm : k->norm;
    return given ? given : kernel_defaults[kind];
}

static const kb_variant *kernel_variant(const kb_tf_kernels *k, int kind)
{
    const kb_op *op = kb_find_op(kb_tf_kernel_ops[kind]);
    const char *name = kb_tf_kernel_name(k, kind);
    /* The f32 form, else any, which kb_tf_kernels_check then refuses by its dtype. */
    const kb_variant *v = op ? kb_find_variant(op, name, KB_F32) : NULL;
    return v || !op ? v : kb_find_variant_named(op, name);
}

extern "C" const char *kb_tf_kernels_check(const kb_tf_kernels *k, char *err, size_t errlen)
{
    for (int kind = 0; kind < 3; ++kind) {
        const kb_variant *v = kernel_variant(k, kind);
        char q[KB_QUOTE_LEN];
        kb_quote(kb_tf_kernel_name(k, kind), q, sizeof q);
        if (!v)
            snprintf(err, errlen, "no %s variant '%s' (see kbench list)", kb_tf_kernel_ops[kind], q);
        else if (v->dtype != KB_F32)
            snprintf(err, errlen, "%s '%s' stores %s; the model runs in fp32", kb_tf_kernel_ops[kind], q,
                     kb_dtype_name(v->dtype));
        if (!v || v->dtype != KB_F32)
            return err;
    }
    return NULL;
}

/* A variant's compute-capability floor against the GPU's: NULL, or one line. */
static const char *cc_refusal(const kb_variant *v, const char *op, int cc)
{
    static char why[256];
    if (v->min_cc <= cc)
        return NULL;
    snprintf(why, sizeof why, "%s %s needs compute capability %d.%d, the GPU has %d.%d", op, v->name, v->min_cc / 10,
             v->min_cc % 10, cc / 10, cc % 10);
    return why;
}

extern "C" const char *kb_tf_kernels_cc(const kb_tf_kernels *k, kb_tf_mode mode, int cc)
{
    static char err[256];
    if (kb_tf_kernels_check(k, err, sizeof err))
        return err;
    for (int kind = 0; kind < 3; ++kind)
        if (kind < 2 || mode == KB_TF_SEQ2SEQ) /* the final norms are seq2seq's */
            KB_TRY(cc_refusal(kernel_variant(k, kind), kb_tf_kernel_ops[kind], cc));
    return NULL;
}

/* Set up call site c with variant v of op `op`, whose args are `args`:
 * refused when this GPU is too old for it (the shape was checked by
 * kb_tf_kernels_fit). */
static const char *setup_call(Call *c, const kb_variant *v, const char *op, const void *args)
{
    static char why[256];
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    KB_TRY(cc_refusal(v, op, major * 10 + minor));
    const char *no = v->setup ? v->setup(args, &c->ctx) : NULL;
    if (no) {
        snprintf(why, sizeof why, "%s %s setup: %s", op, v->name, no);
        return why;
    }
    c->v = v;
    c->ready = true;
    return NULL;
}

static kb_shape rows_shape(int64_t M, int64_t C)
{
    kb_shape s = {};
    s.nd = 2, s.d[0] = M, s.d[1] = C;
    return s;
}

/* The call sites: attention over the source, over the target (its mask)
 * and across; the residual norms over source and target tokens, and the
 * final norms (seq2seq) over the same.  Whether the mode has site i, and
 * its shape. */
enum { SITE_ATTN_SRC, SITE_ATTN_TGT, SITE_ATTN_CROSS, SITE_ROWS_SRC, SITE_ROWS_TGT, SITE_COUNT };

static bool site_shape(const kb_tf_config &c, kb_tf_mode mode, int B, int Ts, int Tt, int site, kb_shape *s)
{
    const bool enc = mode != KB_TF_DECODER, dec = mode != KB_TF_ENCODER;
    *s = kb_shape{};
    if (site == SITE_ROWS_SRC || site == SITE_ROWS_TGT) {
        *s = rows_shape((int64_t)B * (site == SITE_ROWS_SRC ? Ts : Tt), c.d_model);
        return site == SITE_ROWS_SRC ? enc : dec;
    }
    const int Tq = site == SITE_ATTN_SRC ? Ts : Tt, Tk = site == SITE_ATTN_TGT ? Tt : Ts;
    s->nd = 5, s->d[0] = B, s->d[1] = c.heads, s->d[2] = Tq, s->d[3] = Tk, s->d[4] = c.d_model / c.heads;
    s->flags = (site == SITE_ATTN_TGT && c.causal) || (site == SITE_ATTN_SRC && c.enc_causal);
    return site == SITE_ATTN_SRC ? enc : dec;
}

/* Whether a variant runs a site's shape: NULL, or one line why not. */
static const char *site_refusal(const kb_variant *v, const char *op, const kb_shape *shape)
{
    static char why[256];
    const char *no = v->unsupported ? v->unsupported(shape) : NULL;
    if (!no)
        return NULL;
    snprintf(why, sizeof why, "%s %s at the model's shape: %s", op, v->name, no);
    return why;
}

extern "C" const char *kb_tf_kernels_fit(const kb_tf_kernels *k, const kb_tf_config *c, kb_tf_mode mode, int B,
                                         int Ts, int Tt)
{
    static char err[256];
    if (kb_tf_kernels_check(k, err, sizeof err))
        return err;
    for (int site = 0; site < SITE_COUNT; ++site) {
        kb_shape shape;
        const int kind = site < SITE_ROWS_SRC ? 0 : 1;
        if (!site_shape(*c, mode, B, Ts, Tt, site, &shape))
            continue;
        KB_TRY(site_refusal(kernel_variant(k, kind), kb_tf_kernel_ops[kind], &shape));
        if (kind == 1 && mode == KB_TF_SEQ2SEQ)
            KB_TRY(site_refusal(kernel_variant(k, 2), kb_tf_kernel_ops[2], &shape));
    }
    return NULL;
}

/* Every call site of the mode, set up at its shape before any timing or
 * capture (setups allocate and set kernel attributes). */
static const char *setup_kernels(kb_tf_gpu *g, const kb_tf_kernels *k)
{
    KB_TRY(kb_tf_kernels_fit(k, &g->cfg, g->mode, g->B, g->Ts, g->Tt));
    Call *attention[] = {&g->attn_src, &g->attn_tgt, &g->attn_cross};
    for (int site = SITE_ATTN_SRC; site <= SITE_ATTN_CROSS; ++site) {
        kb_shape s;
        if (!site_shape(g->cfg, g->mode, g->B, g->Ts, g->Tt, site, &s))
            continue;
        const kb_attention_args a = attention_args(g, (int)s.d[2], (int)s.d[3], s.flags);
        KB_TRY(setup_call(attention[site], kernel_variant(k, 0), kb_tf_kernel_ops[0], &a));
    }
    for (int site = SITE_ROWS_SRC; site <= SITE_ROWS_TGT; ++site) {
        kb_shape s;
        if (!site_shape(g->cfg, g->mode, g->B, g->Ts, g->Tt, site, &s))
            continue;
        const int M = (int)s.d[0], d = g->cfg.d_model, src = site == SITE_ROWS_SRC;
        const kb_add_layernorm_args a = {M, d, g->cfg.eps, g->x[0], g->proj, NULL, NULL, g->x[1], g->sum};
        KB_TRY(setup_call(src ? &g->add_src : &g->add_tgt, kernel_variant(k, 1), kb_tf_kernel_ops[1], &a));
        if (g->mode != KB_TF_SEQ2SEQ)
            continue;
        const kb_layernorm_args n = {M, d, g->cfg.eps, g->stack, NULL, NULL, g->out};
        KB_TRY(setup_call(src ? &g->norm_src : &g->norm_tgt, kernel_variant(k, 2), kb_tf_kernel_ops[2], &n));
    }
    return NULL;
}

static const char *create(kb_tf_gpu *g, const kb_tf_model *m, const kb_tf_kernels *k)
{
    g->enc = (Layer *)calloc((size_t)m->cfg.enc_layers + 1, sizeof(Layer));
    g->dec = (Layer *)calloc((size_t)m->cfg.dec_layers + 1, sizeof(Layer));
    if (!g->enc || !g->dec)
        return "out of host memory";
    KB_TRY(upload_weights(g, m));
    KB_TRY(alloc_activations(g));
    cudaError_t e = cudaMalloc(&g->workspace, KB_LT_WORKSPACE_BYTES);
    if (e != cudaSuccess)
        return e == cudaErrorMemoryAllocation ? "out of device memory for the cuBLASLt workspace" : cudaGetErrorString(e);
    if (cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    const int H = g->cfg.heads, dh = g->cfg.d_model / H;
    const kb_split_heads_args split = {g->B, g->max_Ts, 3, H, dh, g->qkv, {g->heads[0], g->heads[1], g->heads[2]}};
    const kb_merge_heads_args merge = {g->B, H, g->max_Tt, dh, g->o_heads, g->cat};
    KB_TRY(kb_call_setup(&g->to_heads, "split_heads", "naive", KB_F32, &split));
    KB_TRY(kb_call_setup(&g->from_heads, "merge_heads", "naive", KB_F32, &merge));
    const kb_split_tf32_args tf32 = {g->B * (g->max_Ts > g->max_Tt ? g->max_Ts : g->max_Tt), g->cfg.d_ff, g->src,
                                     g->split};
    KB_TRY(kb_call_setup(&g->split_tf32, "split_tf32", "naive", KB_F32, &tf32));
    return setup_kernels(g, k);
}

extern "C" const char *kb_tf_gpu_create(const kb_tf_model *m, kb_tf_mode mode, int B, int Ts, int Tt,
                                        kb_tf_gemm gemm, const kb_tf_kernels *k, kb_tf_gpu **out)
{
    kb_tf_gpu *g = (kb_tf_gpu *)calloc(1, sizeof *g);
    *out = NULL;
    if (!g)
        return "out of host memory";
    g->cfg = m->cfg;
    g->mode = mode;
    g->gemm = gemm;
    g->B = B;
    g->Ts = g->max_Ts = Ts;
    g->Tt = g->max_Tt = Tt;
    const char *err = create(g, m, k);
    if (err) {
        kb_tf_gpu_destroy(g);
        return err;
    }
    *out = g;
    return NULL;
}

extern "C" void kb_tf_gpu_destroy(kb_tf_gpu *g)
{
    if (!g)
        return;
    for (Call *c : {&g->attn_src, &g->attn_tgt, &g->attn_cross, &g->add_src, &g->add_tgt, &g->norm_src, &g->norm_tgt})
        if (c->ready && c->v->teardown)
            c->v->teardown(c->ctx);
    kb_call_teardown(&g->to_heads);
    kb_call_teardown(&g->from_heads);
    kb_call_teardown(&g->split_tf32);
    for (int i = 0; i < g->nplans; ++i)
        kb_lt_destroy(&g->plans[i].product);
    if (g->lt)
        cublasLtDestroy(g->lt);
    for (int i = 0; i < g->nbuffers; ++i)
        cudaFree(g->buffers[i]);
    cudaFree(g->workspace);
    cudaFree(g->weights);
    free(g->enc);
    free(g->dec);
    free(g);
}

extern "C" const char *kb_tf_gpu_poison(kb_tf_gpu *g)
{
    for (int i = 0; i < g->nbuffers; ++i)
        if (g->buffers[i] != g->src && g->buffers[i] != g->tgt)
            KB_TRY(kb_cuda_status(cudaMemset(g->buffers[i], 0xFF, g->buffer_bytes[i])));
    return NULL;
}

/* Fewer tokens than created fit every buffer, and the variants were set up
 * and checked at the created shapes, which bound these (no self-attention
 * has Tq > Tk); only the products are new, planned on first use. */
extern "C" const char *kb_tf_gpu_set_tokens(kb_tf_gpu *g, int Ts, int Tt)
{
    if (Ts < 1 || Tt < 1 || Ts > g->max_Ts || Tt > g->max_Tt)
        return "kb_tf_gpu_set_tokens: more tokens than the forward was created for";
    g->Ts = Ts;
    g->Tt = Tt;
    return NULL;
}

extern "C" float *kb_tf_gpu_src(kb_tf_gpu *g) { return g->src; }
extern "C" float *kb_tf_gpu_tgt(kb_tf_gpu *g) { return g->tgt; }
extern "C" float *kb_tf_gpu_out(kb_tf_gpu *g) { return g->out; }

extern "C" const char *kb_tf_gemm_name(kb_tf_gemm gemm)
{
    return gemm == KB_TF_GEMM_3XTF32 ? "3xtf32" : "fp32";
}
