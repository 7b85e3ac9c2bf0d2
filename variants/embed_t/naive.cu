/* embed_t naive: one thread per element of x, scale times the table's
 * entry (row c of Et, column ids[t]) plus pe when given: the fp32 stages'
 * embedding (model/stage_gpu.cu).
 *
 * Idea: the only rung: the fp32 stages keep the embedding transposed for
 * the LM head and read a token's column of it here.
 * Prediction: far below the copy ceiling: consecutive threads read
 * entries V floats apart, a 32-byte sector for every 4 bytes used, so
 * some 1/8 of the bandwidth.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 312 GB/s
 * at 1024x50257x768 (30.3 us), 7.4% of the run's 4237 GB/s memory ceiling,
 * under the 1/8 predicted; 228 GB/s (5.4%) at 512x49152x576.
 * Gap to the limit: 92.6 points (13.6x) at 1024x50257x768: the sectors; a
 * tiled transpose through shared memory would read whole lines, but the
 * stages' embedding is a few hundred tokens once per forward. */
#include "ops/embed_t.h"
#include "kernels/cuda_util.h"

__global__ void embed_t_naive_kernel(const int *__restrict__ ids, int n, const float *__restrict__ table_t, int vocab,
                                     int d, float scale, const float *__restrict__ pe, float *__restrict__ x)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)n * d)
        return;
    const int64_t t = i / d, c = i % d;
    const float e = scale * table_t[c * vocab + ids[t]];
    x[i] = pe ? e + pe[i] : e;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_embed_t_args *a = (const kb_embed_t_args *)args;
    (void)ctx;
    const int64_t total = (int64_t)a->T * a->D;
    embed_t_naive_kernel<<<(unsigned)KB_CEIL_DIV(total, 256), 256, 0, stream>>>(a->ids, a->T, a->table_t, a->V, a->D,
                                                                                a->scale, a->pe, a->x);
    KB_LAUNCHED();
}

extern "C" const kb_variant embed_t_naive[] = {
    {
        .name = "naive",
        .summary = "one thread per element, a token's column of the transposed table (the fp32 stages')",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
