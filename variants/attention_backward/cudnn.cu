/* attention_backward cudnn: the library baseline of the bf16 rows, cuDNN's
 * fused flash-attention backward (the kernel PyTorch's SDPA backward runs on
 * Hopper), called from C through the cuDNN backend (graph) API and the
 * helpers it shares with attention cudnn (kernels/cudnn_graph.h).  Setup
 * writes the graph cudnn-frontend's SDPA backward node expands into, which
 * cuDNN's fused engines recognise as one kernel:
 *   D = rowsum(dO * O)    POINTWISE MUL, REDUCTION ADD, MUL by 1: a real fp32
 *                         (B, H, Tq, 1) tensor in a buffer of our own;
 *   P = exp(scale Q K^T - lse)  MATMUL (fp32), MUL by a by-value scale,
 *                         [padding mask], SUB lse, [causal mask], EXP;
 *   dV = P^T dO           RESHAPE of P to (B, H, Tk, Tq) by strides, in bf16,
 *                         MATMUL;
 *   dS = scale P (dO V^T - D)   MATMUL, SUB, MUL, MUL;
 *   dK = dS^T Q           RESHAPE of dS in bf16, MATMUL;
 *   dQ = dS K             RESHAPE of K^T back to K, MATMUL into a real fp32
 *                         accumulator of ours, POINTWISE IDENTITY into dq.
 * Every other intermediate is virtual.  K and V enter as K^T and V^T by
 * strides; with fewer KV heads (GQA) dK and dV are full-head bf16 virtual
 * products that a REDUCTION ADD sums into the Hkv heads.  The causal mask is
 * the forward's (GEN_INDEX, ADD Tk, SUB Tq when Tq != Tk, CMP_GE,
 * BINARY_SELECT); a causal Tq = 1 row runs unmasked.  As cudnn-frontend does
 * up to cuDNN 9.15, Tk off a multiple of 128 adds a padding mask (GEN_INDEX,
 * CMP_LT of device lengths Tq and Tk, LOGICAL_AND, BINARY_SELECT; the products
 * take the lengths as overrides, the causal shift reads them) against NaNs
 * in the tail tile; 9.0 to 9.9 repeat it after SUB lse; before 9.6 launch
 * zeroes the dQ accumulator.  Plan, workspace and pack as the forward's.
 * SKIPs: D not a multiple of 8, or over 256 on Hopper, 128 elsewhere;
 * Tq = Tk = 1; causal Tq > Tk (the bottom-right mask needs Tq <= Tk); cuDNN
 * 9.10.0 and 9.10.1; the bottom-right mask before 9.6 off multiples of 64;
 * any graph cuDNN will not plan, with cuDNN's reason.
 *
 * Builds on: the library baseline.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 568
 * TFLOP/s at 2x16x4096x4096x128 (1.21 ms), 59.1% of the run's 961 TFLOP/s
 * bf16 tensor ceiling; 531 at T = 8192 (at 1890 MHz; 596 in run 6), 565
 * GQA x8, 452 causal.
 * Gap to the limit: 40.9 points at T = 4096. */
#include <stdint.h>
#include <stdlib.h>
#include "kernels/cudnn_graph.h"
#include "ops/attention.h"
#include "ops/attention_backward.h"

using namespace kb_cudnn;

/* Tensor uids: the caller's nine tensors, the buffers of our own, the
 * by-value scalars, then the graph's virtual intermediates. */
enum {
    UID_Q = 1, UID_K, UID_V, UID_O, UID_DO, UID_LSE, UID_DQ, UID_DK, UID_DV,
    UID_SUM, UID_DQ_ACC, UID_SEQ_Q, UID_SEQ_KV,
    UID_SCALE, UID_ONE, UID_FILL_PAD, UID_FILL_PAD2, UID_FILL_CAUSAL, UID_TK, UID_TQ,
    UID_VIRTUAL = 100
};

