/* rope table: one thread per pair (token, head, i), the angle's cosine
 * and sine read from the (position, pair) table: the fp32 modern stage's
 * kernel (model/stage_modern.cu), in both dtypes.  Query and key pairs are
 * turned, value pairs copied, each to its place in q or the cache.
 *
 * Idea: the starting point and the baseline, as HF computes it (cos and
 * sin of every position first, then the rotation).
 * Prediction: near the copy ceiling; the table's 8 bytes a pair are read
 * by every head of a token, so from L2 after the first.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 2,228
 * GB/s at 2048x32x8x64 (22.6 us), 52.6% of the run's 4237 GB/s memory ceiling;
 * bf16 1,141 GB/s (26.9%); 15.6% (f32) at 512x9x3x64.
 * Gap to the limit: 47.4 points (f32) and 73.1 (bf16) at 2048x32x8x64, not the
 * near-ceiling predicted; as sincos, half-warp runs of D/2 elements. */
#include "ops/rope.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* qkv [n, (H + 2 KV) hd] of positions p0.. -> q (H, n, hd) rotated, k
 * rotated and v into (KV, ld, hd) at their positions: the layer's cache
 * (ld = max_len) or a prefill's own keys (p0 = 0, ld = n). */
template <typename T>
__global__ void rope_table_kernel(const T *__restrict__ qkv, int n, int p0, int H, int KV, int hd, int64_t ld,
                                  const float2 *__restrict__ rope, T *__restrict__ q, T *__restrict__ kc,
                                  T *__restrict__ vc)
{
    const int half = hd / 2, heads = H + 2 * KV;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * heads * half)
        return;
    const int i = (int)(id % half), head = (int)(id / half % heads), t = (int)(id / half / heads), pos = p0 + t;
    const T *src = qkv + ((int64_t)t * heads + head) * hd;
    float a = kb_to_float(src[i]), b = kb_to_float(src[i + half]);
    if (head < H + KV) {
        const float2 cs = rope[(int64_t)pos * half + i];
        const float ra = a * cs.x - b * cs.y;
        b = b * cs.x + a * cs.y;
        a = ra;
    }
    T *dst = head < H        ? q + ((int64_t)head * n + t) * hd
             : head < H + KV ? kc + ((int64_t)(head - H) * ld + pos) * hd
                             : vc + ((int64_t)(head - H - KV) * ld + pos) * hd;
    dst[i] = kb_from_float<T>(a);
    dst[i + half] = kb_from_float<T>(b);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rope_args *a = (const kb_rope_args *)args;
    (void)ctx;
    const int64_t pairs = (int64_t)a->T * (a->H + 2 * a->KV) * (a->D / 2);
    rope_table_kernel<T><<<(unsigned)KB_CEIL_DIV(pairs, 256), 256, 0, stream>>>(
        (const T *)a->qkv, a->T, a->p0, a->H, a->KV, a->D, a->ld, (const float2 *)a->cos_sin, (T *)a->q, (T *)a->k,
        (T *)a->v);
    KB_LAUNCHED();
}

extern "C" const kb_variant rope_table[] = {
    {
        .name = "table",
        .summary = "one thread per pair, (cos, sin) from the position table (the fp32 modern stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "table",
        .summary = "one thread per pair, (cos, sin) from the position table",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
