/* softmax persistent_row: for 8192 <= C <= 262144, one persistent block
 * per SM streams 8192-float chunks through a six-deep ring of
 * shared-memory buffers (kernels/persistent_row.cuh).  A thread turns its
 * 16 floats into e = 2^(x log2(e) - m) in place (m: its own largest, in
 * base 2; one FFMA and one ex2.approx each) and the block publishes its
 * chunk's (max, sum); three rounds later, with the row's (M, S) merged
 * from every chunk's pair, it writes e * 2^(m - M) / S from its buffer.
 * x read once and y written once.
 *
 * Builds on split_row (a short-lived block per chunk that waits on its
 * row with its shared memory idle): the loads run two rounds ahead of the
 * statistics, and a partial costs a tagged store and a load issued a round
 * early instead of a ticket, a release and an acquire.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,810 GB/s
 * at 1024x32768, 93.5% of the run's 3005 GB/s memory ceiling, 1.21x cudnn;
 * 2,774 GB/s (92.3%) at 128x262144, 7.33x cudnn.
 * Gap to the limit: 6 points at 1024x32768, 7-8 on the 256 MB long rows. The
 * rounds move bytes at the ceiling; a launch takes some 6-8 us longer than its
 * bytes at the ceiling, its start (three rounds of loads before the first
 * store) and its end (the last blocks' stores). History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/persistent_row_host.cuh"
#include "kernels/persistent_chunk.cuh"
#include "kernels/persistent_row.cuh"

struct SoftmaxRowOp {
    struct Args {
        int C;
        const float *x;
        float *y;
    };
    using Stat = KbSoftmaxStat;
    static constexpr bool LEAD = false;
    static constexpr bool BULK = false; /* per-thread cp.async: bulk copies measured about a point slower here */
    using Merge = KbSoftmaxMerge2; /* (max, sum) in base 2 */
    static constexpr float LOG2E = 1.4426950408889634f;

    __device__ static Stat identity() { return {-INFINITY, 0.0f}; }
    __device__ static void to_words(Stat s, float &a, float &b) { a = s.m, b = s.s; }
    __device__ Stat from_words(int, float a, float b) const { return {a, b}; }

    template <class Cfg>
    __device__ void init(const Args &, int)
    {
    }

    /* e = 2^(x log2(e) - m) over the thread's columns, back in place (one
     * FFMA and one ex2 each); keeps m, the thread's max in base 2. */
    template <class Cfg>
    __device__ Stat take(float *buf, int n, float, float &m) const
    {
        float e[KB_PERSIST_ITEMS];
        kb_persist_read<Cfg>(e, buf, n, -INFINITY);
        float mx = e[0];
#pragma unroll
        for (int i = 1; i < KB_PERSIST_ITEMS; ++i)
            mx = fmaxf(mx, e[i]);
        m = mx * LOG2E;
        const float shift = mx == -INFINITY ? 0.0f : m; /* all -inf: every e is 2^-inf = 0 */
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < KB_PERSIST_ITEMS; ++i) {
            e[i] = kb_ex2(fmaf(e[i], LOG2E, -shift));
            s += e[i];
        }
        kb_persist_write<Cfg>(buf, e, n);
        return kb_warp_allreduce<32>(Stat{m, s}, Merge{});
    }

    template <class Cfg>
    __device__ void store(const float *buf, int n, float m, Stat row, float *y) const
    {
        /* an all -inf row (row.m == -inf, then m too): zeros */
        const float scale = m == -INFINITY ? 0.0f : kb_ex2(m - row.m) / row.s;
        float e[KB_PERSIST_ITEMS];
        kb_persist_read<Cfg>(e, buf, n, 0.0f);
#pragma unroll
        for (int i = 0; i < KB_PERSIST_ITEMS; ++i)
            e[i] *= scale;
        kb_persist_store<Cfg>(y, e, n);
    }
};

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    return kb_persist_row_setup<SoftmaxRowOp>(a->R, a->C, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    return kb_persist_row_launch((KbPersistRow *)ctx, SoftmaxRowOp::Args{a->C, a->x, a->y}, stream);
}

extern "C" const kb_variant softmax_persistent_row[] = {
    {
        .name = "persistent_row",
        .summary = "8192 <= C <= 262144: a persistent block per SM streams 8192-float chunks through six buffers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_unsupported_cols<kb_persist_row_unsupported>,
        .setup = setup,
        .teardown = kb_persist_row_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
