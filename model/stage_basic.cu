/* The `basic` stage (model/stages.h): reference/basic.h's model, the 003
 * document taken literally, on the GPU as a first implementation would run
 * it: one kernel after another, per head and per block, fp32, no KV cache.
 * Every head has its own W_k and value maps: the shape's kv_heads is unused.
 *
 * Layout.  The maths is column-vector (E is n x t, a column per token);
 * the device keeps each activation token-major, row-major: X = E^T (t x n),
 * a row per token, because the registry's matmul computes C = A B on
 * row-major operands with no transposes.  A weight W (out x in) is uploaded
 * as W^T (in x out), so Y^T = X W^T is one matmul.  Per head h:
 *   Q^T = X Wq^T, K^T = X Wk^T          matmul variant     t x l
 *   K = (K^T)^T                         transpose          l x t
 *   V^T = (X Wvd^T) Wvu^T               two matmuls        t x l, t x n
 *   S = Q^T K = A^T                     matmul             t x t, S[i][j] = query i . key j
 *   mask: S[i][j] = -inf for j > i      mask
 *   P = row softmax of S = A_norm^T     softmax variant (a row of S is a
 *                                       column of A: the column softmax)
 *   dE^T = P V^T = (V A_norm)^T         matmul             t x n
 *   X' = X + dE_0^T, then X' += dE_h^T  add; every head reads the
 *                                       block's input X, none another's X'
 * then the MLP, X = ReLU(X' Wup^T + b_up) Wdown^T + b_down (two matmuls,
 * each followed by bias, ReLU in the first), and the LM head
 * logits (t x vocab) = X Wout^T.  The embedding lives once on the device,
 * as Emb^T (n x vocab), the LM head's operand when tied; kb_stage_embed
 * (model/stage_gpu.h, shared with the other fp32 stages) reads a token's
 * column of it.
 *
 * The registry's variants, found by name in the op tables and set up once
 * before anything runs (as model/forward_gpu.cu does): matmul `cublas`
 * (the op's fp32 baseline, plain fp32 math, its best fp32 row; the
 * hand-written double_buffered's 128x256 tiles leave most SMs idle at
 * these t x 64 products) and softmax `vectorized` (a row in registers,
 * -inf gives 0), and the `naive` variants of transpose, mask, add and
 * bias, the plain one-thread-an-element kernels a first implementation
 * writes (the mask's value is -inf here; its op checks a finite one).
 *
 * Decoding recomputes the sequence: step s runs the whole forward over the
 * prompt and the s + 1 tokens chosen so far, then kb_stage_argmax writes
 * the greedy next id into the device's id buffer (no host round trip).
 *
 * The check (at a reduced length, since the reference runs in double on
 * the CPU): a prefill over the prompt's first 32 tokens and 3 decode steps,
 * then reference/basic.c on the GPU's tokens (teacher-forced); every
 * position's logits of the prefill and of the last step within
 * kb_model_rel_l2_tolerance(), each greedy pick within that tolerance of
 * the reference's best logit.
 *
 * Measured on H100 (SmolLM2-135M's sizes: 30 layers, d 576, 9 heads, ff
 * 1536, vocab 49152, tied; prompt 512, 8 decode steps): prefill 20.8 ms
 * (215 GFLOP as computed, 10.3 TFLOP/s), decode 22.2 ms a token (each a
 * recompute of 513..520 tokens), rel. L2 of logits 1.7e-6 (one run).
 * Some 2,800 launches a forward, most of them products of t x 64 or
 * t x 576 that fill few SMs: likely launch- and latency-bound (not
 * profiled), as a first implementation is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "ops/add.h"
#include "ops/bias.h"
#include "ops/mask.h"
#include "ops/matmul.h"
#include "ops/softmax.h"
#include "ops/transpose.h"
#include "model/stage_gpu.h"
#include "model/stages.h"
#include "reference/basic.h"


static const char *const kMatmul = "cublas", *const kSoftmax = "vectorized";
constexpr int kCheckSteps = 3; /* fewer than the other stages: each step recomputes the sequence */

/* ---- the stage's state --------------------------------------------------------------- */

