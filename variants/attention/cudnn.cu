/* attention cudnn: the library baseline of the bf16 and f16 rows, cuDNN's fused
 * flash attention (the engine PyTorch's SDPA runs on Hopper), called from C
 * through the cuDNN backend (graph) API.  cuDNN's one-operation SDPA (9.13
 * on) takes a causal mask only from 9.21, so setup writes the operation
 * graph that cudnn-frontend's SDPA node expands into, which cuDNN's fused
 * engines recognise as one kernel:
 *   S = scale * Q K^T   MATMUL (fp32), POINTWISE MUL by a by-value scale;
 *   causal mask         GEN_INDEX of rows and of columns, the rows shifted
 *                       by ADD Tk and SUB Tq (bottom right; left out when
 *                       Tq = Tk), CMP_GE, BINARY_SELECT of S or -inf;
 *   P = softmax(S)      REDUCTION MAX, SUB, EXP, REDUCTION ADD, DIV; LOG and
 *                       ADD give the row statistics as a virtual tensor,
 *                       which the engines read as inference (nothing stored);
 *   O = P V             MATMUL with P in bf16.
 * Intermediates are virtual (fp32 scores and row values, int32 indices, a
 * boolean mask, P in bf16).  K enters as K^T, a (B, Hkv, D, Tk)
 * view by strides; grouped-query attention is K and V with Hkv heads beside
 * Q's H.  A causal Tq = 1 row sees every key and runs unmasked.  Setup
 * takes the first engine config of the heuristics (mode A) whose plan
 * finalizes, and its workspace; launch binds the tensors in a variant pack,
 * rebuilt only when the pointers change (kernels/cudnn_graph.h has the
 * graph helpers, shared with attention_backward cudnn).
 * SKIPs: D not a multiple of 8 or over 256 (cuDNN's head dims); causal with
 * Tq > Tk (cuDNN's bottom-right mask needs Tq <= Tk, so no row is empty);
 * what cudnn-frontend refuses by version (9.10.0 and 9.10.1; the
 * bottom-right mask before 9.6 off multiples of 64); any graph cuDNN will
 * not plan, with cuDNN's reason.
 *
 * Builds on: the library baseline of the bf16 rows.
 * Measured (results/h100/kbench-20261127-195738.csv, 1980 MHz unless
 * noted, the GPU machine's cuDNN 9.14): 675 TFLOP/s at 2x16x4096x4096x128,
 * 540 at 4x16x4096x4096x64 (at 1945 MHz), 722 at 2x16x4096x4096x256; 2079
 * GB/s of K and V at the decode shape 1x32x1x32768x128x8, 3077 at
 * 8x32x1x131072x128x8.
 * Gap to the limit: 70% of the run's bf16 ceiling (967 TFLOP/s) at
 * D = 128, 75% at D = 256; decode at B = 8 and more reads at the copy
 * ceiling (3005 GB/s), at B = 1 at 69% of it.
 * The f16 form: the same graph on CUDNN_DATA_HALF tensors (and P).  Measured
 * f16 (results/h200/kbench-20261202-075017.csv, H200): 656.0 TFLOP/s at
 * 4x16x8192x8192x128 (1901 MHz), 69.0% of that run's 951 TFLOP/s tensor
 * ceiling, 692.5 (72.8%) at 2x16x4096x4096x256; decode 2,663 GB/s (62.9% of
 * its 4237 GB/s copy ceiling) at 1x32x1x32768x128x8, 4,472 (105.5%) at B = 8,
 * Tk = 131072. */
#include <stdint.h>
#include <stdlib.h>
#include "kernels/cudnn_graph.h"
#include "ops/attention.h"

using namespace kb_cudnn;

/* Tensor uids: the caller's four tensors, the by-value scalars, then the
 * graph's virtual intermediates. */
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_SCALE, UID_FILL, UID_TK, UID_TQ, UID_VIRTUAL = 100 };

