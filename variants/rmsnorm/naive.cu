/* rmsnorm naive: one thread per row, two passes over the row in global
 * memory: the mean of squares, then y = x * rsqrt(mean(x^2) + eps) * gamma.
 * No shift is needed: a sum of squares has no cancellation (the row offset
 * by 1e4 only makes every term large), and eps keeps the row scaled by
 * 1e-3 finite and accurate.  The baseline.
 *
 * Idea: the starting point.
 * Prediction: far below the copy ceiling: a warp's loads are C floats apart
 * (uncoalesced) and only R threads run.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 258 GB/s
 * at 65536x4096, 8.6% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 11.7x (see vectorized). History:
 * docs/notes/softmax-layernorm.md.
 * The f16 form: the same code on f16 storage, fp32 math. */
#include <cuda_fp16.h>
#include "ops/rmsnorm.h"
#include "kernels/cuda_util.h"

#define BLOCK 128

/* T: the storage type, float or 16-bit; the arithmetic is fp32. */
template <typename T>
__global__ void __launch_bounds__(BLOCK) rmsnorm_naive_kernel(int R, int C, float eps, const T *x, const T *gamma,
                                                             T *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= R)
        return;
    const T *in = x + (size_t)row * C;
    T *out = y + (size_t)row * C;

    float sq = 0.0f;
    for (int j = 0; j < C; ++j)
        sq += (float)in[j] * (float)in[j];
    const float rrms = rsqrtf(sq / C + eps);

    for (int j = 0; j < C; ++j)
        out[j] = T((float)in[j] * rrms * (float)gamma[j]);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_args *a = (const kb_rmsnorm_args *)args;
    (void)ctx;
    rmsnorm_naive_kernel<<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(a->R, a->C, a->eps, (const T *)a->x,
                                                                         (const T *)a->gamma, (T *)a->y);
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
        .summary = "one thread per row, two passes over global memory, f16 in and out, fp32 math",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
