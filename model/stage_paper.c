/* The paper stage (model/stages.h): the original Transformer's changes as a
 * causal language model, in fp32 on the GPU, reusing the encoder forward of
 * model/gpu.h (its registry variants: flash attention with the causal
 * mask, the fused add_layernorm; cuBLASLt products with their biases and
 * ReLU in the epilogues) as the stack: fused QKV and output projections,
 * 1/sqrt(d_k) scaling, residual + post-LN, a ReLU FFN.  Around it:
 *
 *   input   x_t = sqrt(d) E[ids_t] + PE(t): the paper scales the embedding
 *           by sqrt(d); PE is the paper's sinusoid (10000^(-2i/d), `kbench
 *           pe --paper`), one table from the posenc op's sincos variant,
 *           made once before anything is timed
 *   head    logits = x_last head^T, one cuBLASLt product over the last
 *           position (head = E when tied, the paper's sharing; no bias)
 *   pick    the greedy token, by a kernel, into the device's id list
 *
 * No KV cache: a decode step runs the whole sequence again, one token
 * longer each time (kb_tf_gpu_set_tokens), as the paper's model would
 * without one.  Checked against reference/stage_paper.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "ops/posenc.h"
#include "model/gpu.h"
#include "model/stage_gpu.h"
#include "reference/stage_paper.h"


typedef struct {
    kb_stage_shape sh;
    int d, V, max_len; /* max_len: the longest sequence a forward runs */
    kb_tf_model m;
    float *embed, *head; /* host, [V x d]; head == embed when tied */
    kb_tf_gpu *tf;
    kb_stage_mem mem;
    float *emb_t, *head_t, *pe, *logits; /* device; head_t == emb_t when tied */
    int *ids;                            /* the sequence, max_len + 1 (the last pick) */
    void *ws;
    cublasLtHandle_t lt;
    kb_lt_product lm;
    kb_stage_ends ends; /* the embedding and the pick */
} paper;

/* ---- weights ------------------------------------------------------------------ */

/* E with variance 1/d (uniform in +-sqrt(3/d)), so sqrt(d) E is of PE's
 * size; an untied head as nn.Linear initializes one (+-1/sqrt(d)). */
static const char *host_weights(paper *p)
{
    const kb_stage_shape *sh = &p->sh;
    const kb_tf_config c = {p->d, sh->heads, sh->d_ff, sh->layers, 0, 1e-5f, 0, 1};
    const int64_t n = (int64_t)p->V * p->d;
    /* The weights alone must fit the device before the host makes them. */
    KB_TRY(kb_stage_alloc(&p->mem, NULL, 0, 4 * (kb_tf_weight_count(&c) + n * (sh->tied ? 1 : 2))));
    if (kb_tf_init_random(&p->m, &c, sh->seed) != 0)
        return "out of host memory for the weights";
    p->embed = malloc(sizeof(float) * (size_t)n * (sh->tied ? 1 : 2));
    if (!p->embed)
        return "out of host memory for the embedding";
    kb_fill_uniform(p->embed, n * (sh->tied ? 1 : 2), sh->seed ^ 0xE3BEDu);
    for (int64_t i = 0; i < n; ++i)
        p->embed[i] *= sqrtf(3.0f / p->d);
    p->head = sh->tied ? p->embed : p->embed + n;
    for (int64_t i = 0; !sh->tied && i < n; ++i)
        p->head[i] *= 1.0f / sqrtf((float)p->d);
    return NULL;
}

static void lay_out(void *user, kb_stage_block *b)
{
    paper *p = user;
    float *h;
    p->emb_t = kb_stage_take(b, (int64_t)p->V * p->d, &h);
    if (h)
        kb_stage_transpose(h, p->V, p->embed, p->V, p->d);
    p->head_t = p->emb_t;
    if (p->sh.tied)
        return;
    p->head_t = kb_stage_take(b, (int64_t)p->V * p->d, &h);
    if (h)
        kb_stage_transpose(h, p->V, p->head, p->V, p->d);
}

/* ---- device set-up -------------------------------------------------------------- */

/* The encoder forward's buffers at n tokens (model/forward_gpu.cu: 16
 * activations of n x d and the FFN's n x d_ff), its weights and workspace. */
static int64_t forward_bytes(const paper *p)
{
    const int64_t n = p->max_len, d = p->d;
    return 4 * (kb_tf_weight_count(&p->m.cfg) + 16 * n * d + n * p->sh.d_ff) + KB_LT_WORKSPACE_BYTES;
}

static const char *make_pe(paper *p, cudaStream_t s)
{
    const kb_op *op = kb_find_op("posenc");
    const kb_variant *v = op ? kb_find_variant(op, "sincos", KB_F32) : NULL;
    if (!v)
        return "the posenc variant sincos is not in this build";
    const kb_posenc_args a = {p->max_len, p->d, KB_POSENC_PAPER_SCALE, p->pe};
    return v->launch(&a, NULL, s);
}

