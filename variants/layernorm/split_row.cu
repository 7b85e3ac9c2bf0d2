/* layernorm split_row: for C >= 32768, several ordinary blocks per row and
 * two sweeps, the second from L2 (kernels/split_row.cuh).  The row is cut
 * into chunks of 8192 floats (256 threads x 32 floats, float4 loads).
 * Values are shifted by the row's first element (d = x - x[0], as in
 * welford, so that a row with mean 1e4 and variance 1e-2 keeps its digits).
 * A statistics block takes each thread's exact mean of its own d and then
 * their squared deviations from it (two passes over registers), merges the
 * threads' (n, mean, M2) triples by Chan's formula and publishes the
 * chunk's triple in global memory; an output block, started 256 chunks
 * (8 MiB) later, merges the row's triples in chunk order, reads the chunk
 * again (an L2 hit) and writes y = (d - mean) * rstd * gamma + beta, gamma
 * and beta through the read-only path (the same columns for every row:
 * L2-resident).  Memory sees x read once and y written once.
 *
 * Idea over welford (one block per row, the row in its registers up to
 * C = 32768, two reads of x from memory past it) and long_row (a cluster per
 * row, the row in its registers): the second read comes from L2 by
 * construction, and there is no cluster to place.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144
 * (welford 84.7/64.2/58.0/57.8%).
 * Measured on H100 (cold L2, % of the 3009 GB/s copy ceiling, one session
 * with welford and long_row): 2,156 GB/s (71.6%) at 1024x32768; 2,168
 * (72.1%) at 512x65536; 2,145 (71.3%) at 256x131072; 2,209 (73.4%) at
 * 128x262144, the best layernorm at the two longest rows.
 * Gap to the limit: as for softmax split_row (whose header lists what was
 * tried), plus the statistics' second pass over registers and the gamma
 * and beta loads: ~8 points below softmax. */
#include <stdlib.h>
#include "kernels/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"

#define MIN_C 32768

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 4) layernorm_split_row_kernel(
    int C, float eps, KbSplitRow s, const float *__restrict__ x, const float *__restrict__ gamma,
    const float *__restrict__ beta, float *__restrict__ y)
{
    constexpr int PACKS = KB_SPLIT_ROW_ITEMS / VEC;
    const KbSplitRowWork w = kb_split_row_work(s);
    if (w.kind != KB_SPLIT_ROW_IDLE) {
        const int begin = w.chunk * KB_SPLIT_ROW_CHUNK, n = min(KB_SPLIT_ROW_CHUNK, C - begin);
        const float lead = __ldg(x + (size_t)w.row * C);
        const size_t at = (size_t)w.row * C + begin;
        const KbWelford empty = {0.0f, 0.0f, 0.0f};
        float d[PACKS][VEC];
        if (w.kind == KB_SPLIT_ROW_STATS) {
            float sum = 0.0f, count = 0.0f;
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
                    kb_load_once(d[k], x + at + kb_split_row_col<VEC>(k)); /* stays in L2 for the second */
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        d[k][j] -= lead;
                        sum += d[k][j];
                    }
                    count += VEC;
                }
            const float mean = count > 0.0f ? sum / count : 0.0f;
            float m2 = 0.0f;
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        m2 = fmaf(d[k][j] - mean, d[k][j] - mean, m2);
            kb_split_row_publish(s, w, kb_block_allreduce(KbWelford{count, mean, m2}, KbWelfordMerge{}, empty));
        } else {
            /* second read (from L2), in flight while the row's triples are gathered */
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
                    kb_load_stream(d[k], x + at + kb_split_row_col<VEC>(k));
            const KbWelford st = kb_split_row_collect(s, w, KbWelfordMerge{}, empty);
            const float rstd = kb_welford_rstd(st, C, eps);
#pragma unroll
            for (int k = 0; k < PACKS; ++k) {
                const int col = kb_split_row_col<VEC>(k);
                if (col < n) {
                    float g[VEC], b[VEC];
                    kb_load_cached(g, gamma + begin + col);
                    kb_load_cached(b, beta + begin + col);
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        d[k][j] = fmaf(((d[k][j] - lead) - st.mean) * rstd, g[j], b[j]);
                    kb_store_stream(y + at + col, d[k]);
                }
            }
        }
    }
    kb_split_row_retire(s);
}

typedef void (*split_row_kernel_t)(int, float, KbSplitRow, const float *, const float *, const float *, float *);

static split_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? layernorm_split_row_kernel<4> : layernorm_split_row_kernel<1>;
}

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] < MIN_C ? "split_row is for C >= 32768 (shorter rows fit one block: see welford)" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    if (a->C < MIN_C)
        return "split_row is for C >= 32768";
    KbSplitRow *s = (KbSplitRow *)calloc(1, sizeof *s);
    const char *why = kb_split_row_alloc(a->R, a->C, sizeof(KbWelford), s);
    if (why) {
        free(s);
        return why;
    }
    *ctx = s;
    return NULL;
}

static void teardown(void *ctx)
{
    kb_split_row_free((KbSplitRow *)ctx);
    free(ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    const KbSplitRow *s = (const KbSplitRow *)ctx;
    kernel_for(a->C)<<<kb_split_row_blocks(s), KB_SPLIT_ROW_BLOCK, 0, stream>>>(
        a->C, a->eps, *s, a->x, a->gamma, a->beta, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_split_row = {
    .name = "split_row",
    .summary = "C >= 32768: chunks of 8192 in registers, one block each, Welford triples traded through global memory",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
