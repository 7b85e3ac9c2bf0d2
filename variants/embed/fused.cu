/* embed fused: one kernel, one thread per (token, pair): read the id and
 * the two table values, add (sin, cos) of the position, write both.  y is
 * written once and never read.
 * Builds on separate: ~2x on large shapes predicted (8 bytes moved per
 * element instead of 16), the sincosf hidden behind the gather's latency.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,434 GB/s
 * at 16x1024x32000x4096, 81.0% of the run's 3005 GB/s memory ceiling, 2.01x
 * separate.
 * Gap to the limit: 19 points: a 4-byte gather per pair from a random table
 * row; rows are contiguous, so a warp still reads whole lines. History:
 * docs/notes/elementwise.md. */
#include "kernels/cuda_util.h"
#include "ops/embed.h"
#include "kernels/posenc.cuh"
#include "ops/posenc.h"

__global__ void embed_fused_kernel(int64_t n, int T, int D, const int *__restrict__ ids,
                                   const float *__restrict__ table, float *__restrict__ y)
{
    const int pairs = (D + 1) / 2;
    for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n * pairs;
         idx += (int64_t)gridDim.x * blockDim.x) {
        const int64_t tok = idx / pairs;
        const int i = (int)(idx % pairs);
        const float2 pe = kb_pe_pair((int)(tok % T), i, D, KB_POSENC_SEED_SCALE);
        const float *src = table + (int64_t)__ldg(ids + tok) * D;
        float *row = y + tok * D;
        row[2 * i] = __ldg(src + 2 * i) + pe.x;
        if (2 * i + 1 < D)
            row[2 * i + 1] = __ldg(src + 2 * i + 1) + pe.y;
    }
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_embed_args *a = (const kb_embed_args *)args;
    (void)ctx;
    int device, sms;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t n = (int64_t)a->B * a->T, blocks = KB_CEIL_DIV(n * ((a->D + 1) / 2), 256);
    embed_fused_kernel<<<(int)(blocks < 16 * sms ? blocks : 16 * sms), 256, 0, stream>>>(n, a->T, a->D, a->ids,
                                                                                     a->table, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant embed_fused[] = {
    {
        .name = "fused",
        .summary = "one kernel: gather the table row and add PE, y written once",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
