/* layernorm split_row: for C >= 32768, several ordinary blocks per row and
 * two sweeps, the second from L2 (kernels/split_row.cuh).  The row is cut
 * into chunks of 8192 floats (256 threads x 32 floats), each copied into
 * the block's shared memory by 16-byte cp.async (in flight without holding
 * registers: 40 per thread, six blocks per SM).  Values are shifted by the
 * row's first element (d = x - x[0], as in welford, so that a row with mean
 * 1e4 and variance 1e-2 keeps its digits).  A statistics block takes each
 * thread's exact mean of its own d and then their squared deviations from
 * it (two passes over shared memory), merges the threads' (n, mean, M2)
 * triples by Chan's formula and publishes the chunk's triple in global
 * memory; an output block, started 256 chunks (8 MiB) later, copies the
 * chunk again (an L2 hit) while it merges the row's triples in chunk order,
 * then writes y = (d - mean) * rstd * gamma + beta (evict-first stores),
 * gamma and beta through the read-only path (the same columns for every
 * row: L2-resident).  Memory sees x read once and y written once.
 *
 * Idea over welford (one block per row, the row in its registers up to
 * C = 32768, two reads of x from memory past it) and long_row (a cluster per
 * row, the row in its registers): the second read comes from L2 by
 * construction, and there is no cluster to place.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144
 * (welford 84.7/64.2/58.0/57.8%).
 * Measured on H100 (cold L2, % of the ~3005 GB/s copy ceiling, two runs):
 * 2,421-2,433 GB/s (80.5-81.0%) at 1024x32768; 2,374-2,385 (79.0-79.4%)
 * at 512x65536; 2,321 (77.2%) at 256x131072; 2,299-2,307 (76.5-76.8%) at
 * 128x262144.  The reference run (kbench-20261122-rowwise-final.csv):
 * 81.1 / 80.1 / 78.7 / 77.2% at 1024x32768 .. 128x262144, the best
 * layernorm from 512x65536 on (welford 82.8% at 1024x32768).  The output
 * block's loads issued before it gathers the triples, instead of after,
 * gave +5-6 points; chunks in registers instead of shared memory -1 to -3.
 * Gap to the limit: L2 bandwidth, as for softmax split_row (whose header
 * lists what was tried): Nsight Compute at 512x65536 shows L2 throughput
 * at 84% of peak and DRAM at 66%, with 12 bytes per element through L2
 * (and gamma and beta on top); 2-4 points below softmax. */
#include "kernels/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"

#define MIN_C 32768

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 6) layernorm_split_row_kernel(
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
        __shared__ __align__(16) float buf[KB_SPLIT_ROW_CHUNK];
        kb_split_row_fetch<VEC>(buf, x + at, n); /* an output block's is an L2 hit */
        if (w.kind == KB_SPLIT_ROW_STATS) {
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
            kb_split_row_publish(s, w, kb_block_allreduce(KbWelford{count, mean, m2}, KbWelfordMerge{}, empty));
        } else {
            /* the chunk is in flight while the row's triples are gathered */
            const KbWelford st = kb_split_row_collect(s, w, KbWelfordMerge{}, empty);
            const float rstd = kb_welford_rstd(st, C, eps);
            kb_cp_async_wait<0>();
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
                        v[j] = fmaf(((v[j] - lead) - st.mean) * rstd, g[j], b[j]);
                    kb_store_stream(y + at + col, v);
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
    return kb_split_row_setup(a->R, a->C, sizeof(KbWelford), ctx);
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
    .teardown = kb_split_row_teardown,
    .launch = launch,
};
