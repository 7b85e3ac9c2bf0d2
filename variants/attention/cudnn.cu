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
 * rebuilt only when the pointers change.
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
#include <cudnn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/attention.h"

typedef cudnnBackendDescriptor_t Desc;

/* Tensor uids: the caller's four tensors, the by-value scalars, then the
 * graph's virtual intermediates. */
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_SCALE, UID_FILL, UID_TK, UID_TQ, UID_VIRTUAL = 100 };

/* Room for the largest graph (16 operations; about 90 descriptors with
 * every engine config and plan tried) and its variant pack (4 tensors,
 * 4 scalars). */
enum { kMaxOps = 20, kMaxConfigs = 16, kMaxDescs = 128, kMaxPack = 8 };

typedef struct {
    cudnnHandle_t handle;
    cudnnDataType_t io;    /* Q, K, V, O and P: bf16 or f16 (the form's dtype) */
    Desc descs[kMaxDescs]; /* every descriptor of the graph and plan, kept alive with the plan */
    int ndescs;
    Desc plan;
    void *workspace;
    kb_attention_args built; /* the shape the plan computes */
    /* The variant pack: uids and pointers, q, k, v, o first, then the
     * by-value scalars, which cuDNN reads from the host values below. */
    int64_t uids[kMaxPack];
    void *ptrs[kMaxPack];
    int npack;
    float scale, fill;
    int32_t tk, tq;
    Desc pack;            /* bound to `bound`, NULL before the first launch */
    const void *bound[4]; /* q, k, v, o */
} cudnn_ctx;

typedef struct { int64_t dim[4], stride[4]; } layout;

/* A graph under construction.  The first failing call sets st and step, and
 * every later call does nothing, so the graph reads as straight-line code. */
typedef struct {
    cudnn_ctx *c;
    Desc ops[kMaxOps];
    int nops;
    int64_t next_uid;
    layout s, row; /* the (B, H, Tq, Tk) scores, the (B, H, Tq, 1) row values */
    cudnnStatus_t st;
    const char *step;
} graph;

static layout packed(int64_t a, int64_t b, int64_t c, int64_t d)
{
    const layout l = {{a, b, c, d}, {b * c * d, c * d, d, 1}};
    return l;
}

/* A failed step in cuDNN's words: its version, the status and the root
 * cause from its error log (the first "Reason: " line, which names the
 * failed check; else the log's first line).  The text stays valid until the
 * next failure. */
static const char *failure(const char *step, cudnnStatus_t s)
{
    static char why[192];
    char log[1024] = "";
    cudnnGetLastErrorString(log, sizeof log);
    const char *reason = strstr(log, "Reason: ");
    const char *cause = reason ? reason + strlen("Reason: ") : log;
    const int len = (int)strcspn(cause, "\n");
    const size_t v = cudnnGetVersion();
    snprintf(why, sizeof why, "cuDNN %zu.%zu.%zu, %s: %s%s%.*s", v / 10000, v / 100 % 100, v % 100, step,
             cudnnGetErrorString(s), len ? ": " : "", len, cause);
    return why;
}

static bool ok(graph *g, cudnnStatus_t s, const char *step)
{
    if (!g->st && s) {
        g->st = s;
        g->step = step;
    }
    return !g->st;
}