namespace {

struct HeadW {
    const float *q, *k, *vd, *vu; /* Wq^T, Wk^T, Wvd^T (n x l), Wvu^T (l x n) */
};
struct LayerW {
    const float *up, *b_up, *down, *b_down; /* Wup^T (n x ff), ff, Wdown^T (ff x n), n */
};

struct Basic {
    int n, l, ff, vocab, heads, layers;
    int prompt, tokens, max_t; /* max_t: the longest sequence a forward runs */
    cudaStream_t s;
    kb_call mm, sm, tr, mask, add, bias;
    kb_stage_ends ends; /* the embedding and the pick */
    float *weights, *acts;
    int *ids; /* max_t + 1: the last pick has a slot */
    HeadW *head; /* layers x heads */
    LayerW *layer;
    const float *embT, *woutT;
    float *x, *xa, *q, *kt, *k, *vd, *v, *sc, *p, *de, *h, *logits;
};

}  // namespace

/* ---- the forward ------------------------------------------------------------------------ */

static const char *matmul(Basic *g, int M, int N, int K, const float *A, const float *B, float *C)
{
    kb_matmul_args a = {};
    a.M = M, a.N = N, a.K = K, a.A = A, a.B = B, a.C = C;
    return g->mm.v->launch(&a, g->mm.ctx, g->s);
}

static const char *softmax(Basic *g, int R, int C, const float *x, float *y)
{
    const kb_softmax_args a = {R, C, x, y};
    return g->sm.v->launch(&a, g->sm.ctx, g->s);
}

/* Head h's dE^T (t x n) from the block's input x, into g->de. */
static const char *head(Basic *g, const HeadW &w, int T)
{
    const int n = g->n, l = g->l;
    KB_TRY(matmul(g, T, l, n, g->x, w.q, g->q));
    KB_TRY(matmul(g, T, l, n, g->x, w.k, g->kt));
    const kb_transpose_args tr = {T, l, g->kt, g->k};
    KB_TRY(kb_call_launch(&g->tr, &tr, g->s));
    KB_TRY(matmul(g, T, l, n, g->x, w.vd, g->vd));
    KB_TRY(matmul(g, T, n, l, g->vd, w.vu, g->v));
    KB_TRY(matmul(g, T, T, l, g->q, g->k, g->sc));
    const kb_mask_args mask = {T, T, -INFINITY, g->sc};
    KB_TRY(kb_call_launch(&g->mask, &mask, g->s));
    KB_TRY(softmax(g, T, T, g->sc, g->p));
    return matmul(g, T, n, T, g->p, g->v, g->de);
}

/* xa = x + the sum of every head's dE^T. */
static const char *attention(Basic *g, int layer, int T)
{
    const int64_t count = (int64_t)T * g->n;
    for (int h = 0; h < g->heads; ++h) {
        KB_TRY(head(g, g->head[layer * g->heads + h], T));
        const kb_add_args add = {count, h == 0 ? g->x : g->xa, g->de, g->xa};
        KB_TRY(kb_call_launch(&g->add, &add, g->s));
    }
    return NULL;
}

/* x = ReLU(xa Wup^T + b_up) Wdown^T + b_down: no residual. */
static const char *mlp(Basic *g, const LayerW &w, int T)
{
    KB_TRY(matmul(g, T, g->ff, g->n, g->xa, w.up, g->h));
    const kb_bias_args up = {T, g->ff, 1, w.b_up, g->h}, down = {T, g->n, 0, w.b_down, g->x};
    KB_TRY(kb_call_launch(&g->bias, &up, g->s));
    KB_TRY(matmul(g, T, g->n, g->ff, g->h, w.down, g->x));
    return kb_call_launch(&g->bias, &down, g->s);
}

/* logits (T x vocab) of ids[0..T). */
static const char *forward(Basic *g, int T)
{
    KB_TRY(kb_stage_embed(&g->ends, g->ids, T, g->embT, g->vocab, g->n, 1.0f, NULL, g->x, g->s));
    for (int layer = 0; layer < g->layers; ++layer) {
        KB_TRY(attention(g, layer, T));
        KB_TRY(mlp(g, g->layer[layer], T));
    }
    return matmul(g, T, g->vocab, g->n, g->x, g->woutT, g->logits);
}

/* Forward over T tokens, then the greedy pick from the last position into ids[T]. */
static const char *step(Basic *g, int T)
{
    KB_TRY(forward(g, T));
    return kb_stage_argmax(&g->ends, g->logits + (int64_t)(T - 1) * g->vocab, g->vocab, g->ids + T, g->s);
}