typedef struct {
    Plan p;                           /* first: the graph, the plan and the pack */
    kb_attention_backward_args built; /* the shape the plan computes */
    /* One buffer: D (B*H*Tq floats), the dQ accumulator (B*H*Tq*D floats)
     * and, for the padding mask, the lengths Tq and Tk per batch. */
    void *scratch;
    float *sum, *dq_acc;
    int32_t *seq_q, *seq_kv;
    size_t dq_acc_bytes;
    bool padded, zero_dq_acc;
    /* The by-value scalars, which cuDNN reads from here on each launch. */
    float scale, one, fill;
    int32_t tk, tq;
} cudnn_ctx;

typedef kb_attention_backward_args args_t;

/* cudnn-frontend's workaround (1.16 on) for cuDNN up to 9.15, whose
 * backward can give NaNs when Tk is off its 128-key tile: a padding mask
 * of the full lengths. */
static bool padded(const args_t *a) { return cudnnGetVersion() <= 91500 && a->Tk % 128; }
/* ... and, from 9.0 to 9.9, the padding mask again after the statistics
 * are subtracted. */
static bool padded_twice(const args_t *a)
{
    const size_t v = cudnnGetVersion();
    return padded(a) && v >= 90000 && v < 91000;
}

/* ---- the backward graph --------------------------------------------------------- */

/* S, `fill` where the row or the key lies past the device lengths. */
static Desc padding_mask(Graph *g, cudnn_ctx *c, Desc s, Desc seq_q, Desc seq_kv, int64_t fill_uid)
{
    const cudnnDataType_t b8 = CUDNN_DATA_BOOLEAN;
    Desc row = gen_index(g, s, 2);
    Desc col = gen_index(g, s, 3);
    Desc in_q = pointwise(g, CUDNN_POINTWISE_CMP_LT, b8, row, seq_q, NULL, score(g, b8));
    Desc in_kv = pointwise(g, CUDNN_POINTWISE_CMP_LT, b8, col, seq_kv, NULL, score(g, b8));
    Desc keep = pointwise(g, CUDNN_POINTWISE_LOGICAL_AND, b8, in_q, in_kv, NULL, score(g, b8));
    Desc fill = scalar(g, fill_uid, CUDNN_DATA_FLOAT, &c->fill);
    return pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, s, fill, keep, score(g, CUDNN_DATA_FLOAT));
}

/* The causal mask after the statistics; the bottom-right shift by the
 * device lengths when the padding mask has them, else by by-value scalars. */
static Desc causal_mask(Graph *g, cudnn_ctx *c, Desc s, const args_t *a, Desc seq_q, Desc seq_kv)
{
    Desc tk = NULL, tq = NULL;
    if (bottom_right(a->causal, a->Tq, a->Tk)) {
        if (seq_q) {
            tk = seq_kv;
            tq = seq_q;
        } else {
            c->tk = a->Tk;
            c->tq = a->Tq;
            tk = scalar(g, UID_TK, CUDNN_DATA_INT32, &c->tk);
            tq = scalar(g, UID_TQ, CUDNN_DATA_INT32, &c->tq);
        }
    }
    Desc fill = scalar(g, UID_FILL_CAUSAL, CUDNN_DATA_FLOAT, &c->fill);
    return kb_cudnn::causal_mask(g, s, tk, tq, fill);
}

/* A KV head's gradient, x y summed over the query heads that read it:
 * straight into out when there are as many KV heads as query heads, else
 * a full-head product in bf16 (virtual) and a reduction over each group
 * of heads, as cudnn-frontend writes it.  m and k: the extents' overrides. */
static void kv_gradient(Graph *g, const args_t *a, int64_t hkv, Desc x, Desc y, Desc out, Desc m, Desc k)
{
    if (hkv == a->H) {
        matmul(g, x, y, out, m, NULL, k);
        return;
    }
    Desc full = virtual_tensor(g, g->c->io, packed(a->B, a->H, a->Tk, a->D));
    matmul(g, x, y, full, m, NULL, k);
    reduce(g, CUDNN_REDUCE_TENSOR_ADD, full, out);
}

