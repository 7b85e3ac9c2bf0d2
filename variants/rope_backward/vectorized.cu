/* rope_backward vectorized: one block per token, its angles computed once,
 * 16-byte loads and stores.  The block's threads first take the token's
 * D/2 angles, sincosf of t * inv_freq[i] in fp32 as naive's (so both rungs
 * turn by the same cosines and sines), into shared memory; then each
 * thread takes 16-byte chunks of a head's two halves (4 pairs in f32, 8 in
 * bf16), turns them back with the shared angles, or copies them for a value
 * head, and stores both chunks whole into the token's dqkv row.  Both
 * dtypes; needs D a multiple of 8 (f32) or 16 (bf16), so that every half
 * row starts on 16 bytes, and D <= 12288 (the angles in 48 KB of shared
 * memory), else SKIPs.
 *
 * Builds on naive: 16-byte accesses (a quarter or an eighth of the load
 * and store instructions), and one sincosf per (token, pair) instead of
 * one per (token, head, pair): H + KV times fewer at a barrier's cost.
 * Angles computed, not read from a cos/sin table: a table would be 4 MB at
 * 8192 x 64 pairs, read again by every head from L2, and a second angle
 * convention beside naive's.
 * Prediction: near swiglu_backward vectorized's 88.8% of the memory
 * ceiling at 8192x32x8x128 (48 heads of 128 a token: 24 KB read and 24 KB
 * written per block in f32, 12 KB in bf16), lower at 4096x12x4x64 (20 heads
 * of 64: 2.5 KB per block in bf16, so the sincosf and the barrier weigh more).
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 3837
 * GB/s f32, 3598 bf16 at 8192x32x8x128, 90.5% and 84.9% of the run's 4239
 * GB/s memory ceiling; 15.5x PyTorch eager's autograd in bf16.
 * Gap to the limit: 9.5 points in f32 and 15.1 in bf16 at 8192x32x8x128, a
 * copy kernel's, and 38.7 and 56.3 at 4096x12x4x64, well over the 20-25
 * expected. */
#include "ops/rope_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

enum { THREADS = 128, MAX_HALF = 48 * 1024 / sizeof(float2) };

/* 16 bytes of T, loaded and stored as one access. */
template <typename T> struct alignas(16) Chunk {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

/* Chunks a and b of a head's halves turned back by the angles cs[0..N). */
template <typename T>
__device__ __forceinline__ void turn_back(Chunk<T> &a, Chunk<T> &b, const float2 *cs)
{
#pragma unroll
    for (int e = 0; e < Chunk<T>::N; ++e) {
        const float x = kb_to_float(a.v[e]), y = kb_to_float(b.v[e]), c = cs[e].x, s = cs[e].y;
        a.v[e] = kb_from_float<T>(x * c + y * s);
        b.v[e] = kb_from_float<T>(y * c - x * s);
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
rope_backward_vectorized_kernel(const T *__restrict__ dq, const T *__restrict__ dk, const T *__restrict__ dv, int n,
                                int H, int KV, int hd, const float *__restrict__ inv_freq, T *__restrict__ dqkv)
{
    extern __shared__ float2 cs[]; /* (cos, sin) of the token's pairs */
    const int64_t t = blockIdx.x, heads = (int64_t)H + 2 * KV;
    const int half = hd / 2, chunks = half / Chunk<T>::N;
    for (int i = threadIdx.x; i < half; i += THREADS) {
        float s, c;
        sincosf((float)t * inv_freq[i], &s, &c);
        cs[i] = make_float2(c, s);
    }
    __syncthreads();
    for (int64_t k = threadIdx.x; k < heads * chunks; k += THREADS) {
        const int64_t head = k / chunks;
        const int c = (int)(k % chunks) * Chunk<T>::N;
        const T *src = head < H        ? dq + (head * n + t) * hd
                       : head < H + KV ? dk + ((head - H) * n + t) * hd
                                       : dv + ((head - H - KV) * n + t) * hd;
        Chunk<T> a = *reinterpret_cast<const Chunk<T> *>(src + c);
        Chunk<T> b = *reinterpret_cast<const Chunk<T> *>(src + half + c);
        if (head < H + KV)
            turn_back(a, b, cs + c);
        T *dst = dqkv + (t * heads + head) * hd;
        *reinterpret_cast<Chunk<T> *>(dst + c) = a;
        *reinterpret_cast<Chunk<T> *>(dst + half + c) = b;
    }
}

template <typename T>
static const char *unsupported(const kb_shape *s)
{
    if (s->d[3] % (2 * Chunk<T>::N))
        return sizeof(T) == 4 ? "needs D a multiple of 8 (16-byte chunks of each half row)"
                              : "needs D a multiple of 16 (16-byte chunks of each half row)";
    return s->d[3] / 2 > MAX_HALF ? "needs D <= 12288 (the token's angles in 48 KB of shared memory)" : NULL;
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rope_backward_args *a = (const kb_rope_backward_args *)args;
    (void)ctx;
    rope_backward_vectorized_kernel<T><<<(unsigned)a->T, THREADS, (size_t)(a->D / 2) * sizeof(float2), stream>>>(
        (const T *)a->dq, (const T *)a->dk, (const T *)a->dv, a->T, a->H, a->KV, a->D, a->inv_freq, (T *)a->dqkv);
    KB_LAUNCHED();
}

extern "C" const kb_variant rope_backward_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "a block per token, its angles once in shared memory, 16-byte chunks (4 pairs)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = unsupported<float>,
        .launch = launch<float>,
    },
    {
        .name = "vectorized",
        .summary = "a block per token, its angles once in shared memory, 16-byte chunks (8 pairs)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported<__nv_bfloat16>,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
