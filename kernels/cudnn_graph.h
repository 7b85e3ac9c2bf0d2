/* The host side of the variants that build a cuDNN backend (graph API)
 * operation graph (attention cudnn, attention_backward cudnn): a table of
 * every descriptor, kept alive with the plan and destroyed with it; a graph
 * under construction that records its first failing call, so that a graph
 * reads as straight-line code; the tensors, pointwise, matmul, reduction and
 * reshape operations those graphs use, and the causal mask they share; the
 * plan (the first engine config of the heuristics, mode A, that finalizes)
 * and its workspace; the variant pack, rebuilt only when the caller's
 * pointers change; cuDNN's reason for a failure.  C++ with static inline
 * functions in namespace kb_cudnn, included by each variant file. */
#ifndef KBENCH_CUDNN_GRAPH_H
#define KBENCH_CUDNN_GRAPH_H

#include <cuda_runtime.h>
#include <cudnn.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace kb_cudnn {

typedef cudnnBackendDescriptor_t Desc;

/* Room for the largest graph, the attention backward's (about 40
 * operations, some 130 descriptors, with every engine config and plan tried
 * some 170), and its variant pack (the caller's 9 tensors, 4 in a scratch
 * buffer, 7 by-value scalars).  The forward uses 16 operations, about 90
 * descriptors and 8 pack entries. */
enum { kMaxOps = 64, kMaxConfigs = 16, kMaxDescs = 320, kMaxPack = 32 };

/* A plan and what it needs at launch.  The pack's first nbound entries are
 * the caller's tensors, whose pointers come at launch; the others (by-value
 * scalars, which cuDNN reads from the host, and buffers of the variant's own)
 * are fixed in setup. */
typedef struct {
    cudnnHandle_t handle;
    cudnnDataType_t io;    /* the caller's tensors' type: bf16 or f16 (the form's dtype) */
    Desc descs[kMaxDescs]; /* every descriptor of the graph and plan, kept alive with the plan */
    int ndescs;
    Desc plan;
    void *workspace;
    int64_t uids[kMaxPack];
    void *ptrs[kMaxPack];
    int npack, nbound;
    Desc pack;                    /* bound to `bound`, NULL before the first launch */
    const void *bound[kMaxPack];  /* the caller's pointers the pack holds */
} Plan;

typedef struct { int64_t dim[4], stride[4]; } Layout;

/* A graph under construction.  The first failing call sets st and step, and
 * every later call does nothing. */
typedef struct {
    Plan *c;
    Desc ops[kMaxOps];
    int nops;
    int64_t next_uid;   /* of the next virtual tensor */
    Layout s, row;      /* the (B, H, Tq, Tk) scores, the (B, H, Tq, 1) row values */
    cudnnStatus_t st;
    const char *step;
} Graph;

static inline Layout packed(int64_t a, int64_t b, int64_t c, int64_t d)
{
    const Layout l = {{a, b, c, d}, {b * c * d, c * d, d, 1}};
    return l;
}

/* A failed step in cuDNN's words: its version, the status and the root
 * cause from its error log (the first "Reason: " line, which names the
 * failed check; else the log's first line).  The text stays valid until the
 * next failure. */
static inline const char *failure(const char *step, cudnnStatus_t s)
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

static inline bool ok(Graph *g, cudnnStatus_t s, const char *step)
{
    if (!g->st && s) {
        g->st = s;
        g->step = step;
    }
    return !g->st;
}