static Desc backward_graph(Graph *g, cudnn_ctx *c, const args_t *a)
{
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    const int64_t B = a->B, H = a->H, Tq = a->Tq, Tk = a->Tk, D = a->D, hkv = a->Hkv;
    g->s = packed(B, H, Tq, Tk);
    g->row = packed(B, H, Tq, 1);
    const Layout qd = packed(B, H, Tq, D), kvd = packed(B, hkv, Tk, D);
    const Layout kt = {{B, hkv, D, Tk}, {hkv * Tk * D, Tk * D, 1, D}}; /* K^T and V^T by strides */
    const Layout st = {{B, H, Tk, Tq}, {H * Tq * Tk, Tq * Tk, 1, Tk}}; /* P^T and dS^T by strides */
    Desc q = device_tensor(g, UID_Q, qd), k_t = device_tensor(g, UID_K, kt), v_t = device_tensor(g, UID_V, kt);
    Desc o = device_tensor(g, UID_O, qd), dout = device_tensor(g, UID_DO, qd);
    Desc lse = device_tensor(g, UID_LSE, f32, g->row);
    Desc dq = device_tensor(g, UID_DQ, qd), dk = device_tensor(g, UID_DK, kvd), dv = device_tensor(g, UID_DV, kvd);
    Desc seq_q = NULL, seq_kv = NULL;
    if (c->padded) {
        const Layout per_batch = {{B, 1, 1, 1}, {1, 1, 1, 1}};
        seq_q = own_tensor(g, UID_SEQ_Q, CUDNN_DATA_INT32, per_batch, c->seq_q);
        seq_kv = own_tensor(g, UID_SEQ_KV, CUDNN_DATA_INT32, per_batch, c->seq_kv);
    }
    c->scale = a->scale;
    c->one = 1.0f;
    c->fill = mask_fill();
    Desc scale = scalar(g, UID_SCALE, f32, &c->scale);

    /* D = rowsum(dO * O), stored.  The product's strides are cudnn-frontend's
     * (a row stride of H D; it is virtual). */
    const Layout prod = {{B, H, Tq, D}, {H * Tq * D, Tq * D, H * D, 1}};
    Desc d = pointwise(g, CUDNN_POINTWISE_MUL, f32, dout, o, NULL, virtual_tensor(g, f32, prod));
    d = reduce(g, CUDNN_REDUCE_TENSOR_ADD, d, per_row(g));
    d = pointwise(g, CUDNN_POINTWISE_MUL, f32, d, scalar(g, UID_ONE, f32, &c->one), NULL,
                  own_tensor(g, UID_SUM, f32, g->row, c->sum));

    /* P = exp(scale Q K^T - lse) under the masks. */
    Desc s = score(g, f32);
    matmul(g, q, k_t, s, seq_q, seq_kv, NULL);
    s = pointwise(g, CUDNN_POINTWISE_MUL, f32, s, scale, NULL, score(g, f32));
    if (c->padded)
        s = padding_mask(g, c, s, seq_q, seq_kv, UID_FILL_PAD);
    s = pointwise(g, CUDNN_POINTWISE_SUB, f32, s, lse, NULL, score(g, f32));
    if (padded_twice(a))
        s = padding_mask(g, c, s, seq_q, seq_kv, UID_FILL_PAD2);
    if (needs_mask(a->causal, a->Tq))
        s = causal_mask(g, c, s, a, seq_q, seq_kv);
    Desc p = pointwise(g, CUDNN_POINTWISE_EXP, f32, s, NULL, NULL, score(g, f32));

    /* dV = P^T dO */
    Desc p_t = reshape(g, p, virtual_tensor(g, g->c->io, st));
    kv_gradient(g, a, hkv, p_t, dout, dv, seq_kv, seq_q);

    /* dS = scale P (dO V^T - D) */
    Desc ds = score(g, f32);
    matmul(g, dout, v_t, ds, seq_q, seq_kv, NULL);
    ds = pointwise(g, CUDNN_POINTWISE_SUB, f32, ds, d, NULL, score(g, f32));
    ds = pointwise(g, CUDNN_POINTWISE_MUL, f32, ds, p, NULL, score(g, f32));
    ds = pointwise(g, CUDNN_POINTWISE_MUL, f32, ds, scale, NULL, score(g, f32));

    /* dK = dS^T Q */
    Desc ds_t = reshape(g, ds, virtual_tensor(g, g->c->io, st));
    kv_gradient(g, a, hkv, ds_t, q, dk, seq_kv, seq_q);

    /* dQ = dS K, accumulated in fp32 in our buffer, then rounded into dq */
    Desc k = reshape(g, k_t, virtual_tensor(g, g->c->io, kvd));
    Desc acc = own_tensor(g, UID_DQ_ACC, f32, qd, c->dq_acc);
    matmul(g, ds, k, acc, seq_q, NULL, seq_kv);
    pointwise(g, CUDNN_POINTWISE_IDENTITY, f32, acc, NULL, NULL, dq);
    return operation_graph(g);
}

