/* rope sincos: one thread per pair (token, head, i), the angle's sine and
 * cosine by sincosf from inv_freq: the Llama model's prefill kernel
 * (model/llama_gpu.cu), in both dtypes.  Query and key pairs are turned,
 * value pairs copied, each to its place in q or the cache.
 *
 * Builds on table: no table to read, at the price of a sincosf (its slow
 * path for large arguments is rare at the models' positions).
 * Prediction: as table, near the copy ceiling: the sines hide behind the
 * 2- or 4-byte loads of the pair.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 2,144
 * GB/s at 2048x32x8x64 (23.5 us), 50.6% of the run's 4237 GB/s memory ceiling,
 * 0.96x table; bf16 1,063 GB/s (25.1%), 0.93x; 15.5% (f32) at 512x9x3x64; a
 * decode step's 1x32x8x64x8191 in 4.1-4.2 us, 0.99x (f32) and 0.98x (bf16).
 * Gap to the limit: 49.4 points (f32) and 74.9 (bf16) at 2048x32x8x64, not the
 * near-ceiling predicted: a pair's two loads are D/2 apart, each a half-warp
 * run of D/2 elements, so a warp covers whole sectors only for D >= 64. */
#include "ops/rope.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"
#include "kernels/llama.cuh"

/* qkv [n, (H + 2 KV) hd] of positions p0.. -> q (H, n, hd) rotated, k
 * rotated and v into (KV, ld, hd) at their positions. */
template <typename T>
__global__ void rope_sincos_kernel(const T *__restrict__ qkv, int n, int p0, int H, int KV, int hd, int ld,
                                   const float *__restrict__ inv_freq, T *__restrict__ q, T *__restrict__ kc,
                                   T *__restrict__ vc)
{
    const int half = hd / 2, heads = H + 2 * KV;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * heads * half)
        return;
    const int i = (int)(id % half), head = (int)(id / half % heads), t = (int)(id / half / heads), pos = p0 + t;
    const T *src = qkv + ((size_t)t * heads + head) * hd;
    float a = kb_to_float(src[i]), b = kb_to_float(src[i + half]);
    T *dst;
    if (head < H + KV) {
        kb_rope_rotate(a, b, pos, inv_freq[i]);
        dst = head < H ? q + ((size_t)head * n + t) * hd : kc + ((size_t)(head - H) * ld + pos) * hd;
    } else
        dst = vc + ((size_t)(head - H - KV) * ld + pos) * hd;
    dst[i] = kb_from_float<T>(a);
    dst[i + half] = kb_from_float<T>(b);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rope_args *a = (const kb_rope_args *)args;
    (void)ctx;
    const int64_t pairs = (int64_t)a->T * (a->H + 2 * a->KV) * (a->D / 2);
    rope_sincos_kernel<T><<<(unsigned)KB_CEIL_DIV(pairs, 256), 256, 0, stream>>>(
        (const T *)a->qkv, a->T, a->p0, a->H, a->KV, a->D, (int)a->ld, a->inv_freq, (T *)a->q, (T *)a->k, (T *)a->v);
    KB_LAUNCHED();
}

extern "C" const kb_variant rope_sincos[] = {
    {
        .name = "sincos",
        .summary = "one thread per pair, sincosf of pos * inv_freq",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "sincos",
        .summary = "one thread per pair, sincosf of pos * inv_freq (the Llama prefill's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