static Desc make(graph *g, cudnnBackendDescriptorType_t type)
{
    cudnn_ctx *c = g->c;
    Desc d = NULL;
    if (c->ndescs == kMaxDescs)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's descriptor table is full");
    if (!g->st && ok(g, cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor"))
        c->descs[c->ndescs++] = d;
    return d;
}

static void set(graph *g, Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
                const void *value)
{
    if (!g->st)
        ok(g, cudnnBackendSetAttribute(d, name, type, n, value), "cudnnBackendSetAttribute");
}

static void finalize(graph *g, Desc d, const char *what)
{
    if (!g->st)
        ok(g, cudnnBackendFinalize(d), what);
}

/* ---- tensors ---------------------------------------------------------------- */

static Desc tensor(graph *g, int64_t uid, cudnnDataType_t type, const int64_t *dim, const int64_t *stride,
                   bool is_virtual, bool by_value)
{
    const int64_t align = 16; /* the tensor-core engines' requirement; D % 8 == 0 keeps every row there */
    Desc t = make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dim);
    set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, stride);
    set(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    finalize(g, t, "finalizing a tensor");
    return t;
}

/* One of the caller's tensors, bound in the variant pack at launch. */
static Desc device_tensor(graph *g, int64_t uid, const layout &l)
{
    return tensor(g, uid, g->c->io, l.dim, l.stride, false, false);
}

/* An intermediate in the scores' shape, or one value per query row. */
static Desc score(graph *g, cudnnDataType_t type)
{
    return tensor(g, g->next_uid++, type, g->s.dim, g->s.stride, true, false);
}

static Desc per_row(graph *g)
{
    return tensor(g, g->next_uid++, CUDNN_DATA_FLOAT, g->row.dim, g->row.stride, true, false);
}

/* A by-value scalar (1x1x1x1, broadcast), which cuDNN reads from the host
 * at `value` on each launch; it joins the variant pack. */
static Desc scalar(graph *g, int64_t uid, cudnnDataType_t type, void *value)
{
    static const int64_t one[4] = {1, 1, 1, 1};
    cudnn_ctx *c = g->c;
    c->uids[c->npack] = uid;
    c->ptrs[c->npack++] = value;
    return tensor(g, uid, type, one, one, false, true);
}

/* ---- operations --------------------------------------------------------------- */

static void add_op(graph *g, Desc op, const char *what)
{
    finalize(g, op, what);
    if (g->nops == kMaxOps)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's operation table is full");
    if (!g->st)
        g->ops[g->nops++] = op;
}

static Desc pw_desc(graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec)
{
    Desc pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    return pw;
}

/* y = pw(x, b, t); b and t are NULL for the modes that do not take them. */
static Desc pw_op(graph *g, Desc pw, Desc x, Desc b, Desc t, Desc y)
{
    finalize(g, pw, "finalizing a pointwise descriptor");
    Desc op = make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw);
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b)
        set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    if (t)
        set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t);
    set(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    add_op(g, op, "finalizing a pointwise operation");
    return y;
}

static Desc pointwise(graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, Desc x, Desc b, Desc t, Desc y)
{
    return pw_op(g, pw_desc(g, mode, prec), x, b, t, y);
}

/* Each score's index along `axis`: 2 for its query row, 3 for its key. */
static Desc gen_index(graph *g, Desc s, int64_t axis)
{
    Desc pw = pw_desc(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32);
    set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    return pw_op(g, pw, s, NULL, NULL, score(g, CUDNN_DATA_INT32));
}

static void matmul(graph *g, Desc a, Desc b, Desc c)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Desc mm = make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(g, mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    finalize(g, mm, "finalizing a matmul descriptor");
    Desc op = make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a);
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c);
    set(g, op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm);
    add_op(g, op, "finalizing a matmul operation");
}

/* One value per query row: the max or the sum over its keys. */
static Desc reduce(graph *g, cudnnReduceTensorOp_t how, Desc x)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Desc r = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(g, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
    set(g, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    finalize(g, r, "finalizing a reduction descriptor");
    Desc y = per_row(g);
    Desc op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &r);
    add_op(g, op, "finalizing a reduction operation");
    return y;
}

/* ---- the attention graph ------------------------------------------------------ */

/* A causal row with Tq = 1 sees every key: only longer ones need the mask,
 * bottom-right aligned (shifted) when Tq != Tk. */
static bool needs_mask(const kb_attention_args *a) { return a->causal && a->Tq > 1; }
static bool bottom_right(const kb_attention_args *a) { return needs_mask(a) && a->Tq != a->Tk; }

