/* merge_heads vectorized: 16 bytes a thread, the Llama model's prefill
 * kernel (model/llama_gpu.cu): thread i copies the i-th 16-byte chunk of
 * y from its head's row of o (8 bf16 values; the f32 form moves 4
 * floats).  Needs D a multiple of 16 / element size, else SKIPs.
 *
 * Builds on naive: one 16-byte load and store in place of 8 (bf16) or 4
 * (f32) narrow ones.
 * Prediction: near the copy ceiling in both dtypes at D >= 64.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 2,500
 * GB/s at 1x32x2048x64 (13.4 us), 59.0% of the run's 4237 GB/s memory ceiling,
 * 1.92x naive; bf16 1,833 GB/s (43.3%, 9.2 us), 2.78x; 45.2% (f32) and 30.0%
 * (bf16) at 32x8x128x64.
 * Gap to the limit: 41.0 points (f32) and 56.7 (bf16) at 1x32x2048x64, where a
 * copy kernel's was expected: the largest shape is a 9-13 us job. */
#include "ops/heads.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* o (B, H, T, hd) -> out (B T, H hd), 16 bytes a thread; the grid's y is
 * the batch, whose n H hd values lie together in both. */
template <typename T>
__global__ void merge_heads_vectorized_kernel(const T *__restrict__ o, int n, int H, int hd, T *__restrict__ out)
{
    constexpr int VEC = 16 / (int)sizeof(T);
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, v = hd / VEC;
    if (id >= (int64_t)n * H * v)
        return;
    const int c = (int)(id % v), h = (int)(id / v % H), t = (int)(id / v / H);
    const size_t batch = (size_t)n * H * hd;
    o += blockIdx.y * batch, out += blockIdx.y * batch;
    reinterpret_cast<uint4 *>(out)[id] = reinterpret_cast<const uint4 *>(o + ((size_t)h * n + t) * hd)[c];
}

template <typename T>
static const char *unsupported(const kb_shape *s)
{
    if (s->d[3] % (16 / sizeof(T)))
        return "needs D a multiple of 16 bytes' elements (16-byte copies)";
    return s->d[0] > 65535 ? "B over 65535 (the grid's y)" : NULL;
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_merge_heads_args *a = (const kb_merge_heads_args *)args;
    (void)ctx;
    const dim3 grid((unsigned)KB_CEIL_DIV((int64_t)a->T * a->H * a->D / (16 / sizeof(T)), 256), a->B);
    merge_heads_vectorized_kernel<T><<<grid, 256, 0, stream>>>((const T *)a->o, a->T, a->H, a->D, (T *)a->y);
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
