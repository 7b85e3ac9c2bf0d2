/* attention_backward naive: the textbook gradient with P and dS in global
 * memory (two B*H*Tq*Tk fp32 workspaces made in setup):
 *   1. D_i = do_i . o_i, one warp per query row;
 *   2. one thread per (query row, key): P = exp(scale q.k - lse) where the
 *      mask keeps the pair (0 elsewhere, and for a row that sees no key,
 *      whose lse is +inf), dS = P (do.v - D_i);
 *   3. three weighted sums, one thread per output element, each walking a
 *      column of P or dS: dq = scale dS K, dv = P^T dO and dk = scale
 *      dS^T Q, the last two over the group * Tq query rows of a KV head
 *      (contiguous in Q, dO, P and dS), so GQA sums over its heads for free.
 *
 * Idea: the starting point of the ladder, every product a plain loop.
 * Prediction: well under 1 TFLOP/s at T = 4096: each score costs two
 * D-long dot products read from L1/L2, and P and dS are written once and
 * read three times (some 24 bytes per score).  Shapes whose workspaces do
 * not fit in memory are skipped.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 1.08
 * TFLOP/s at 2x16x4096x4096x128 (639 ms), 0.1% of the run's 961 TFLOP/s
 * bf16 tensor ceiling.
 * Gap to the limit: far: the fused rungs never write P or dS. */
#include "ops/attention_backward.h"
#include "kernels/cuda_util.h"
#include "variants/attention_backward/backward_common.cuh"

#define NAIVE_BLOCK 128

typedef __nv_bfloat16 bf16;

/* grid (B*H*Tq rows, key blocks) */
__global__ void __launch_bounds__(NAIVE_BLOCK)
atb_naive_probs_kernel(kb_attention_backward_args a, const float *dot, float *P, float *dS)
{
    const int64_t r = blockIdx.x; /* (b, h, i) */
    const int j = blockIdx.y * NAIVE_BLOCK + threadIdx.x;
    if (j >= a.Tk)
        return;
    const int D = a.D;
    const size_t at = (size_t)r * a.Tk + j;
    if (j >= atb_keys((int)(r % a.Tq), a.Tq, a.Tk, a.causal)) {
        P[at] = dS[at] = 0;
        return;
    }
    const int64_t kv = (r / a.Tq / atb_group(&a) * a.Tk + j) * D;
    const bf16 *q = (const bf16 *)a.q + r * D, *dout = (const bf16 *)a.dout + r * D;
    const bf16 *k = (const bf16 *)a.k + kv, *v = (const bf16 *)a.v + kv;
    float s = 0, dp = 0;
    for (int d = 0; d < D; ++d) {
        s += __bfloat162float(q[d]) * __bfloat162float(k[d]);
        dp += __bfloat162float(dout[d]) * __bfloat162float(v[d]);
    }
    const float p = expf(a.scale * s - a.lse[r]);
    P[at] = p;
    dS[at] = p * (dp - dot[r]);
}

/* out[x][d] = alpha sum_y M[m0 + y * my] X[x0 + y * D + d] for output row
 * x: the weighted sum of Y rows of X (D wide) by a row or a column of M.
 * grid (rows, D blocks) */
__global__ void __launch_bounds__(NAIVE_BLOCK)
atb_naive_sum_kernel(int Y, int D, float alpha, const float *M, int64_t m_row, int64_t m_col, int64_t my,
                     const bf16 *X, int64_t x_row, int x_per, int64_t x_head, bf16 *out)
{
    const int64_t x = blockIdx.x;
    const int d = blockIdx.y * NAIVE_BLOCK + threadIdx.x;
    if (d >= D)
        return;
    /* M's row or column for x, and the rows of X it weighs: X is the
     * KV head's (x_per output rows share one) or the group's query rows. */
    const float *m = M + x / m_col * m_row + x % m_col;
    const bf16 *xs = X + x / x_per * x_head + d;
    float acc = 0;
    for (int y = 0; y < Y; ++y)
        acc += m[(int64_t)y * my] * __bfloat162float(xs[(int64_t)y * x_row]);
    out[x * D + d] = __float2bfloat16(alpha * acc);
}

