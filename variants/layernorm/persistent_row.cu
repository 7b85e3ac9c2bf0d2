/* layernorm persistent_row: for 8192 <= C <= 262144, one persistent
 * block per SM streams 8192-float chunks through a seven-deep ring of
 * shared-memory buffers, each filled by one bulk copy that a single thread
 * hands the TMA engine (kernels/persistent_row.cuh).  A block always has
 * the same chunk of its rows, so its threads load their gamma and beta
 * columns once, into registers.  A thread takes d = x - x[row, 0] of its
 * 16 floats (the shift keeps a row with mean 1e4 and variance 1e-2 exact),
 * their exact mean and then their squared deviations; the warp merges
 * equal counts without a division, else by Chan's formula, and the block
 * publishes its chunk's (mean, M2).  Three rounds later, with the row's
 * statistics merged from every chunk, it writes (d - mean) * rstd * gamma
 * + beta from its buffer.  x read once, y written once, gamma and beta
 * once per launch.
 *
 * Builds on split_row (a short-lived block per chunk that reads gamma and
 * beta with every chunk and waits on its row with its shared memory idle):
 * the loads run two rounds ahead of the statistics, and gamma and beta
 * stay in registers.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,749 GB/s
 * at 1024x32768, 91.5% of the run's 3005 GB/s memory ceiling, 109.23x naive;
 * 2,724 GB/s (90.6%) at 128x262144, 870.00x naive.
 * Gap to the limit: 9 points at 1024x32768, 8-10 on the 256 MB long rows: as
 * for softmax persistent_row, the start and the end of a launch, and one to
 * three points more for layernorm's second pass over each chunk. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_layernorm.cuh"
#include "kernels/persistent_row_host.cuh"
#include "kernels/persistent_chunk.cuh"
#include "kernels/persistent_row.cuh"

struct LayernormRowOp {
    struct Args {
        int C;
        float eps;
        const float *x, *gamma, *beta;
        float *y;
    };
    using Stat = KbWelford;
    static constexpr bool LEAD = true;
    static constexpr bool BULK = true; /* bulk copies: 3-5 points over per-thread cp.async */
    using Merge = KbWelfordMergeFast; /* IEEE division's slow path stalled the merges */
    int C;
    float eps, count, inv_count; /* the thread's floats in its chunk, and 1 / that */
    float g[KB_PERSIST_ITEMS], b[KB_PERSIST_ITEMS];

    __device__ static Stat identity() { return {0.0f, 0.0f, 0.0f}; }
    __device__ static void to_words(Stat s, float &a, float &b) { a = s.mean, b = s.m2; }
    __device__ Stat from_words(int chunk, float a, float b) const
    {
        return {(float)min(KB_PERSIST_CHUNK, C - chunk * KB_PERSIST_CHUNK), a, b};
    }

    template <class Cfg>
    __device__ void init(const Args &a, int chunk)
    {
        const int begin = chunk * KB_PERSIST_CHUNK;
        const int n = min(KB_PERSIST_CHUNK, a.C - begin);
        C = a.C, eps = a.eps;
        count = (float)kb_persist_count<Cfg>(n);
        inv_count = count > 0.0f ? 1.0f / count : 0.0f;
        kb_persist_read<Cfg>(g, a.gamma + begin, n, 0.0f);
        kb_persist_read<Cfg>(b, a.beta + begin, n, 0.0f);
    }

    /* The warp's (n, mean, M2) of d = x - lead; keeps lead.  A full chunk
     * gives every thread 16 floats, so its butterfly merges equal counts h:
     * M2 = M2a + M2b + (sum_a - sum_b)^2 / 2h, with no division. */
    template <class Cfg>
    __device__ Stat take(float *buf, int n, float lead, float &kept) const
    {
        kept = lead;
        float d[KB_PERSIST_ITEMS];
        kb_persist_read<Cfg>(d, buf, n, lead); /* past the end: d = 0 */
        float sum = 0.0f;
#pragma unroll
        for (int i = 0; i < KB_PERSIST_ITEMS; ++i) {
            d[i] -= lead;
            sum += d[i];
        }
        const float mean = sum * inv_count;
        float m2 = 0.0f;
#pragma unroll
        for (int i = 0; i < KB_PERSIST_ITEMS; ++i)
            m2 = fmaf(d[i] - mean, d[i] - mean, m2);
        if (n == KB_PERSIST_CHUNK) {
#pragma unroll
            for (int o = 16, h = KB_PERSIST_ITEMS; o > 0; o >>= 1, h *= 2) {
                const float other = kb_shfl_xor(sum, o), diff = sum - other;
                m2 = fmaf(diff * (0.5f / (float)h), diff, m2 + kb_shfl_xor(m2, o));
                sum += other;
            }
            constexpr float WARP_N = 32.0f * KB_PERSIST_ITEMS;
            return {WARP_N, sum * (1.0f / WARP_N), m2};
        }
        m2 = fmaxf(m2 - (KB_PERSIST_ITEMS - count) * mean * mean, 0.0f); /* less the d = 0 past the end */
        return kb_warp_allreduce<32>(Stat{count, mean, m2}, Merge{});
    }

    template <class Cfg>
    __device__ void store(const float *buf, int n, float lead, Stat row, float *y) const
    {
        const float rstd = kb_welford_rstd(row, C, eps);
        float v[KB_PERSIST_ITEMS];
        kb_persist_read<Cfg>(v, buf, n, 0.0f);
#pragma unroll
        for (int i = 0; i < KB_PERSIST_ITEMS; ++i)
            v[i] = fmaf(((v[i] - lead) - row.mean) * rstd, g[i], b[i]);
        kb_persist_store<Cfg>(y, v, n);
    }
};

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    return kb_persist_row_setup<LayernormRowOp>(a->R, a->C, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    return kb_persist_row_launch((KbPersistRow *)ctx,
                                 LayernormRowOp::Args{a->C, a->eps, a->x, a->gamma, a->beta, a->y}, stream);
}

extern "C" const kb_variant layernorm_persistent_row[] = {
    {
        .name = "persistent_row",
        .summary = "8192 <= C <= 262144: a persistent block per SM streams 8192-float chunks by bulk copies, gamma and beta in registers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_unsupported_cols<kb_persist_row_unsupported>,
        .setup = setup,
        .teardown = kb_persist_row_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
