/* merge_heads vectorized: 16 bytes a thread, the Llama model's prefill
 * kernel (model/llama_gpu.cu): thread i copies the i-th 16-byte chunk of
 * y from its head's row of o (8 bf16 values; the f32 form moves 4
 * floats).  Needs D a multiple of 16 / element size, else SKIPs.
 *
 * Builds on naive: one 16-byte load and store in place of 8 (bf16) or 4
 * (f32) narrow ones.
 * Prediction: near the copy ceiling in both dtypes at D >= 64.
 * Measured: not yet (no GPU run).
 * Gap to the limit: none expected beyond a copy kernel's. */
#include "ops/heads.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* o (B, H, T, hd) -> out (B T, H hd), VEC values (16 bytes) a thread. */
template <int VEC>
__global__ void merge_heads_vectorized_kernel(const uint4 *__restrict__ o, int B, int n, int H, int hd,
                                              uint4 *__restrict__ out)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, v = hd / VEC;
    if (id >= (int64_t)B * n * H * v)
        return;
    const int c = (int)(id % v), h = (int)(id / v % H);
    const int64_t bt = id / v / H, b = bt / n, t = bt % n;
    out[id] = o[((b * H + h) * n + t) * v + c];
}

template <typename T>
static const char *unsupported(const kb_shape *s)
{
    return s->d[3] % (16 / sizeof(T)) ? "needs D a multiple of 16 bytes' elements (16-byte copies)" : NULL;
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_merge_heads_args *a = (const kb_merge_heads_args *)args;
    (void)ctx;
    constexpr int VEC = 16 / sizeof(T);
    const int64_t n = (int64_t)a->B * a->T * a->H * a->D / VEC;
    merge_heads_vectorized_kernel<VEC><<<(unsigned)KB_CEIL_DIV(n, 256), 256, 0, stream>>>(
        (const uint4 *)a->o, a->B, a->T, a->H, a->D, (uint4 *)a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant merge_heads_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "16 bytes a thread (4 floats)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = unsupported<float>,
        .launch = launch<float>,
    },
    {
        .name = "vectorized",
        .summary = "16 bytes a thread, 8 values (the Llama prefill's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported<__nv_bfloat16>,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