/* Decode steps tokens from a sequence of `from` ids: each a full recompute. */
static const char *decode(Basic *g, int from, int steps)
{
    for (int s = 0; s < steps; ++s)
        KB_TRY(step(g, from + s));
    return NULL;
}

static const char *prefill_run(void *user, cudaStream_t)
{
    Basic *g = (Basic *)user;
    return step(g, g->prompt);
}

/* After a prefill (ids[prompt] chosen): the timed decode steps. */
static const char *decode_run(void *user, cudaStream_t)
{
    Basic *g = (Basic *)user;
    return decode(g, g->prompt + 1, g->tokens);
}

/* ---- FLOPs and bytes ----------------------------------------------------------------------- */

/* The products' FLOPs (2MNK each, masked scores included, as computed) of
 * one forward over T tokens; the elementwise kernels add well under 1%. */
static double forward_flops(const Basic *g, double T)
{
    const double n = g->n, l = g->l;
    const double head = 2 * T * n * l * 4 /* q, k, v_down, v_up */ + 2 * T * T * l + 2 * T * T * n;
    return g->layers * (g->heads * head + 4 * T * n * g->ff) + 2 * T * n * g->vocab;
}

/* ---- weights and buffers ---------------------------------------------------------------------- */

static int64_t slot(int64_t floats) { return (floats + 63) / 64 * 64; } /* 256-byte aligned slots */

static int64_t weight_floats(const Basic *g, int tied)
{
    const int64_t n = g->n, l = g->l, ff = g->ff;
    const int64_t layer = g->heads * 4 * slot(n * l) + slot(n * ff) * 2 + slot(ff) + slot(n);
    return slot(n * g->vocab) * (tied ? 1 : 2) + g->layers * layer;
}

static int64_t activation_floats(const Basic *g)
{
    const int64_t T = g->max_t, n = g->n, l = g->l;
    return 4 * slot(T * n) /* x, xa, v, de */ + 4 * slot(T * l) /* q, kt, k, vd */ + 2 * slot(T * T) +
           slot(T * g->ff) + slot(T * g->vocab);
}

/* W (rows x cols, fp32) as W^T into the weights' next slot (*at), via the host buffer tmp. */
static const char *put_t(Basic *g, int64_t *at, const float *W, int rows, int cols, float *tmp, const float **out)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            tmp[c * rows + r] = W[r * cols + c];
    float *dst = g->weights + *at;
    *at += slot((int64_t)rows * cols);
    *out = dst;
    return kb_cuda_status(cudaMemcpy(dst, tmp, sizeof(float) * (size_t)rows * cols, cudaMemcpyHostToDevice));
}

static const char *put_layer(Basic *g, const kb_basic_layer &L, int layer, int64_t *at, float *tmp)
{
    const int n = g->n, l = g->l, ff = g->ff;
    const int64_t block = (int64_t)l * n;
    for (int h = 0; h < g->heads; ++h) {
        HeadW &w = g->head[layer * g->heads + h];
        KB_TRY(put_t(g, at, L.wq + h * block, l, n, tmp, &w.q));
        KB_TRY(put_t(g, at, L.wk + h * block, l, n, tmp, &w.k));
        KB_TRY(put_t(g, at, L.wv_down + h * block, l, n, tmp, &w.vd));
        KB_TRY(put_t(g, at, L.wv_up + h * block, n, l, tmp, &w.vu));
    }
    LayerW &w = g->layer[layer];
    KB_TRY(put_t(g, at, L.w_up, ff, n, tmp, &w.up));
    KB_TRY(put_t(g, at, L.b_up, 1, ff, tmp, &w.b_up)); /* a vector is its own transpose */
    KB_TRY(put_t(g, at, L.w_down, n, ff, tmp, &w.down));
    return put_t(g, at, L.b_down, 1, n, tmp, &w.b_down);
}

static const char *upload(Basic *g, const kb_basic_model *m)
{
    const int64_t biggest = (int64_t)g->vocab * g->n > (int64_t)g->n * g->ff ? (int64_t)g->vocab * g->n
                                                                              : (int64_t)g->n * g->ff;
    float *tmp = (float *)malloc(sizeof(float) * (size_t)biggest);
    if (!tmp)
        return "out of host memory";
    int64_t at = 0;
    const char *err = put_t(g, &at, m->embed, g->vocab, g->n, tmp, &g->embT);
    g->woutT = g->embT;
    if (!err && !m->cfg.tied)
        err = put_t(g, &at, m->w_out, g->vocab, g->n, tmp, &g->woutT);
    for (int layer = 0; !err && layer < g->layers; ++layer)
        err = put_layer(g, m->layers[layer], layer, &at, tmp);
    free(tmp);
    return err;
}