/* scale * Q K^T; K enters as K^T by its strides, with Hkv heads. */
static Desc scores(graph *g, const kb_attention_args *a, int64_t hkv)
{
    cudnn_ctx *c = g->c;
    const int64_t D = a->D, Tk = a->Tk;
    const layout q = packed(a->B, a->H, a->Tq, D);
    const layout kt = {{a->B, hkv, D, Tk}, {hkv * Tk * D, Tk * D, 1, D}};
    Desc qk = score(g, CUDNN_DATA_FLOAT);
    matmul(g, device_tensor(g, UID_Q, q), device_tensor(g, UID_K, kt), qk);
    c->scale = a->scale;
    Desc scale = scalar(g, UID_SCALE, CUDNN_DATA_FLOAT, &c->scale);
    return pointwise(g, CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, qk, scale, NULL, score(g, CUDNN_DATA_FLOAT));
}

/* S where query row i may see key j (i + Tk - Tq >= j), a fill value
 * elsewhere.  The shift is two int32 steps, + Tk then - Tq, as
 * cudnn-frontend writes it, so that the engines recognise the pattern.
 * The fill is FLT_MAX's negative before cuDNN 9.10 and -inf after,
 * as cudnn-frontend picks it; no row is wholly masked while Tq <= Tk. */
static Desc causal_mask(graph *g, Desc s, const kb_attention_args *a)
{
    cudnn_ctx *c = g->c;
    Desc row = gen_index(g, s, 2);
    if (bottom_right(a)) {
        c->tk = a->Tk;
        c->tq = a->Tq;
        row = pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, scalar(g, UID_TK, CUDNN_DATA_INT32, &c->tk),
                        NULL, score(g, CUDNN_DATA_INT32));
        row = pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row, scalar(g, UID_TQ, CUDNN_DATA_INT32, &c->tq),
                        NULL, score(g, CUDNN_DATA_INT32));
    }
    Desc col = gen_index(g, s, 3);
    Desc keep = pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, score(g, CUDNN_DATA_BOOLEAN));
    c->fill = cudnnGetVersion() < 91000 ? -FLT_MAX : -INFINITY;
    Desc fill = scalar(g, UID_FILL, CUDNN_DATA_FLOAT, &c->fill);
    return pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, fill, keep, score(g, CUDNN_DATA_FLOAT));
}

/* softmax(S) over the keys, as cudnn-frontend expands it for flash
 * attention.  The statistics max + log(sum) stay virtual: the engines take
 * that as inference.  P is in the inputs' type, the second product's A operand's. */
static Desc softmax(graph *g, Desc s)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Desc m = reduce(g, CUDNN_REDUCE_TENSOR_MAX, s);
    Desc e = pointwise(g, CUDNN_POINTWISE_SUB, f32, s, m, NULL, score(g, f32));
    e = pointwise(g, CUDNN_POINTWISE_EXP, f32, e, NULL, NULL, score(g, f32));
    Desc z = reduce(g, CUDNN_REDUCE_TENSOR_ADD, e);
    Desc log_z = pointwise(g, CUDNN_POINTWISE_LOG, f32, z, NULL, NULL, per_row(g));
    pointwise(g, CUDNN_POINTWISE_ADD, f32, m, log_z, NULL, per_row(g));
    return pointwise(g, CUDNN_POINTWISE_DIV, f32, e, z, NULL, score(g, g->c->io));
}

static Desc attention_graph(graph *g, const kb_attention_args *a)
{
    const int64_t hkv = a->H / kb_attention_group(a);
    g->s = packed(a->B, a->H, a->Tq, a->Tk);
    g->row = packed(a->B, a->H, a->Tq, 1);
    Desc p = scores(g, a, hkv);
    if (needs_mask(a))
        p = causal_mask(g, p, a);
    p = softmax(g, p);
    matmul(g, p, device_tensor(g, UID_V, packed(a->B, hkv, a->Tk, a->D)),
           device_tensor(g, UID_O, packed(a->B, a->H, a->Tq, a->D)));
    Desc og = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->c->handle); /* needed before 9.8 */
    finalize(g, og, "finalizing the operation graph");
    return og;
}