/* ---- setup, launch ------------------------------------------------------------- */

/* What cudnn-frontend's SDPA backward refuses by version before asking
 * cuDNN: bf16 backward bugs in 9.10.0 and 9.10.1, and the bottom-right mask
 * before 9.6 off multiples of 64. */
static const char *version_refuses(const args_t *a)
{
    const size_t v = cudnnGetVersion();
    if (v == 91000 || v == 91001)
        return "cuDNN 9.10.0 and 9.10.1 have known bugs in bf16 SDPA backward (cudnn-frontend refuses them)";
    if (bottom_right(a->causal, a->Tq, a->Tk) && v < 90600 && (a->Tq % 64 || a->Tk % 64))
        return "cuDNN before 9.6 has the bottom-right causal mask only for Tq and Tk multiples of 64";
    return NULL;
}

static size_t round_up(size_t n) { return (n + 255) & ~(size_t)255; }

/* The buffer of our own, its lengths written once (outside timing). */
static const char *alloc_scratch(cudnn_ctx *c, const args_t *a)
{
    const size_t rows = (size_t)a->B * a->H * a->Tq;
    const size_t sum_bytes = round_up(rows * sizeof(float)), lens_bytes = round_up((size_t)a->B * sizeof(int32_t));
    c->dq_acc_bytes = rows * a->D * sizeof(float);
    c->padded = padded(a);
    c->zero_dq_acc = cudnnGetVersion() < 90600; /* from 9.6 cuDNN clears it itself */
    const size_t bytes = sum_bytes + round_up(c->dq_acc_bytes) + (c->padded ? 2 * lens_bytes : 0);
    if (cudaMalloc(&c->scratch, bytes) != cudaSuccess) {
        cudaGetLastError();
        c->scratch = NULL;
        return "cudaMalloc of cudnn's D and dQ accumulator buffer failed";
    }
    char *base = (char *)c->scratch;
    c->sum = (float *)base;
    c->dq_acc = (float *)(base + sum_bytes);
    if (!c->padded)
        return NULL;
    c->seq_q = (int32_t *)(base + sum_bytes + round_up(c->dq_acc_bytes));
    c->seq_kv = (int32_t *)((char *)c->seq_q + lens_bytes);
    int32_t *lens = (int32_t *)malloc(2 * (size_t)a->B * sizeof(int32_t));
    if (!lens)
        return "out of host memory";
    for (int b = 0; b < a->B; ++b) {
        lens[b] = a->Tq;
        lens[a->B + b] = a->Tk;
    }
    cudaError_t e = cudaMemcpy(c->seq_q, lens, a->B * sizeof(int32_t), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMemcpy(c->seq_kv, lens + a->B, a->B * sizeof(int32_t), cudaMemcpyHostToDevice);
    free(lens);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return "cudaMemcpy of cudnn's padding-mask lengths failed";
    }
    return NULL;
}

