/* layernorm split_row: for C >= 32768, several ordinary blocks per row
 * (kernels/split_row.cuh).  The row is cut into chunks of 8192 floats, one
 * 256-thread block each; a block copies its chunk into shared memory by
 * 16-byte cp.async (in flight without holding registers: 40 per thread,
 * with 8-16 bytes spilled, six blocks per SM).  Values are shifted by the
 * row's first element (d = x - x[0], as in welford, so that a row with mean
 * 1e4 and variance 1e-2 keeps its digits).  Each thread takes the exact mean
 * of its own d and then their squared deviations from it (two passes over
 * shared memory); the threads' (n, mean, M2) triples merge by Chan's
 * formula, and the block publishes its chunk's triple in global memory and
 * waits for the row's other triples (tickets in start order, so the wait
 * cannot deadlock), merged in chunk order.  y = (d - mean) * rstd * gamma +
 * beta is written from shared memory (evict-first stores), gamma and beta
 * through the read-only path (the same columns for every row:
 * L2-resident).  x read once, y written once.
 *
 * Builds on welford (one block per row, the row in its registers up to
 * C = 32768, two reads of x from memory past it) and long_row (a cluster per
 * row, the row in its registers): no cluster to place, and six waiting
 * blocks per SM instead of two.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,480 GB/s
 * at 1024x32768, 82.5% of the run's 3005 GB/s memory ceiling, 98.55x naive;
 * 2,374 GB/s (79.0%) at 128x262144, 758.45x naive.
 * Gap to the limit: 17 points at 1024x32768, 21 at 128x262144: as for softmax
 * split_row (each block's chain of dependent round trips, its shared memory
 * idle while it waits), plus the second pass over the chunk and the gamma and
 * beta loads: about 5 points below softmax. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_layernorm.cuh"

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 6) layernorm_split_row_kernel(
    int C, float eps, KbSplitRow s, const float *__restrict__ x, const float *__restrict__ gamma,
    const float *__restrict__ beta, float *__restrict__ y)
{
    constexpr int PACKS = KB_SPLIT_ROW_ITEMS / VEC;
    __shared__ __align__(16) float buf[KB_SPLIT_ROW_CHUNK];
    const KbSplitRowWork w = kb_split_row_work(s);
    const int begin = w.chunk * KB_SPLIT_ROW_CHUNK, n = min(KB_SPLIT_ROW_CHUNK, C - begin);
    const float lead = __ldg(x + (size_t)w.row * C);
    const size_t at = (size_t)w.row * C + begin;
    kb_split_row_fetch<VEC>(buf, x + at, n);
    kb_cp_async_wait<0>();

    float sum = 0.0f, count = 0.0f;
#pragma unroll 4
    for (int k = 0; k < PACKS; ++k)
        if (kb_split_row_col<VEC>(k) < n) {
            float v[VEC];
            kb_split_row_pack(v, buf, k);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                sum += v[j] - lead;
            count += VEC;
        }
    const float mean = count > 0.0f ? sum / count : 0.0f;
    float m2 = 0.0f;
#pragma unroll 4
    for (int k = 0; k < PACKS; ++k)
        if (kb_split_row_col<VEC>(k) < n) {
            float v[VEC];
            kb_split_row_pack(v, buf, k);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                m2 = fmaf((v[j] - lead) - mean, (v[j] - lead) - mean, m2);
        }
    const KbWelford empty = {0.0f, 0.0f, 0.0f};
    const KbWelford chunk = kb_block_allreduce(KbWelford{count, mean, m2}, KbWelfordMerge{}, empty);
    const KbWelford row = kb_split_row_exchange(s, w, chunk, KbWelfordMerge{}, empty);

    const float rstd = kb_welford_rstd(row, C, eps);
#pragma unroll 4
    for (int k = 0; k < PACKS; ++k) {
        const int col = kb_split_row_col<VEC>(k);
        if (col < n) {
            float v[VEC], g[VEC], b[VEC];
            kb_split_row_pack(v, buf, k);
            kb_load_cached(g, gamma + begin + col);
            kb_load_cached(b, beta + begin + col);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                v[j] = fmaf(((v[j] - lead) - row.mean) * rstd, g[j], b[j]);
            kb_store_stream(y + at + col, v);
        }
    }
    kb_split_row_retire(s);
}

typedef void (*split_row_kernel_t)(int, float, KbSplitRow, const float *, const float *, const float *, float *);

static split_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? layernorm_split_row_kernel<4> : layernorm_split_row_kernel<1>;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    return kb_split_row_setup((const void *)kernel_for(a->C), a->R, a->C, sizeof(KbWelford), ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    const KbSplitRow *s = (const KbSplitRow *)ctx;
    kernel_for(a->C)<<<kb_split_row_blocks(s), KB_SPLIT_ROW_BLOCK, 0, stream>>>(
        a->C, a->eps, *s, a->x, a->gamma, a->beta, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_split_row[] = {
    {
        .name = "split_row",
        .summary = "C >= 32768: chunks of 8192 in shared memory, one block each, Welford triples traded through global memory",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_unsupported_cols<kb_split_row_unsupported>,
        .setup = setup,
        .teardown = kb_split_row_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
