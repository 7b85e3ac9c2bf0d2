/* rope_backward naive: one thread per pair (token, head, i), rope's sincos
 * variant run backwards: the angle's sine and cosine by sincosf of
 * t * inv_freq[i] in fp32 (the forward's angle, bit for bit), the pair read
 * from its head's row of dq, dk or dv and turned back by it, (da, db) ->
 * (da cos + db sin, db cos - da sin), or copied for a value head, into its
 * place in token t's row of dqkv.  Both dtypes: bf16 widened to fp32, each
 * result rounded once.
 *
 * Builds on nothing: the rung the ladder starts from, and the baseline.
 * Consecutive threads take consecutive pairs of one head, so a warp reads
 * two runs of 32 elements D/2 apart and writes two, 4- or 2-byte accesses.
 * Prediction: as the forward's sincos (50.6% of the memory ceiling in f32,
 * 25.1% in bf16 at 2048x32x8x64): some 50-60% in f32 and 25-30% in bf16 at
 * 8192x32x8x128, where a warp's two runs are whole 128-byte lines in f32 but
 * half lines in bf16, and every pair pays a sincosf.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 2427
 * GB/s f32, 1223 bf16 at 8192x32x8x128, 57.3% and 28.9% of the run's 4239
 * GB/s memory ceiling (PyTorch eager 0.869 ms bf16, this 0.165: 5.28x).
 * Gap to the limit: 42.7 points in f32 and 71.1 in bf16 (40-50 and 70
 * expected): narrow accesses (one load instruction per 4 or 2 bytes) keep
 * too few bytes in flight per SM, and the sincosf of the same angle is
 * recomputed by every head of a token. */
#include "ops/rope_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

template <typename T>
__global__ void rope_backward_naive_kernel(const T *__restrict__ dq, const T *__restrict__ dk,
                                           const T *__restrict__ dv, int n, int H, int KV, int hd,
                                           const float *__restrict__ inv_freq, T *__restrict__ dqkv)
{
    const int64_t half = hd / 2, heads = (int64_t)H + 2 * KV;
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= n * heads * half)
        return;
    const int64_t i = id % half, head = id / half % heads, t = id / half / heads;
    const T *src = head < H        ? dq + (head * n + t) * hd
                   : head < H + KV ? dk + ((head - H) * n + t) * hd
                                   : dv + ((head - H - KV) * n + t) * hd;
    float a = kb_to_float(src[i]), b = kb_to_float(src[i + half]);
    if (head < H + KV) {
        float s, c;
        sincosf((float)t * inv_freq[i], &s, &c);
        const float da = a * c + b * s;
        b = b * c - a * s;
        a = da;
    }
    T *dst = dqkv + (t * heads + head) * hd;
    dst[i] = kb_from_float<T>(a);
    dst[i + half] = kb_from_float<T>(b);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rope_backward_args *a = (const kb_rope_backward_args *)args;
    (void)ctx;
    const int64_t pairs = (int64_t)a->T * ((int64_t)a->H + 2 * a->KV) * (a->D / 2);
    rope_backward_naive_kernel<T><<<(unsigned)KB_CEIL_DIV(pairs, 256), 256, 0, stream>>>(
        (const T *)a->dq, (const T *)a->dk, (const T *)a->dv, a->T, a->H, a->KV, a->D, a->inv_freq, (T *)a->dqkv);
    KB_LAUNCHED();
}

extern "C" const kb_variant rope_backward_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per pair, sincosf of t * inv_freq (the forward's angle), turned back",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per pair, sincosf of t * inv_freq, bf16 loads and stores",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
