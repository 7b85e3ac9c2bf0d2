/* bias naive: one thread per element, y = y + b[col], clamped at 0 when
 * relu: the basic stage's kernel (model/stage_basic.cu).
 *
 * Idea: the only rung: a coalesced elementwise kernel; b's C floats stay
 * in L1 and L2.
 * Prediction: ~85% of the copy ceiling on large matrices (8 bytes an
 * element); the stage's 512-token products are launches.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 2,615 GB/s
 * at 16384x3072r, 61.7% of the run's 4237 GB/s memory ceiling, under the ~85%
 * predicted; the stage's 512x576 and 512x1536r in 5.0 and 6.5 us (11.1%, 22.9%).
 * Gap to the limit: 38.3 points at 16384x3072r: 4-byte accesses and the modulo
 * by C; a product's epilogue would remove the pass altogether (the other
 * stages' cuBLASLt bias epilogues). */
#include "ops/bias.h"
#include "kernels/cuda_util.h"

/* y (R x C) += b along each row, then ReLU when relu: the document's B
 * "duplicatively added to each column", columns being our rows. */
__global__ void bias_naive_kernel(float *y, const float *__restrict__ b, int R, int C, int relu)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)R * C)
        return;
    const float v = y[i] + b[i % C];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_bias_args *a = (const kb_bias_args *)args;
    (void)ctx;
    bias_naive_kernel<<<(unsigned)KB_CEIL_DIV((int64_t)a->R * a->C, 256), 256, 0, stream>>>(a->y, a->b, a->R, a->C,
                                                                                           a->relu);
    KB_LAUNCHED();
}

extern "C" const kb_variant bias_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element (the basic stage's)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
