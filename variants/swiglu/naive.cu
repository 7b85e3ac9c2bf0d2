/* swiglu naive: one thread per output element, h = g / (1 + exp(-g)) * u
 * with the accurate expf: the fp32 `modern` stage's kernel
 * (model/stage_modern.cu), in both dtypes (bf16 loads widened to fp32, h
 * rounded once).
 *
 * Idea: the starting point, and the baseline: consecutive threads read
 * consecutive gates and ups, so every load is coalesced, 4 or 2 bytes at a
 * time.
 * Prediction: near the copy ceiling in fp32 at the models' widths (the
 * divide and expf hide behind the loads); bf16's 2-byte loads issue twice
 * the instructions per byte, some 70-80%.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): f32 2,233
 * GB/s at 4096x14336 (316 us), 52.7% of the run's 4237 GB/s memory ceiling, and
 * bf16 1,570 GB/s (37.1%), both far under the prediction; 26.1% (f32) and 15.2%
 * (bf16) at 512x1536.
 * Gap to the limit: 47.3 points (f32) and 62.9 (bf16) at 4096x14336: the 4-
 * and 2-byte loads (vectorized takes 16 bytes a load, 2.52x on bf16). */
#include "ops/swiglu.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

/* gu [n, 2 ff] (gate | up) -> a [n, ff] = silu(gate) * up. */
template <typename T>
__global__ void swiglu_naive_kernel(const T *__restrict__ gu, int n, int ff, T *__restrict__ a)
{
    const int64_t id = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= (int64_t)n * ff)
        return;
    const int64_t t = id / ff, j = id % ff;
    const float g = kb_to_float(gu[t * 2 * ff + j]), u = kb_to_float(gu[t * 2 * ff + ff + j]);
    a[id] = kb_from_float<T>(g / (1.0f + expf(-g)) * u);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_swiglu_args *a = (const kb_swiglu_args *)args;
    (void)ctx;
    swiglu_naive_kernel<T><<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(
        (const T *)a->gu, a->R, a->C, (T *)a->h);
    KB_LAUNCHED();
}

extern "C" const kb_variant swiglu_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element, expf (the fp32 modern stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per element, expf, bf16 loads and stores",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