typedef struct {
    Plan p;                  /* first: the graph, the plan and the pack */
    kb_attention_args built; /* the shape the plan computes */
    /* The by-value scalars, which cuDNN reads from here on each launch. */
    float scale, fill;
    int32_t tk, tq;
} cudnn_ctx;

/* ---- the attention graph ------------------------------------------------------ */

static bool needs_mask(const kb_attention_args *a) { return kb_cudnn::needs_mask(a->causal, a->Tq); }
static bool bottom_right(const kb_attention_args *a) { return kb_cudnn::bottom_right(a->causal, a->Tq, a->Tk); }

/* scale * Q K^T; K enters as K^T by its strides, with Hkv heads. */
static Desc scores(Graph *g, cudnn_ctx *c, const kb_attention_args *a, int64_t hkv)
{
    const int64_t D = a->D, Tk = a->Tk;
    const Layout q = packed(a->B, a->H, a->Tq, D);
    const Layout kt = {{a->B, hkv, D, Tk}, {hkv * Tk * D, Tk * D, 1, D}};
    Desc qk = score(g, CUDNN_DATA_FLOAT);
    matmul(g, device_tensor(g, UID_Q, q), device_tensor(g, UID_K, kt), qk);
    c->scale = a->scale;
    Desc scale = scalar(g, UID_SCALE, CUDNN_DATA_FLOAT, &c->scale);
    return pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, qk, scale, NULL, score(g, CUDNN_DATA_FLOAT));
}

/* S where query row i may see key j (i + Tk - Tq >= j), a fill value
 * elsewhere (kb_cudnn::causal_mask); the shift + Tk - Tq by by-value
 * scalars.  No row is wholly masked while Tq <= Tk. */
static Desc causal_mask(Graph *g, cudnn_ctx *c, Desc s, const kb_attention_args *a)
{
    Desc tk = NULL, tq = NULL;
    if (bottom_right(a)) {
        c->tk = a->Tk;
        c->tq = a->Tq;
        tk = scalar(g, UID_TK, CUDNN_DATA_INT32, &c->tk);
        tq = scalar(g, UID_TQ, CUDNN_DATA_INT32, &c->tq);
    }
    c->fill = mask_fill();
    Desc fill = scalar(g, UID_FILL, CUDNN_DATA_FLOAT, &c->fill);
    return kb_cudnn::causal_mask(g, s, tk, tq, fill);
}

/* softmax(S) over the keys, as cudnn-frontend expands it for flash
 * attention.  The statistics max + log(sum) stay virtual: the engines take
 * that as inference.  P is in the inputs' type, the second product's A operand's. */
static Desc softmax(Graph *g, Desc s)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Desc m = reduce(g, CUDNN_REDUCE_TENSOR_MAX, s, per_row(g));
    Desc e = pointwise(g, CUDNN_POINTWISE_SUB, f32, s, m, NULL, score(g, f32));
    e = pointwise(g, CUDNN_POINTWISE_EXP, f32, e, NULL, NULL, score(g, f32));
    Desc z = reduce(g, CUDNN_REDUCE_TENSOR_ADD, e, per_row(g));
    Desc log_z = pointwise(g, CUDNN_POINTWISE_LOG, f32, z, NULL, NULL, per_row(g));
    pointwise(g, CUDNN_POINTWISE_ADD, f32, m, log_z, NULL, per_row(g));
    return pointwise(g, CUDNN_POINTWISE_DIV, f32, e, z, NULL, score(g, g->c->io));
}

static Desc attention_graph(Graph *g, cudnn_ctx *c, const kb_attention_args *a)
{
    const int64_t hkv = a->H / kb_attention_group(a);
    g->s = packed(a->B, a->H, a->Tq, a->Tk);
    g->row = packed(a->B, a->H, a->Tq, 1);
    Desc p = scores(g, c, a, hkv);
    if (needs_mask(a))
        p = causal_mask(g, c, p, a);
    p = softmax(g, p);
    matmul(g, p, device_tensor(g, UID_V, packed(a->B, hkv, a->Tk, a->D)),
           device_tensor(g, UID_O, packed(a->B, a->H, a->Tq, a->D)));
    return operation_graph(g);
}