/* The first engine config in the heuristics' order whose plan finalizes:
 * a config may still refuse the shape (a head dim, an architecture). */
static void choose_plan(graph *g, Desc og)
{
    cudnn_ctx *c = g->c;
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    Desc heur = make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og);
    set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    finalize(g, heur, "finalizing the engine heuristics");
    int64_t n = 0;
    if (!g->st)
        ok(g, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL),
           "counting the engine configs");
    if (n > kMaxConfigs)
        n = kMaxConfigs;
    Desc cfg[kMaxConfigs];
    for (int64_t i = 0; i < n; ++i)
        cfg[i] = make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (!g->st && n)
        ok(g, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n, cfg),
           "reading the engine configs");
    cudnnStatus_t s = CUDNN_STATUS_NOT_SUPPORTED;
    for (int64_t i = 0; i < n && !g->st; ++i) {
        Desc plan = make(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle);
        set(g, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]);
        if (!g->st && (s = cudnnBackendFinalize(plan)) == CUDNN_STATUS_SUCCESS) {
            c->plan = plan;
            return;
        }
    }
    ok(g, s, n ? "no engine config of the heuristics finalized" : "the heuristics found no engine");
}

static const char *alloc_workspace(cudnn_ctx *c)
{
    int64_t bytes = 0, n = 0;
    cudnnStatus_t s = cudnnBackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                               1, &n, &bytes);
    if (s)
        return failure("reading the workspace size", s);
    if (bytes > 0 && cudaMalloc(&c->workspace, (size_t)bytes) != cudaSuccess) {
        cudaGetLastError(); /* clear it: the next launch must not see it */
        c->workspace = NULL;
        return "cudaMalloc of cuDNN's workspace failed";
    }
    return NULL;
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
    if (c->pack)
        cudnnBackendDestroyDescriptor(c->pack);
    while (c->ndescs > 0)
        cudnnBackendDestroyDescriptor(c->descs[--c->ndescs]);
    cudaFree(c->workspace);
    if (c->handle)
        cudnnDestroy(c->handle);
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
    c->io = IO;
    const int64_t device_uids[4] = {UID_Q, UID_K, UID_V, UID_O};
    memcpy(c->uids, device_uids, sizeof device_uids);
    c->npack = 4; /* their pointers come at launch */
    cudnnStatus_t s = cudnnCreate(&c->handle);
    if (s) {
        why = failure("cudnnCreate", s);
    } else {
        graph g;
        memset(&g, 0, sizeof g);
        g.c = c;
        g.next_uid = UID_VIRTUAL;
        choose_plan(&g, attention_graph(&g, a));
        why = g.st ? failure(g.step, g.st) : alloc_workspace(c);
    }
    if (why) {
        teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

/* A variant pack of a's tensors, the scalars and the workspace. */
static const char *bind(cudnn_ctx *c, const kb_attention_args *a)
{
    const void *t[4] = {a->q, a->k, a->v, a->o};
    Desc pack = NULL;
    if (c->pack)
        cudnnBackendDestroyDescriptor(c->pack);
    c->pack = NULL;
    for (int i = 0; i < 4; ++i)
        c->ptrs[i] = (void *)t[i];
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    if (!s)
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, c->npack, c->uids);
    if (!s)
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, c->npack,
                                     c->ptrs);
    if (!s)
        s = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &c->workspace);
    if (!s)
        s = cudnnBackendFinalize(pack);
    if (s) {
        if (pack)
            cudnnBackendDestroyDescriptor(pack);
        return failure("building the variant pack", s);
    }
    c->pack = pack;
    memcpy(c->bound, t, sizeof t);
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
    if (!c->pack || memcmp(c->bound, t, sizeof t)) {
        const char *e = bind(c, a); /* other tensors than last time: a few microseconds on the host */
        if (e)
            return e;
    }
    cudnnStatus_t s = cudnnSetStream(c->handle, stream);
    if (!s)
        s = cudnnBackendExecute(c->handle, c->plan, c->pack);
    return s ? failure("cudnnBackendExecute", s) : NULL;
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