struct NaiveCtx {
    float *dot, *P, *dS;
};

static void teardown(void *ctx)
{
    NaiveCtx *c = (NaiveCtx *)ctx;
    if (!c)
        return;
    cudaFree(c->dot);
    cudaFree(c->P);
    cudaFree(c->dS);
    delete c;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    const size_t rows = (size_t)a->B * a->H * a->Tq, scores = rows * a->Tk * sizeof(float);
    NaiveCtx *c = new NaiveCtx{NULL, NULL, NULL};
    const char *e = kb_alloc_workspace((void **)&c->dot, rows * sizeof(float), "D = rowsum(do o)");
    if (!e)
        e = kb_alloc_workspace((void **)&c->P, scores, "P");
    if (!e)
        e = kb_alloc_workspace((void **)&c->dS, scores, "dS");
    if (e) {
        teardown(c);
        c = NULL;
    }
    *ctx = c;
    return e;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_backward_args *a = (const kb_attention_backward_args *)args;
    NaiveCtx *c = (NaiveCtx *)ctx;
    const int D = a->D, Tk = a->Tk, M = atb_group(a) * a->Tq; /* a KV head's query rows */
    const int64_t rows = (int64_t)a->B * a->H * a->Tq, kv_rows = (int64_t)a->B * a->Hkv * Tk;
    const unsigned dblocks = KB_CEIL_DIV(D, NAIVE_BLOCK);
    KB_TRY(atb_row_dots(a, c->dot, stream));
    atb_naive_probs_kernel<<<dim3((unsigned)rows, KB_CEIL_DIV(Tk, NAIVE_BLOCK)), NAIVE_BLOCK, 0, stream>>>(
        *a, c->dot, c->P, c->dS);
    KB_CUDA_TRY(cudaGetLastError());
    /* dq row r: row r of dS over the keys of r's KV head (one per M rows) */
    atb_naive_sum_kernel<<<dim3((unsigned)rows, dblocks), NAIVE_BLOCK, 0, stream>>>(
        Tk, D, a->scale, c->dS, Tk, 1, 1, (const bf16 *)a->k, D, M, (int64_t)Tk * D, (bf16 *)a->dq);
    KB_CUDA_TRY(cudaGetLastError());
    /* dv and dk row (kv head h, key j): column j of the M x Tk block of P
     * (or dS) for h, over h's M query rows of dO (or Q) */
    atb_naive_sum_kernel<<<dim3((unsigned)kv_rows, dblocks), NAIVE_BLOCK, 0, stream>>>(
        M, D, 1.0f, c->P, (int64_t)M * Tk, Tk, Tk, (const bf16 *)a->dout, D, Tk, (int64_t)M * D, (bf16 *)a->dv);
    KB_CUDA_TRY(cudaGetLastError());
    atb_naive_sum_kernel<<<dim3((unsigned)kv_rows, dblocks), NAIVE_BLOCK, 0, stream>>>(
        M, D, a->scale, c->dS, (int64_t)M * Tk, Tk, Tk, (const bf16 *)a->q, D, Tk, (int64_t)M * D, (bf16 *)a->dk);
    KB_LAUNCHED();
}

/* Rows index the grid's x dimension (2^31 - 1 blocks). */
static const char *unsupported(const kb_shape *s)
{
    const int64_t rows = kb_mul_dims(kb_mul_dims(s->d[0], s->d[1]), s->d[2]);
    return rows < 0 || rows > INT32_MAX ? "B*H*Tq > 2^31 - 1: the grid indexes query rows with int" : NULL;
}

extern "C" const kb_variant attention_backward_naive[] = {
    {
        .name = "naive",
        .summary = "P and dS in global memory, a thread per score, then a thread per gradient element",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
