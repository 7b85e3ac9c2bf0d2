/* layernorm naive: one thread per row, three passes over the row in global
 * memory: the mean, the variance around it, then y = (x - mean) * rstd *
 * gamma + beta (biased variance, eps from the args).  The baseline.
 *
 * Numerics, kept by every layernorm file: values are shifted by the row's
 * first element before anything is summed (d = x - x[0] is exact for values
 * near x[0]), and mean and variance are those of d.  For a row with mean 1e4
 * and variance 1e-2, E[x^2] - E[x]^2 in fp32 loses every digit and even
 * x - mean with an fp32 mean of 1e4 carries an error of ~1e-3 (an ulp of 1e4)
 * against a standard deviation of 0.1; on d, both stay at fp32 accuracy.
 * The normalization uses d too: y = (d - mean_d) * rstd * gamma + beta.
 *
 * Idea: the starting point of the ladder.
 * Prediction: far below the copy ceiling: a warp's loads are C floats apart
 * (one 32-byte sector per 4 useful bytes) and only R threads run.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 229 GB/s
 * at 65536x4096, 7.6% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 13.1x; every later file fixes one thing. History:
 * docs/notes/softmax-layernorm.md.
 * The f16 form: the same code on f16 storage, fp32 math.  Measured f16
 * (results/h200/kbench-20261202-075017.csv, H200, cold L2): 163 GB/s at
 * 65536x4096, 3.8% of that run's 4237 GB/s memory ceiling. */
#include <math.h>
#include <cuda_fp16.h>
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"

#define BLOCK 128

/* T: the storage type, float or 16-bit; the arithmetic is fp32. */
template <typename T>
__global__ void __launch_bounds__(BLOCK) layernorm_naive_kernel(int R, int C, float eps, const T *x, const T *gamma,
                                                               const T *beta, T *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= R)
        return;
    const T *in = x + (size_t)row * C;
    T *out = y + (size_t)row * C;
    const float shift = (float)in[0];

    float sum = 0.0f;
    for (int j = 0; j < C; ++j)
        sum += (float)in[j] - shift;
    const float mean = sum / C;

    float sq = 0.0f;
    for (int j = 0; j < C; ++j) {
        float d = (float)in[j] - shift - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(sq / C + eps);

    for (int j = 0; j < C; ++j)
        out[j] = T(((float)in[j] - shift - mean) * rstd * (float)gamma[j] + (float)beta[j]);
}

template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    (void)ctx;
    layernorm_naive_kernel<<<KB_CEIL_DIV(a->R, BLOCK), BLOCK, 0, stream>>>(
        a->R, a->C, a->eps, (const T *)a->x, (const T *)a->gamma, (const T *)a->beta, (T *)a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per row, three passes over global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "naive",
        .summary = "one thread per row, three passes over global memory, f16 in and out, fp32 math",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