static inline Desc make(Graph *g, cudnnBackendDescriptorType_t type)
{
    Plan *c = g->c;
    Desc d = NULL;
    if (c->ndescs == kMaxDescs)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's descriptor table is full");
    if (!g->st && ok(g, cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor"))
        c->descs[c->ndescs++] = d;
    return d;
}

static inline void set(Graph *g, Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                       int64_t n, const void *value)
{
    if (!g->st)
        ok(g, cudnnBackendSetAttribute(d, name, type, n, value), "cudnnBackendSetAttribute");
}

static inline void finalize(Graph *g, Desc d, const char *what)
{
    if (!g->st)
        ok(g, cudnnBackendFinalize(d), what);
}

/* ---- tensors ---------------------------------------------------------------- */

static inline Desc tensor(Graph *g, int64_t uid, cudnnDataType_t type, const int64_t *dim, const int64_t *stride,
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

/* One of the caller's tensors (of the io type, unless told), bound in the
 * variant pack at launch. */
static inline Desc device_tensor(Graph *g, int64_t uid, const Layout &l)
{
    return tensor(g, uid, g->c->io, l.dim, l.stride, false, false);
}
static inline Desc device_tensor(Graph *g, int64_t uid, cudnnDataType_t type, const Layout &l)
{
    return tensor(g, uid, type, l.dim, l.stride, false, false);
}

/* An intermediate cuDNN keeps to itself. */
static inline Desc virtual_tensor(Graph *g, cudnnDataType_t type, const Layout &l)
{
    return tensor(g, g->next_uid++, type, l.dim, l.stride, true, false);
}

/* An intermediate in the scores' shape, or one value per query row. */
static inline Desc score(Graph *g, cudnnDataType_t type) { return virtual_tensor(g, type, g->s); }
static inline Desc per_row(Graph *g) { return virtual_tensor(g, CUDNN_DATA_FLOAT, g->row); }

/* A by-value scalar (1x1x1x1, broadcast), which cuDNN reads from the host
 * at `value` on each launch; it joins the variant pack. */
static inline Desc scalar(Graph *g, int64_t uid, cudnnDataType_t type, void *value)
{
    static const int64_t one[4] = {1, 1, 1, 1};
    Plan *c = g->c;
    if (c->npack == kMaxPack)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's variant pack is full");
    if (g->st)
        return NULL;
    c->uids[c->npack] = uid;
    c->ptrs[c->npack++] = value;
    return tensor(g, uid, type, one, one, false, true);
}

/* A device tensor of the variant's own (a buffer it allocated in setup), at
 * a pointer fixed from now on; it joins the variant pack. */
static inline Desc own_tensor(Graph *g, int64_t uid, cudnnDataType_t type, const Layout &l, void *ptr)
{
    Plan *c = g->c;
    if (c->npack == kMaxPack)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's variant pack is full");
    if (g->st)
        return NULL;
    c->uids[c->npack] = uid;
    c->ptrs[c->npack++] = ptr;
    return tensor(g, uid, type, l.dim, l.stride, false, false);
}

/* ---- operations --------------------------------------------------------------- */

static inline void add_op(Graph *g, Desc op, const char *what)
{
    finalize(g, op, what);
    if (g->nops == kMaxOps)
        ok(g, CUDNN_STATUS_INTERNAL_ERROR, "cudnn's operation table is full");
    if (!g->st)
        g->ops[g->nops++] = op;
}

static inline Desc pw_desc(Graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec)
{
    Desc pw = make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    return pw;
}

/* y = pw(x, b, t); b and t are NULL for the modes that do not take them. */
static inline Desc pw_op(Graph *g, Desc pw, Desc x, Desc b, Desc t, Desc y)
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

static inline Desc pointwise(Graph *g, cudnnPointwiseMode_t mode, cudnnDataType_t prec, Desc x, Desc b, Desc t,
                             Desc y)
{
    return pw_op(g, pw_desc(g, mode, prec), x, b, t, y);
}

/* Each score's index along `axis`: 2 for its query row, 3 for its key. */
static inline Desc gen_index(Graph *g, Desc s, int64_t axis)
{
    Desc pw = pw_desc(g, CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_INT32);
    set(g, pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    return pw_op(g, pw, s, NULL, NULL, score(g, CUDNN_DATA_INT32));
}

/* c = a b in fp32, batched over the first two dimensions (b's heads may be
 * fewer: grouped-query attention).  m, n and k, when not NULL, are device
 * tensors of one int32 per batch that override the product's extents
 * (cuDNN's padding mask). */
static inline void matmul(Graph *g, Desc a, Desc b, Desc c, Desc m = NULL, Desc n = NULL, Desc k = NULL)
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
    if (m)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m);
    if (n)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n);
    if (k)
        set(g, op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k);
    add_op(g, op, "finalizing a matmul operation");
}

/* y = the max or the sum of x over the dimensions where y has extent 1
 * (or over groups of x's heads where y has fewer), in fp32. */
static inline Desc reduce(Graph *g, cudnnReduceTensorOp_t how, Desc x, Desc y)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    Desc r = make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(g, r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how);
    set(g, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    finalize(g, r, "finalizing a reduction descriptor");
    Desc op = make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    set(g, op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &r);
    add_op(g, op, "finalizing a reduction operation");
    return y;
}

/* y = x seen through y's dimensions and strides (a transpose by strides,
 * here), in y's type. */
static inline Desc reshape(Graph *g, Desc x, Desc y)
{
    Desc op = make(g, CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    set(g, op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    add_op(g, op, "finalizing a reshape operation");
    return y;
}

/* ---- the causal mask ------------------------------------------------------------ */

/* A causal row with Tq = 1 sees every key: only longer ones need the mask,
 * bottom-right aligned (shifted) when Tq != Tk. */
static inline bool needs_mask(bool causal, int64_t tq) { return causal && tq > 1; }
static inline bool bottom_right(bool causal, int64_t tq, int64_t tk) { return needs_mask(causal, tq) && tq != tk; }

/* The masked scores' fill: FLT_MAX's negative before cuDNN 9.10 and -inf
 * after, as cudnn-frontend picks it. */
static inline float mask_fill(void) { return cudnnGetVersion() < 91000 ? -FLT_MAX : -INFINITY; }

/* S where query row i may see key j (i + Tk - Tq >= j), `fill` (a by-value
 * scalar) elsewhere.  The shift is two int32 steps, + tk then - tq, as
 * cudnn-frontend writes it, so that the engines recognise the pattern; tk
 * and tq are by-value scalars or device tensors of one length per batch, or
 * both NULL for the unshifted (top-left) mask. */
static inline Desc causal_mask(Graph *g, Desc s, Desc tk, Desc tq, Desc fill)
{
    Desc row = gen_index(g, s, 2);
    if (tk) {
        row = pointwise(g, CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, tk, NULL, score(g, CUDNN_DATA_INT32));
        row = pointwise(g, CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row, tq, NULL, score(g, CUDNN_DATA_INT32));
    }
    Desc col = gen_index(g, s, 3);
    Desc keep = pointwise(g, CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, row, col, NULL, score(g, CUDNN_DATA_BOOLEAN));
    return pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, fill, keep, score(g, CUDNN_DATA_FLOAT));
}

/* ---- the operation graph, the plan and the pack ------------------------------ */

/* A handle, and the pack's first n entries: the caller's tensors' uids. */
static inline const char *open_plan(Plan *c, cudnnDataType_t io, const int64_t *uids, int n)
{
    c->io = io;
    memcpy(c->uids, uids, n * sizeof *uids);
    c->npack = c->nbound = n; /* their pointers come at launch */
    cudnnStatus_t s = cudnnCreate(&c->handle);
    return s ? failure("cudnnCreate", s) : NULL;
}

static inline void begin_graph(Graph *g, Plan *c, int64_t first_virtual_uid)
{
    memset(g, 0, sizeof *g);
    g->c = c;
    g->next_uid = first_virtual_uid;
}

static inline Desc operation_graph(Graph *g)
{
    Desc og = make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
    set(g, og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &g->c->handle); /* needed before 9.8 */
    finalize(g, og, "finalizing the operation graph");
    return og;
}

/* The first engine config in the heuristics' order whose plan finalizes:
 * a config may still refuse the shape (a head dim, an architecture). */
static inline void choose_plan(Graph *g, Desc og)
{
    Plan *c = g->c;
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

static inline const char *alloc_workspace(Plan *c)
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

/* The plan of the finished graph og and its workspace; NULL or why not. */
static inline const char *finish_plan(Graph *g, Desc og)
{
    choose_plan(g, og);
    return g->st ? failure(g->step, g->st) : alloc_workspace(g->c);
}

/* A variant pack of the caller's tensors t (nbound of them, in the order of
 * open_plan's uids), the fixed entries and the workspace. */
static inline const char *bind_pack(Plan *c, const void *const *t)
{
    Desc pack = NULL;
    if (c->pack)
        cudnnBackendDestroyDescriptor(c->pack);
    c->pack = NULL;
    for (int i = 0; i < c->nbound; ++i)
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
    memcpy(c->bound, t, c->nbound * sizeof *t);
    return NULL;
}

/* Runs the plan on the caller's tensors t on `stream`, rebuilding the pack
 * first when they are other tensors than last time (a few microseconds on
 * the host). */
static inline const char *execute(Plan *c, const void *const *t, cudaStream_t stream)
{
    if (!c->pack || memcmp(c->bound, t, c->nbound * sizeof *t)) {
        const char *e = bind_pack(c, t);
        if (e)
            return e;
    }
    cudnnStatus_t s = cudnnSetStream(c->handle, stream);
    if (!s)
        s = cudnnBackendExecute(c->handle, c->plan, c->pack);
    return s ? failure("cudnnBackendExecute", s) : NULL;
}

/* Destroys what open_plan, the graph, finish_plan and bind_pack made (not c itself). */
static inline void release(Plan *c)
{
    if (c->pack)
        cudnnBackendDestroyDescriptor(c->pack);
    c->pack = NULL;
    while (c->ndescs > 0)
        cudnnBackendDestroyDescriptor(c->descs[--c->ndescs]);
    cudaFree(c->workspace);
    c->workspace = NULL;
    if (c->handle)
        cudnnDestroy(c->handle);
    c->handle = NULL;
}

} // namespace kb_cudnn

#endif
