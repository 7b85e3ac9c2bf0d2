/* merge_heads naive: one thread per output element, reading o where the
 * head layout puts it: the fp32 transformer's and the modern stage's
 * kernel (model/forward_gpu.cu, model/stage_modern.cu, whose B is 1), in
 * both dtypes.
 *
 * Idea: the starting point and the baseline.  Writes are coalesced; a
 * warp's reads are runs of D consecutive elements, one run per head.
 * Prediction: near the copy ceiling in fp32 for D >= 32 (whole sectors);
 * bf16's 2-byte accesses issue twice the instructions per byte.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 1,300
 * GB/s at 1x32x2048x64 (25.8 us), 30.7% of the run's 4237 GB/s memory ceiling,
 * far from the near-ceiling predicted; bf16 659 GB/s (15.6%); f32 1,107 GB/s
 * (26.1%) at 32x8x128x64.
 * Gap to the limit: 69.3 points (f32) and 84.4 (bf16) at 1x32x2048x64: the
 * narrow accesses (vectorized moves 16 bytes a thread). */
#include "ops/heads.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* o is (B, H, T, dh); x is (B T) x (H dh), token-major. */
template <typename T>
__global__ void merge_heads_naive_kernel(const T *__restrict__ o, int B, int Tn, int H, int dh, T *__restrict__ x)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int d = H * dh;
    if (i >= (int64_t)B * Tn * d)
        return;
    const int col = (int)(i % d), h = col / dh, c = col % dh;
    const int64_t token = i / d, b = token / Tn, t = token % Tn;
    x[i] = o[((b * H + h) * Tn + t) * dh + c];
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_merge_heads_args *a = (const kb_merge_heads_args *)args;
    (void)ctx;
    const int64_t n = (int64_t)a->B * a->T * a->H * a->D;
    merge_heads_naive_kernel<T><<<(unsigned)KB_CEIL_DIV(n, 256), 256, 0, stream>>>((const T *)a->o, a->B, a->T, a->H,
                                                                                  a->D, (T *)a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant merge_heads_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element (the fp32 transformer's and modern stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per element",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
