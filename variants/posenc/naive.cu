/* posenc naive: one thread per table element, computing its frequency
 * (expf), its angle and sinf or cosf.  Neighbouring threads of a pair each
 * evaluate the same frequency and angle, and every element calls expf.
 * The baseline.
 * Prediction: bound by the special-function units, not by stores: ~10
 * instructions of SFU work per 4-byte store.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 843 GB/s
 * at 8192x4096, 28.0% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 3.6x; the table is written once (4*T*D bytes), and sincos
 * halves the transcendental work. History: docs/notes/elementwise.md. */
#include "kernels/cuda_util.h"
#include "kernels/posenc.cuh"
#include "ops/posenc.h"

__global__ void posenc_naive_kernel(int T, int D, float scale, float *pe)
{
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (int64_t)T * D)
        return;
    int pos = (int)(idx / D), j = (int)(idx % D);
    float angle = (float)pos * kb_pe_frequency(j / 2, D, scale);
    pe[idx] = j % 2 ? cosf(angle) : sinf(angle);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_posenc_args *a = (const kb_posenc_args *)args;
    (void)ctx;
    int64_t n = (int64_t)a->T * a->D;
    posenc_naive_kernel<<<(unsigned)KB_CEIL_DIV(n, 256), 256, 0, stream>>>(a->T, a->D, a->scale, a->pe);
    KB_LAUNCHED();
}

extern "C" const kb_variant posenc_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element: expf, then sinf or cosf",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