/* What cudnn-frontend's SDPA refuses by version before asking cuDNN
 * (sdpa_support_surface.h): bf16 forward bugs in 9.10.0 and 9.10.1, and the
 * bottom-right mask before 9.6 off multiples of 64. */
static const char *version_refuses(const kb_attention_args *a)
{
    const size_t v = cudnnGetVersion();
    if (v == 91000 || v == 91001)
        return "cuDNN 9.10.0 and 9.10.1 have known bugs in bf16 SDPA forward (cudnn-frontend refuses them)";
    if (bottom_right(a) && v < 90600 && (a->Tq % 64 || a->Tk % 64))
        return "cuDNN before 9.6 has the bottom-right causal mask only for Tq and Tk multiples of 64";
    return NULL;
}

static void teardown(void *p)
{
    cudnn_ctx *c = (cudnn_ctx *)p;
    if (!c)
        return;
    release(&c->p);
    free(c);
}

/* The handle, the graph, a plan and its workspace, outside all timing,
 * for tensors of cuDNN type IO. */
template <cudnnDataType_t IO>
static const char *setup(const void *args, void **ctx)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    *ctx = NULL;
    const char *why = version_refuses(a);
    if (why)
        return why;
    cudnn_ctx *c = (cudnn_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    c->built = *a;
    static const int64_t device_uids[4] = {UID_Q, UID_K, UID_V, UID_O};
    why = open_plan(&c->p, IO, device_uids, 4);
    if (!why) {
        Graph g;
        begin_graph(&g, &c->p, UID_VIRTUAL);
        why = finish_plan(&g, attention_graph(&g, c, a));
    }
    if (why) {
        teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

static bool same_shape(const kb_attention_args *x, const kb_attention_args *y)
{
    return x->B == y->B && x->H == y->H && x->Hkv == y->Hkv && x->Tq == y->Tq && x->Tk == y->Tk && x->D == y->D &&
           x->causal == y->causal && x->scale == y->scale;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    cudnn_ctx *c = (cudnn_ctx *)ctx;
    if (a->tk_len)
        return "cudnn reads no device key count";
    if (a->kv_stride)
        return "cudnn takes contiguous K and V (no kv_stride)";
    if (!same_shape(&c->built, a))
        return "cudnn's plan was built for another shape";
    if (((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v | (uintptr_t)a->o) & 15)
        return "cudnn needs 16-byte aligned tensors";
    const void *t[4] = {a->q, a->k, a->v, a->o};
    return execute(&c->p, t, stream);
}

static const char *unsupported(const kb_shape *s)
{
    const int64_t D = s->d[4];
    if (D % 8 || D > 256)
        return "cuDNN's fused attention takes D a multiple of 8 up to 256";
    if (s->flags && s->d[2] > s->d[3])
        return "causal with Tq > Tk: cuDNN's bottom-right causal mask needs Tq <= Tk (no row without a key)";
    return NULL;
}

extern "C" const kb_variant attention_cudnn[] = {
    {
        .name = "cudnn",
        .summary = "cuDNN fused flash attention (backend graph API), bf16, fp32 accumulation (library baseline)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUDNN,
        .min_cc = 80, /* cuDNN's fused attention engines: sm_80 and newer */
        .unsupported = unsupported,
        .setup = setup<CUDNN_DATA_BFLOAT16>,
        .teardown = teardown,
        .launch = launch,
    },
    {
        .name = "cudnn",
        .summary = "cuDNN fused flash attention (backend graph API), f16, fp32 accumulation (library baseline)",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .needs = KB_NEEDS_CUDNN,
        .min_cc = 80,
        .unsupported = unsupported,
        .setup = setup<CUDNN_DATA_HALF>,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