static void carve_activations(Basic *g)
{
    const int64_t T = g->max_t, n = g->n, l = g->l;
    float *at = g->acts;
    float **tn[] = {&g->x, &g->xa, &g->v, &g->de}, **tl[] = {&g->q, &g->kt, &g->k, &g->vd};
    for (float **p : tn)
        *p = at, at += slot(T * n);
    for (float **p : tl)
        *p = at, at += slot(T * l);
    g->sc = at, at += slot(T * T);
    g->p = at, at += slot(T * T);
    g->h = at, at += slot(T * g->ff);
    g->logits = at;
}

/* Device memory for weights, activations and ids, refused up front when
 * it cannot fit (with room for cuBLAS's own workspace). */
static const char *allocate(Basic *g, int tied)
{
    static char why[160];
    const double need = 4.0 * (weight_floats(g, tied) + activation_floats(g)) + 4.0 * (g->max_t + 1);
    const double room = 256.0 * (1 << 20);
    size_t free_b = 0, total_b = 0;
    KB_TRY(kb_cuda_status(cudaMemGetInfo(&free_b, &total_b)));
    if (need + room > (double)free_b) {
        snprintf(why, sizeof why, "needs %.2f GiB of device memory, %.2f GiB free", (need + room) / (1 << 30),
                 (double)free_b / (1 << 30));
        return why;
    }
    KB_TRY(kb_cuda_status(cudaMalloc((void **)&g->weights, sizeof(float) * (size_t)weight_floats(g, tied))));
    KB_TRY(kb_cuda_status(cudaMalloc((void **)&g->acts, sizeof(float) * (size_t)activation_floats(g))));
    KB_TRY(kb_cuda_status(cudaMalloc((void **)&g->ids, sizeof(int) * (size_t)(g->max_t + 1))));
    carve_activations(g);
    return NULL;
}

/* ---- the variants ---------------------------------------------------------------------------- */

/* NULL when c's variant runs shape s, else one line why not. */
static const char *refused(const kb_call &c, const char *op_name, kb_shape s)
{
    static char why[256];
    const char *no = c.v->unsupported ? c.v->unsupported(&s) : NULL;
    if (no)
        snprintf(why, sizeof why, "%s %s at %lldx%lld: %s", op_name, c.v->name, (long long)s.d[0],
                 (long long)s.d[1], no);
    return no ? why : NULL;
}

/* Every product and softmax shape of a forward over 1..max_t tokens. */
static const char *fits(const Basic *g)
{
    for (int64_t T = 1; T <= g->max_t; ++T) {
        const int64_t mnk[][3] = {{T, g->l, g->n}, {T, g->n, g->l},  {T, T, g->l},         {T, g->n, T},
                                  {T, g->ff, g->n}, {T, g->n, g->ff}, {T, g->vocab, g->n}};
        for (const auto &d : mnk)
            KB_TRY(refused(g->mm, "matmul", kb_shape{3, {d[0], d[1], d[2]}}));
        KB_TRY(refused(g->sm, "softmax", kb_shape{2, {T, T}}));
    }
    return NULL;
}

/* Both variants' setups are shape-free (cuBLAS's handle; none for the
 * softmax), so one setup serves every length a forward runs. */
static const char *setup_variants(Basic *g)
{
    kb_matmul_args ma = {};
    ma.M = ma.N = ma.K = g->max_t, ma.A = g->x, ma.B = g->x, ma.C = g->h;
    const kb_softmax_args sa = {g->max_t, g->max_t, g->sc, g->p};
    KB_TRY(kb_call_setup(&g->mm, "matmul", kMatmul, KB_F32, &ma));
    KB_TRY(kb_call_setup(&g->sm, "softmax", kSoftmax, KB_F32, &sa));
    KB_TRY(kb_stage_ends_setup(&g->ends));
    const kb_transpose_args tr = {};
    const kb_mask_args mask = {};
    const kb_add_args add = {};
    const kb_bias_args bias = {};
    KB_TRY(kb_call_setup(&g->tr, "transpose", "naive", KB_F32, &tr));
    KB_TRY(kb_call_setup(&g->mask, "mask", "naive", KB_F32, &mask));
    KB_TRY(kb_call_setup(&g->add, "add", "naive", KB_F32, &add));
    KB_TRY(kb_call_setup(&g->bias, "bias", "naive", KB_F32, &bias));
    return fits(g);
}

