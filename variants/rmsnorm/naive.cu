/* rmsnorm naive: one thread per row, two passes over the row in global
 * memory: the mean of squares, then y = x * rsqrt(mean(x^2) + eps) * gamma.
 * No shift is needed: a sum of squares has no cancellation (the row offset
 * by 1e4 only makes every term large), and eps keeps the row scaled by
 * 1e-3 finite and accurate.  The baseline, in every form: the bf16 and
 * f16 ones round y to their type as they store it (x and gamma are fp32).
 *
 * Idea: the starting point.
 * Prediction: far below the copy ceiling: a warp's loads are C floats apart
 * (uncoalesced) and only R threads run.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 258 GB/s
 * at 65536x4096, 8.6% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 11.7x (see vectorized). History:
 * docs/notes/softmax-layernorm.md.  The f16 form on an H200
 * (results/h200/kbench-20261202-075017.csv): 282 GB/s at 65536x4096, 6.7%
 * of the run's 4237 GB/s ceiling. */
#include "ops/rmsnorm.h"
#include "kernels/cuda_util.h"
#include "kernels/dtype.cuh"

#define BLOCK 128

template <typename T>
__global__ void __launch_bounds__(BLOCK) rmsnorm_naive_kernel(int R, int C, float eps, const float *x,
                                                             const float *gamma, T *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= R)
        return;
    const float *in = x + (size_t)row * C;
    T *out = y + (size_t)row * C;

    float sq = 0.0f;
    for (int j = 0; j < C; ++j)
        sq += in[j] * in[j];
    const float rrms = rsqrtf(sq / C + eps);

    for (int j = 0; j < C; ++j)
        out[j] = kb_from_float<T>(in[j] * rrms * gamma[j]);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_args *a = (const kb_rmsnorm_args *)args;
    (void)ctx;
    rmsnorm_naive_kernel<T><<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(a->R, a->C, a->eps, a->x, a->gamma,
                                                                           (T *)a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant rmsnorm_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per row, two passes over global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per row, two passes over global memory, y rounded to bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .launch = launch<__nv_bfloat16>,
    },
    {
        .name = "naive",
        .summary = "one thread per row, two passes over global memory, y rounded to f16",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