static const char *set_up(paper *p, cudaStream_t s)
{
    const int64_t d = p->d, V = p->V;
    KB_TRY(kb_tf_kernels_fit(NULL, &p->m.cfg, KB_TF_ENCODER, 1, p->max_len, 1));
    const kb_stage_buf bufs[] = {
        {(void **)&p->pe, 4 * p->max_len * d},
        {(void **)&p->logits, 4 * V},
        {(void **)&p->ids, 4 * ((int64_t)p->max_len + 1)},
        {&p->ws, KB_LT_WORKSPACE_BYTES},
    };
    const int64_t mine = 4 * kb_stage_count(lay_out, p) + 4 * (p->max_len * d + V + p->max_len + 1);
    KB_TRY(kb_stage_alloc(&p->mem, bufs, 4, mine + KB_LT_WORKSPACE_BYTES + forward_bytes(p)));
    KB_TRY(kb_stage_upload(&p->mem, lay_out, p));
    KB_TRY(kb_tf_gpu_create(&p->m, KB_TF_ENCODER, 1, p->max_len, 1, KB_TF_GEMM_FP32, NULL, &p->tf));
    KB_TRY(make_pe(p, s));
    KB_TRY(kb_stage_ends_setup(&p->ends));
    if (cublasLtCreate(&p->lt) != CUBLAS_STATUS_SUCCESS)
        return "cannot create a cuBLASLt handle";
    /* Planned at the second row: as little aligned as any last row can be. */
    return kb_lt_plan(&p->lm, p->lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, 1, p->V, p->d, CUBLASLT_EPILOGUE_DEFAULT, NULL,
                      kb_tf_gpu_out(p->tf) + d, p->head_t, p->logits);
}

static void tear_down(paper *p)
{
    kb_lt_destroy(&p->lm);
    kb_stage_ends_teardown(&p->ends);
    if (p->lt)
        cublasLtDestroy(p->lt);
    kb_tf_gpu_destroy(p->tf);
    kb_stage_free(&p->mem);
    kb_tf_free(&p->m);
    free(p->embed);
}

/* ---- the forward ---------------------------------------------------------------- */

/* The first `seen` of the device's ids through the model (seen is n but
 * under the planted fault), the last position's logits, and the greedy
 * pick into ids[n]. */
static const char *forward(paper *p, int n, int seen, cudaStream_t s)
{
    const int d = p->d;
    KB_TRY(kb_tf_gpu_set_tokens(p->tf, seen, 1));
    KB_TRY(kb_stage_embed(&p->ends, p->ids, seen, p->emb_t, p->V, d, sqrtf((float)d), p->pe, kb_tf_gpu_src(p->tf),
                          s));
    KB_TRY(kb_tf_gpu_encode(p->tf, s));
    const float *last = kb_tf_gpu_out(p->tf) + (size_t)(seen - 1) * d;
    KB_TRY(kb_lt_run(&p->lm, p->lt, NULL, last, p->head_t, p->logits, p->ws, s));
    return kb_stage_argmax(&p->ends, p->logits, p->V, p->ids + n, s);
}

/* A decode step over the n tokens so far. */
static const char *step(paper *p, int n, cudaStream_t s)
{
    return forward(p, n, kb_stage_fault == KB_STAGE_FAULT_SHORT ? n - 1 : n, s);
}

static const char *run_prefill(void *user, cudaStream_t stream)
{
    paper *p = user;
    return forward(p, p->sh.prompt, p->sh.prompt, stream);
}

static const char *run_decode(void *user, cudaStream_t stream)
{
    paper *p = user;
    for (int i = 1; i <= p->sh.tokens; ++i)
        KB_TRY(step(p, p->sh.prompt + i, stream));
    return NULL;
}

/* ---- the check and the counts ------------------------------------------------- */

/* The GPU's logits of a prefill over the prompt's first P tokens and
 * KB_STAGE_CHECK_STEPS decode steps into got, the ids it ran (and picked)
 * into ids. */
static const char *gpu_steps(paper *p, int P, int *ids, float *got, cudaStream_t s)
{
    const int S = KB_STAGE_CHECK_STEPS;
    const size_t V = (size_t)p->V;
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(p->ids, ids, sizeof(int) * P, cudaMemcpyHostToDevice, s)));
    for (int k = 0; k <= S; ++k) {
        KB_TRY(k ? step(p, P + k, s) : forward(p, P, P, s));
        KB_TRY(kb_cuda_status(cudaMemcpyAsync(got + k * V, p->logits, sizeof(float) * V, cudaMemcpyDeviceToHost, s)));
    }
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(ids, p->ids, sizeof(int) * (P + S), cudaMemcpyDeviceToHost, s)));
    return kb_cuda_status(cudaStreamSynchronize(s));
}

