/* embed separate: the baseline, two kernels as an unfused framework runs
 * them: a gather writes y = table[ids], then a second kernel adds PE to y
 * in place, reading y back.
 * Prediction: 16 bytes moved per element for 8 counted, so ~half of the
 * fused variant's speed on large shapes.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 1,213 GB/s
 * at 16x1024x32000x4096, 40.4% of the run's 3005 GB/s memory ceiling.
 * Gap to the limit: 2.5x, the round trip of y through memory (fused removes
 * it).  History: docs/notes/elementwise.md. */
#include "kernels/cuda_util.h"
#include "ops/embed.h"
#include "kernels/posenc.cuh"
#include "ops/posenc.h"

__global__ void embed_gather_kernel(int64_t n, int D, const int *ids, const float *table, float *y)
{
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n * D;
         idx += (int64_t)gridDim.x * blockDim.x)
        y[idx] = table[(int64_t)ids[idx / D] * D + idx % D];
}

/* One thread per (token, pair): y += (sin, cos). */
__global__ void embed_add_pe_kernel(int64_t n, int T, int D, float *y)
{
    const int pairs = (D + 1) / 2;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n * pairs;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t tok = idx / pairs;
        const int i = (int)(idx % pairs);
        const float2 pe = kb_pe_pair((int)(tok % T), i, D, KB_POSENC_SEED_SCALE);
        float *row = y + tok * D;
        row[2 * i] += pe.x;
        if (2 * i + 1 < D)
            row[2 * i + 1] += pe.y;
    }
}

static int grid_for(int64_t work)
{
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    int64_t blocks = KB_CEIL_DIV(work, 256);
    return (int)(blocks < 16 * sms ? blocks : 16 * sms);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_embed_args *a = (const kb_embed_args *)args;
    (void)ctx;
    const int64_t n = (int64_t)a->B * a->T;
    embed_gather_kernel<<<grid_for(n * a->D), 256, 0, stream>>>(n, a->D, a->ids, a->table, a->y);
    embed_add_pe_kernel<<<grid_for(n * ((a->D + 1) / 2)), 256, 0, stream>>>(n, a->T, a->D, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant embed_separate[] = {
    {
        .name = "separate",
        .summary = "gather kernel, then a PE-add kernel reading y back (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