static void destroy(Basic *g)
{
    for (kb_call *c : {&g->mm, &g->sm, &g->tr, &g->mask, &g->add, &g->bias})
        kb_call_teardown(c);
    kb_stage_ends_teardown(&g->ends);
    if (g->s)
        cudaStreamDestroy(g->s);
    cudaFree(g->weights);
    cudaFree(g->acts);
    cudaFree(g->ids);
    free(g->head);
    free(g->layer);
}

/* ---- the check ---------------------------------------------------------------------------------- */

/* rows x vocab GPU logits against the reference's: the worst row's rel. L2
 * (Inf for a NaN or Inf anywhere). */
static double worst_row(const float *gpu, const double *ref, int rows, int vocab)
{
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
        double e = 0, n = 0;
        for (int64_t v = 0; v < vocab; ++v) {
            const double x = gpu[r * vocab + v], y = ref[r * vocab + v];
            if (!isfinite(x))
                return INFINITY;
            e += (x - y) * (x - y), n += y * y;
        }
        worst = fmax(worst, sqrt(e / n));
    }
    return worst;
}

/* The pick at each of positions [from, to): ids[p + 1] within tol of the
 * reference's best logit at p, relative to the row's L2 norm (a near tie
 * may fall either way in fp32). */
static int picks_agree(const int *ids, const double *ref, int from, int to, int vocab, double tol)
{
    for (int64_t p = from; p < to; ++p) {
        const double *row = ref + p * vocab;
        double best = row[0], norm = 0;
        for (int v = 0; v < vocab; ++v)
            best = fmax(best, row[v]), norm += row[v] * row[v];
        if (best - row[ids[p + 1]] > tol * sqrt(norm))
            return 0;
    }
    return 1;
}

struct Host {
    int *ids;
    float *pre, *dec;
    double *ref;
};

/* The GPU side of the check: prefill logits of the first `t` prompt tokens
 * into h->pre, then kCheckSteps decode steps, the last one's logits into
 * h->dec and every id into h->ids. */
static const char *gpu_check_run(Basic *g, const int *prompt, int t, Host *h)
{
    const int last = t + kCheckSteps; /* the last step's sequence */
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(g->ids, prompt, sizeof(int) * t, cudaMemcpyHostToDevice, g->s)));
    KB_TRY(step(g, t));
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(h->pre, g->logits, sizeof(float) * (size_t)t * g->vocab,
                                       cudaMemcpyDeviceToHost, g->s)));
    KB_TRY(decode(g, t + 1, kCheckSteps));
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(h->dec, g->logits, sizeof(float) * (size_t)last * g->vocab,
                                       cudaMemcpyDeviceToHost, g->s)));
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(h->ids, g->ids, sizeof(int) * (size_t)(last + 1), cudaMemcpyDeviceToHost,
                                       g->s)));
    return kb_cuda_status(cudaStreamSynchronize(g->s));
}

/* The check at the reduced length into r->rel_l2 and r->pass. */
static const char *check(Basic *g, const kb_basic_model *m, const int *prompt, kb_stage_result *r)
{
    const int t = g->prompt < KB_STAGE_CHECK_PROMPT ? g->prompt : KB_STAGE_CHECK_PROMPT, last = t + kCheckSteps;
    const size_t cells = (size_t)last * g->vocab;
    Host h = {(int *)malloc(sizeof(int) * (size_t)(last + 1)), (float *)malloc(sizeof(float) * cells),
              (float *)malloc(sizeof(float) * cells), (double *)malloc(sizeof(double) * cells)};
    const char *err = !h.ids || !h.pre || !h.dec || !h.ref ? "out of host memory" : gpu_check_run(g, prompt, t, &h);
    if (!err && kb_basic_forward(m, h.ids, last, h.ref) != 0)
        err = "out of host memory for the reference";
    if (!err) {
        r->rel_l2 = fmax(worst_row(h.pre, h.ref, t, g->vocab), worst_row(h.dec, h.ref, last, g->vocab));
        r->checked_tokens = last;
        r->pass = r->rel_l2 <= r->tolerance && picks_agree(h.ids, h.ref, t - 1, last, g->vocab, r->tolerance);
    }
    free(h.ids);
    free(h.pre);
    free(h.dec);
    free(h.ref);
    return err;
}