/* The worst rel. L2 of the checked logits against the reference fed the
 * GPU's tokens: one forward over them all, causal, gives every step's. */
static const char *check(paper *p, cudaStream_t s, double *worst)
{
    const int P = kb_stage_check_prompt(&p->sh), S = KB_STAGE_CHECK_STEPS;
    const size_t V = (size_t)p->V;
    int *ids = malloc(sizeof(int) * (P + S));
    float *got = malloc(sizeof(float) * 2 * (S + 1) * V), *want = got ? got + (S + 1) * V : NULL;
    const char *err = !ids || !got ? "out of host memory for the check" : NULL;
    if (!err) {
        kb_stage_prompt(&p->sh, ids, P);
        err = gpu_steps(p, P, ids, got, s);
    }
    if (!err && kb_paper_reference(&p->m, p->embed, p->head, p->V, ids, P + S, P - 1, want) != 0)
        err = "out of host memory for the reference";
    *worst = 0;
    for (int k = 0; !err && k <= S; ++k)
        *worst = fmax(*worst, kb_stage_rel_l2(got + k * V, want + k * V, (int64_t)V));
    free(ids);
    free(got);
    return err;
}

/* FLOPs of a forward over n tokens: the products, causal attention at the
 * attention op's count (half the n x n scores), and the head on one row. */
static double forward_flops(const paper *p, double n)
{
    const double d = p->d, ff = p->sh.d_ff;
    const double layer = 2 * n * d * (4 * d + 2 * ff) + 2 * n * n * d;
    return p->sh.layers * layer + 2 * d * p->V;
}

static void count(const paper *p, kb_stage_result *r)
{
    const kb_stage_shape *sh = &p->sh;
    r->prefill_flops = forward_flops(p, sh->prompt);
    r->decode_flops = 0;
    for (int i = 1; i <= sh->tokens; ++i)
        r->decode_flops += forward_flops(p, sh->prompt + i) / sh->tokens;
    /* Every weight once: the stack (not the final norms the encoder-only
     * model has no use for), the embedding and an untied head. */
    const double stack = (double)kb_tf_weight_count(&p->m.cfg) - 4.0 * p->d;
    r->decode_bytes = 4 * (stack + (double)p->V * p->d * (sh->tied ? 1 : 2));
}

/* ---- the stage ------------------------------------------------------------------ */

static const char *refusal(const kb_stage_shape *sh)
{
    if (sh->layers < 1 || sh->d_model < 1 || sh->heads < 1 || sh->d_ff < 1 || sh->vocab < 1 || sh->prompt < 1 ||
        sh->tokens < 1)
        return "every size must be at least 1";
    if (sh->d_model % sh->heads)
        return "heads must divide d_model";
    if ((int64_t)sh->prompt + sh->tokens + KB_STAGE_CHECK_STEPS > (1 << 24))
        return "prompt + tokens over 2^24";
    return NULL;
}

static const char *measure(paper *p, cudaStream_t s, const kb_time_opts *timing, kb_stage_result *r)
{
    double worst;
    KB_TRY(set_up(p, s));
    KB_TRY(check(p, s, &worst));
    kb_stage_checked(r, worst);
    int *ids = malloc(sizeof(int) * p->sh.prompt);
    if (!ids)
        return "out of host memory for the prompt";
    kb_stage_prompt(&p->sh, ids, p->sh.prompt);
    const cudaError_t e = cudaMemcpy(p->ids, ids, sizeof(int) * p->sh.prompt, cudaMemcpyHostToDevice);
    free(ids);
    KB_TRY(kb_cuda_status(e));
    /* The prefill first: its pick is the decode's first token. */
    KB_TRY(kb_stage_time(timing, run_prefill, p, s, 1, &r->prefill));
    KB_TRY(kb_stage_time(timing, run_decode, p, s, p->sh.tokens, &r->decode));
    count(p, r);
    snprintf(r->how, sizeof r->how, "recomputes the sequence");
    return NULL;
}

int kb_stage_paper(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                   size_t errlen)
{
    paper p = {.sh = *shape, .d = shape->d_model, .V = shape->vocab};
    const int checked = kb_stage_check_prompt(shape) + KB_STAGE_CHECK_STEPS;
    p.max_len = shape->prompt + shape->tokens > checked ? shape->prompt + shape->tokens : checked;
    memset(r, 0, sizeof *r);
    r->checked_tokens = checked;
    cudaStream_t s = NULL;
    const char *why = refusal(shape);
    if (!why)
        why = host_weights(&p);
    if (!why)
        why = kb_cuda_status(cudaStreamCreate(&s));
    if (!why)
        why = measure(&p, s, timing, r);
    if (s)
        cudaStreamDestroy(s);
    tear_down(&p);
    if (why)
        snprintf(err, errlen, "paper: %s", why);
    return why ? -1 : 0;
}
