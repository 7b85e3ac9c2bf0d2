/* attention naive: the textbook three kernels, with the whole score matrix
 * in global memory (a B*H*Tq*Tk fp32 workspace made in setup):
 *   1. scores: one thread per (query row, key), S = scale * q . k, -inf
 *      past the causal mask's diagonal (key j > i + Tk - Tq, aligned to the
 *      bottom right); the threads of a block walk the keys,
 *      so q is a broadcast and the k reads are D floats apart;
 *   2. softmax: one warp per row of S, three sweeps (max, sum, write),
 *      in place;
 *   3. weighted sum: one thread per output element, O = P V, each thread
 *      walking a column of V (coalesced across the threads of a row) and a
 *      row of P (a broadcast).
 *
 * Idea: the starting point of the ladder.  Everything is memory traffic:
 * S is written once and read three times, then read once more by the
 * weighted sum (about 20 bytes per score), and the score kernel rereads q
 * and k from L1/L2 for every score.
 * Prediction: well under 1 TFLOP/s at T = 4096 (5 TB of score traffic per
 * PFLOP; at ~3 TB/s that is ~2 TFLOP/s even with perfect caching of q, k
 * and v, and the strided k reads cost more).  Shapes whose scores do not
 * fit in memory are skipped (setup says how much they need).
 * Measured (results/h100/kbench-20261127-195738.csv): 0.9 TFLOP/s at every
 * large shape (1.4-1.5% of the fp32 ceiling), 0.02-0.06x cublas.
 * Gap to the limit: far: the fused kernels never write S at all.
 * Grouped-query attention: query head bh reads KV head bh / (H / Hkv).  A
 * causal row that sees no key (Tq > Tk) is zeros, as the softmax op's. */
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "variants/attention/attention_common.cuh"

#define NAIVE_BLOCK 128

/* grid (B*H*Tq rows, key blocks) */
__global__ void __launch_bounds__(NAIVE_BLOCK)
attention_naive_scores_kernel(int Tq, int Tk, int D, int causal, int group, float scale, const float *q,
                              const float *k, float *S)
{
    const int row = blockIdx.x; /* (b, h, i) */
    const int j = blockIdx.y * NAIVE_BLOCK + threadIdx.x;
    if (j >= Tk)
        return;
    const int i = row % Tq;
    const size_t kv = (size_t)(row / Tq) / group;
    float *out = S + (size_t)row * Tk;
    if (causal && (int64_t)j > (int64_t)i + Tk - Tq) {
        out[j] = -INFINITY;
        return;
    }
    const float *qr = q + (size_t)row * D;
    const float *kr = k + (kv * Tk + j) * D;
    float acc = 0.0f;
    for (int d = 0; d < D; ++d)
        acc = fmaf(qr[d], kr[d], acc);
    out[j] = acc * scale;
}

/* One warp per row.  A row with no finite score (a causal row that sees no
 * key, when Tq > Tk) becomes zeros. */
__global__ void __launch_bounds__(NAIVE_BLOCK)
attention_naive_softmax_kernel(int64_t rows, int Tk, float *S)
{
    const int lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * (NAIVE_BLOCK / 32) + threadIdx.x / 32;
    if (row >= rows) /* the whole warp */
        return;
    float *x = S + row * Tk;
    float max = -INFINITY;
    for (int j = lane; j < Tk; j += 32)
        max = fmaxf(max, x[j]);
    max = kb_warp_allreduce<32>(max, KbMax{});
    if (max == -INFINITY) { /* the whole warp */
        for (int j = lane; j < Tk; j += 32)
            x[j] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int j = lane; j < Tk; j += 32)
        sum += expf(x[j] - max);
    sum = kb_warp_allreduce<32>(sum, KbSum{});
    const float inv = 1.0f / sum;
    for (int j = lane; j < Tk; j += 32)
        x[j] = expf(x[j] - max) * inv;
}

/* One thread per element of O. */
__global__ void __launch_bounds__(NAIVE_BLOCK)
attention_naive_weighted_sum_kernel(int64_t elems, int Tq, int Tk, int D, int causal, int group, const float *P,
                                    const float *v, float *o)
{
    const int64_t idx = (int64_t)blockIdx.x * NAIVE_BLOCK + threadIdx.x;
    if (idx >= elems)
        return;
    const int64_t row = idx / D;
    const int d = (int)(idx % D);
    const int i = (int)(row % Tq);
    const int64_t kv = row / Tq / group;
    const float *p = P + row * Tk;
    const float *vc = v + kv * Tk * D + d;
    /* Causal: keys 0 .. i + Tk - Tq; the rest of the row is 0. */
    const int64_t seen = causal ? (int64_t)i + Tk - Tq + 1 : Tk;
    const int keys = seen < 0 ? 0 : (int)seen;
    float acc = 0.0f;
    for (int j = 0; j < keys; ++j)
        acc = fmaf(p[j], vc[(int64_t)j * D], acc);
    o[idx] = acc;
}

static const char *setup(const void *args, void **ctx)
{
    float *S = NULL;
    const char *e = kb_attention_alloc_scores((const kb_attention_args *)args, &S);
    *ctx = S;
    return e;
}

static void teardown(void *ctx)
{
    if (ctx)
        cudaFree(ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    float *S = (float *)ctx;
    const int64_t rows = (int64_t)a->B * a->H * a->Tq;
    const int64_t elems = rows * a->D;
    const int group = kb_attention_group(a);
    dim3 grid_s((unsigned)rows, KB_CEIL_DIV(a->Tk, NAIVE_BLOCK));
    attention_naive_scores_kernel<<<grid_s, NAIVE_BLOCK, 0, stream>>>(
        a->Tq, a->Tk, a->D, a->causal, group, a->scale, (const float *)a->q, (const float *)a->k, S);
    attention_naive_softmax_kernel<<<(unsigned)KB_CEIL_DIV(rows, NAIVE_BLOCK / 32), NAIVE_BLOCK, 0, stream>>>(
        rows, a->Tk, S);
    attention_naive_weighted_sum_kernel<<<(unsigned)KB_CEIL_DIV(elems, NAIVE_BLOCK), NAIVE_BLOCK, 0, stream>>>(
        elems, a->Tq, a->Tk, a->D, a->causal, group, S, (const float *)a->v, (float *)a->o);
    KB_LAUNCHED();
}

extern "C" const kb_variant attention_naive[] = {
    {
        .name = "naive",
        .summary = "three kernels: scores to global memory, row softmax, weighted sum",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = setup,
        .teardown = teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
