/* An example of a kernel of one's own for `kbench run --kernel`: f32
 * attention with one block a query row, the row's scores in shared memory,
 * and an `unsupported` that SKIPs the shapes it cannot hold.
 *
 *     kbench run --kernel examples/attention_rows.cu --test-sizes
 *
 * The contract (ops/attention.h): Q and O are B x H x Tq x D, K and V
 * B x Hkv x Tk x D (query head h reads KV head h / (H / Hkv)); the causal
 * mask aligns to the bottom right (query i sees keys j <= i + Tk - Tq), and
 * a query that sees no key writes zeros. */
#include <math.h>
#include "ops/attention.h"
#include "ops/kbench_own.h"
#include "kernels/cuda_util.h"

#define THREADS 128
#define MAX_TK 8192 /* the scores of one row: 32 KiB of shared memory */

__device__ static float block_reduce(float v, bool is_max, float *scratch)
{
    for (int o = 16; o > 0; o /= 2) {
        const float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    __syncthreads(); /* scratch's last use is over */
    if (threadIdx.x % 32 == 0)
        scratch[threadIdx.x / 32] = v;
    __syncthreads();
    v = scratch[0];
    for (int w = 1; w < THREADS / 32; ++w)
        v = is_max ? fmaxf(v, scratch[w]) : v + scratch[w];
    return v;
}

__global__ void own_attention_rows(kb_attention_args a)
{
    extern __shared__ float p[]; /* the row's Tk scores, then probabilities */
    __shared__ float scratch[THREADS / 32];
    const int i = blockIdx.x % a.Tq, bh = blockIdx.x / a.Tq, h = bh % a.H, b = bh / a.H;
    const int hkv = h / (a.H / (a.Hkv ? a.Hkv : a.H)), Hkv = a.Hkv ? a.Hkv : a.H;
    const float *q = (const float *)a.q + (size_t)blockIdx.x * a.D;
    const float *k = (const float *)a.k + ((size_t)b * Hkv + hkv) * a.Tk * a.D;
    const float *v = (const float *)a.v + ((size_t)b * Hkv + hkv) * a.Tk * a.D;
    float *o = (float *)a.o + (size_t)blockIdx.x * a.D;
    const int last = a.causal ? i + a.Tk - a.Tq : a.Tk - 1; /* the last key this query sees */
    float m = -INFINITY;
    for (int j = threadIdx.x; j < a.Tk; j += THREADS) {
        float s = 0.0f;
        for (int d = 0; d < a.D; ++d)
            s += q[d] * k[(size_t)j * a.D + d];
        p[j] = j <= last ? s * a.scale : -INFINITY;
        m = fmaxf(m, p[j]);
    }
    m = block_reduce(m, true, scratch);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < a.Tk; j += THREADS) {
        p[j] = m == -INFINITY ? 0.0f : expf(p[j] - m);
        sum += p[j];
    }
    sum = block_reduce(sum, false, scratch); /* its barriers also publish p */
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int d = threadIdx.x; d < a.D; d += THREADS) {
        float acc = 0.0f;
        for (int j = 0; j <= last && j < a.Tk; ++j)
            acc += p[j] * v[(size_t)j * a.D + d];
        o[d] = acc * inv;
    }
}

/* f32 inputs, the default strides, and rows that fit shared memory. */
static const char *unsupported(const kb_shape *s)
{
    return s->d[3] > MAX_TK ? "more than 8192 keys: a row's scores do not fit its shared memory" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    (void)args, (void)ctx;
    return kb_cuda_status(cudaFuncSetAttribute(own_attention_rows, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               MAX_TK * (int)sizeof(float)));
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_attention_args *a = (const kb_attention_args *)args;
    (void)ctx;
    if (a->kv_stride || a->tk_len)
        return "a KV cache's strides and lengths are not supported";
    const long blocks = (long)a->B * a->H * a->Tq;
    own_attention_rows<<<blocks, THREADS, (size_t)a->Tk * sizeof(float), stream>>>(*a);
    KB_LAUNCHED();
}

KB_OWN_VARIANT("attention", {.name = "rows", .summary = "one block a query row, scores in shared memory",
                             .dtype = KB_F32, .math = KB_MATH_F32, .unsupported = unsupported,
                             .setup = setup, .launch = launch})
