/* split_heads naive: one thread per output element, part by part, reading
 * x where the fused product put it: the fp32 transformer's kernel
 * (model/forward_gpu.cu), in both dtypes.
 *
 * Idea: the starting point and the baseline.  Writes are coalesced; a
 * warp's reads are runs of D consecutive elements of one token's row.
 * Prediction: near the copy ceiling in fp32 for D >= 32; bf16's 2-byte
 * accesses issue twice the instructions per byte.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 1,106
 * GB/s at 1x2048x3x32x64 (91.1 us), 26.1% of the run's 4237 GB/s memory
 * ceiling, far from the near-ceiling predicted; bf16 557 GB/s (13.1%); f32
 * 1,053 GB/s (24.9%) at 32x128x3x8x64.
 * Gap to the limit: 73.9 points (f32) and 86.9 (bf16) at 1x2048x3x32x64: the
 * narrow accesses, and the 64-bit divisions of the index (five per element). */
#include "ops/heads.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* x is n x (parts * H * dh), token-major (b, t); part p goes to out[p] in
 * (B, H, T, dh) order, the layout the attention op reads. */
template <typename T>
__global__ void split_heads_naive_kernel(const T *__restrict__ x, int parts, int B, int Tn, int H, int dh,
                                         T *__restrict__ o0, T *__restrict__ o1, T *__restrict__ o2)
{
    const int64_t per_part = (int64_t)B * Tn * H * dh;
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= per_part * parts)
        return;
    const int p = (int)(i / per_part);
    int64_t r = i % per_part;
    const int c = (int)(r % dh);
    r /= dh;
    const int t = (int)(r % Tn);
    r /= Tn;
    const int h = (int)(r % H);
    const int b = (int)(r / H);
    const int d = H * dh;
    T *o = p == 0 ? o0 : p == 1 ? o1 : o2;
    o[i - p * per_part] = x[((int64_t)b * Tn + t) * parts * d + (int64_t)p * d + h * dh + c];
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_split_heads_args *a = (const kb_split_heads_args *)args;
    (void)ctx;
    const int64_t n = (int64_t)a->P * a->B * a->T * a->H * a->D;
    split_heads_naive_kernel<T><<<(unsigned)KB_CEIL_DIV(n, 256), 256, 0, stream>>>(
        (const T *)a->x, a->P, a->B, a->T, a->H, a->D, (T *)a->out[0], (T *)a->out[1], (T *)a->out[2]);
    KB_LAUNCHED();
}

extern "C" const kb_variant split_heads_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element, part by part (the fp32 transformer's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per element, part by part",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