static void teardown(void *p)
{
    cudnn_ctx *c = (cudnn_ctx *)p;
    if (!c)
        return;
    release(&c->p);
    cudaFree(c->scratch);
    free(c);
}

/* The handle, the buffer, the graph, a plan and its workspace, outside all
 * timing. */
static const char *setup(const void *args, void **ctx)
{
    const args_t *a = (const args_t *)args;
    *ctx = NULL;
    const char *why = version_refuses(a);
    if (why)
        return why;
    cudnn_ctx *c = (cudnn_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    c->built = *a;
    static const int64_t device_uids[9] = {UID_Q, UID_K, UID_V, UID_O, UID_DO, UID_LSE, UID_DQ, UID_DK, UID_DV};
    why = alloc_scratch(c, a);
    if (!why)
        why = open_plan(&c->p, CUDNN_DATA_BFLOAT16, device_uids, 9);
    if (!why) {
        Graph g;
        begin_graph(&g, &c->p, UID_VIRTUAL);
        why = finish_plan(&g, backward_graph(&g, c, a));
    }
    if (why) {
        teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

static bool same_shape(const args_t *x, const args_t *y)
{
    return x->B == y->B && x->H == y->H && x->Hkv == y->Hkv && x->Tq == y->Tq && x->Tk == y->Tk && x->D == y->D &&
           x->causal == y->causal && x->scale == y->scale;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const args_t *a = (const args_t *)args;
    cudnn_ctx *c = (cudnn_ctx *)ctx;
    if (!same_shape(&c->built, a))
        return "cudnn's plan was built for another shape";
    const void *t[9] = {a->q, a->k, a->v, a->o, a->dout, a->lse, a->dq, a->dk, a->dv};
    uintptr_t any = 0;
    for (int i = 0; i < 9; ++i)
        any |= (uintptr_t)t[i];
    if (any & 15)
        return "cudnn needs 16-byte aligned tensors";
    if (c->zero_dq_acc && cudaMemsetAsync(c->dq_acc, 0, c->dq_acc_bytes, stream) != cudaSuccess) {
        cudaGetLastError();
        return "cudaMemsetAsync of cudnn's dQ accumulator failed";
    }
    return execute(&c->p, t, stream);
}

/* cuDNN's backward head dims: multiples of 8 up to 256 on Hopper, 128 on
 * the other architectures (cudnn-frontend's checks). */
static const char *unsupported(const kb_shape *s)
{
    const int64_t Tq = s->d[2], Tk = s->d[3], D = s->d[4];
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        cudaGetLastError();
        major = 0;
    }
    if (D % 8 || D > (major == 9 ? 256 : 128))
        return major == 9 ? "cuDNN's fused attention backward takes D a multiple of 8 up to 256 on Hopper"
                          : "cuDNN's fused attention backward takes D a multiple of 8 up to 128 (256 on Hopper only)";
    if (Tq == 1 && Tk == 1)
        return "Tq = Tk = 1: cuDNN's attention backward has no engine for it (cudnn-frontend refuses it)";
    if (s->flags && Tq > Tk)
        return "causal with Tq > Tk: cuDNN's bottom-right causal mask needs Tq <= Tk (no row without a key)";
    return NULL;
}

extern "C" const kb_variant attention_backward_cudnn[] = {
    {
        .name = "cudnn",
        .summary = "cuDNN fused flash-attention backward (backend graph API), bf16, fp32 accumulation (library "
                   "baseline)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUDNN,
        .min_cc = 80, /* cuDNN's fused attention engines: sm_80 and newer */
        .unsupported = unsupported,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