/* ---- the stage ------------------------------------------------------------------------------------ */

/* Each decode sample recomputes tokens sequences: the time cap, not a
 * count, bounds what it costs. */
static const char *timed(Basic *g, const kb_time_opts *timing, const int *prompt, kb_stage_result *r)
{
    KB_TRY(kb_cuda_status(cudaMemcpyAsync(g->ids, prompt, sizeof(int) * g->prompt, cudaMemcpyHostToDevice, g->s)));
    KB_TRY(kb_stage_time(timing, prefill_run, g, g->s, 1, &r->prefill));
    return kb_stage_time(timing, decode_run, g, g->s, g->tokens, &r->decode);
}

static void count(const Basic *g, const kb_basic_config *c, kb_stage_result *r)
{
    r->dtype = "f32";
    r->prefill_flops = forward_flops(g, g->prompt);
    r->decode_flops = 0;
    for (int s = 0; s < g->tokens; ++s)
        r->decode_flops += forward_flops(g, g->prompt + 1 + s) / g->tokens;
    r->decode_bytes = 4.0 * (double)kb_basic_weight_count(c); /* every weight once, no cache */
    r->tolerance = kb_model_rel_l2_tolerance();
    snprintf(r->how, sizeof r->how, "recomputes the sequence");
}

/* The seeded model on the host, its weights on the device, the variants. */
static const char *prepare(Basic *g, const kb_stage_shape *shape, const kb_basic_config *c, kb_basic_model *m)
{
    if (kb_basic_init_random(m, c, shape->seed) != 0)
        return "out of host memory for the model";
    KB_TRY(kb_cuda_status(cudaStreamCreate(&g->s))); /* ordered after the weights' cudaMemcpy */
    KB_TRY(upload(g, m));
    return setup_variants(g);
}

/* Device memory (refused first when it cannot fit), then the model, the
 * check and the timing; every path frees what it made. */
static const char *run(Basic *g, const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r)
{
    const kb_basic_config c = {shape->layers, shape->d_model, shape->heads, shape->d_ff, shape->vocab, shape->tied};
    kb_basic_model m = {};
    int *prompt = (int *)malloc(sizeof(int) * (size_t)g->prompt);
    g->head = (HeadW *)calloc((size_t)g->layers * g->heads, sizeof(HeadW));
    g->layer = (LayerW *)calloc((size_t)g->layers, sizeof(LayerW));
    const char *err = !prompt || !g->head || !g->layer ? "out of host memory" : allocate(g, c.tied);
    if (!err)
        err = prepare(g, shape, &c, &m);
    if (!err) {
        kb_stage_prompt(shape, prompt, g->prompt);
        count(g, &c, r);
        err = check(g, &m, prompt, r);
    }
    if (!err)
        err = timed(g, timing, prompt, r);
    kb_basic_free(&m);
    free(prompt);
    return err;
}

/* One line on a shape this stage cannot run, or NULL. */
static const char *refusal(const kb_stage_shape *s)
{
    if (s->layers < 1 || s->d_model < 1 || s->heads < 1 || s->d_ff < 1 || s->vocab < 1 || s->prompt < 1 ||
        s->tokens < 1)
        return "every size, the prompt and the decode steps must be at least 1";
    if (s->d_model % s->heads)
        return "d_model is not a multiple of heads";
    if ((int64_t)s->prompt + s->tokens > 1 << 20)
        return "the sequence is too long for the t x t scores";
    return NULL;
}

extern "C" int kb_stage_basic(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                              size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *why = refusal(shape);
    if (why) {
        snprintf(err, errlen, "basic: %s", why);
        return -1;
    }
    Basic g = {};
    g.n = shape->d_model, g.heads = shape->heads, g.l = g.n / g.heads, g.ff = shape->d_ff, g.vocab = shape->vocab;
    g.layers = shape->layers, g.prompt = shape->prompt, g.tokens = shape->tokens;
    const int checked = KB_STAGE_CHECK_PROMPT + kCheckSteps;
    g.max_t = g.prompt + g.tokens > checked ? g.prompt + g.tokens : checked;
    why = run(&g, shape, timing, r);
    destroy(&g);
    if (why) {
        snprintf(err, errlen, "basic: %s", why);
        return -1;
    }
    return 0;
}
