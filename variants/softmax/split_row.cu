/* softmax split_row: for C >= 32768, several ordinary blocks per row and
 * two sweeps, the second from L2 (kernels/split_row.cuh).  The row is cut
 * into chunks of 8192 floats (256 threads x 32 floats, float4 loads); a
 * statistics block folds its chunk into a running (max, sum), merges the
 * threads' pairs and publishes its pair in global memory; an output block,
 * started 256 chunks (8 MiB) later, merges the row's pairs, reads the chunk
 * again (an L2 hit, evict-first) and writes exp(x - max) / sum (evict-
 * first).  Memory sees x read once and y written once, 8 bytes per element.
 *
 * Idea over long_row (a cluster per row, the row in its registers): no
 * cluster to place, so the longest rows lose nothing to GPC packing, and no
 * block holds a chunk while it waits for others.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144
 * (long_row then: 80/75/64% at 512x65536 .. 128x262144).
 * Measured on H100 (cold L2, % of the 3009 GB/s copy ceiling, one session
 * with vectorized and long_row): 2,415 GB/s (80.3%) at 1024x32768; 2,406
 * (80.0%) at 512x65536; 2,370 (78.8%) at 256x131072; 2,400 (79.7%) at
 * 128x262144, the best softmax at the two longest rows.  Flat in C, since
 * every block is the same chunk, but short of the prediction.
 * Tried (same shapes, points against this version): each block keeping its
 * chunk in registers through the wait for the row's partials (one read, no
 * lag) measured the same, +-2; blocks numbered by blockIdx instead of a
 * ticket (unsafe: it relies on launch order) +2; 512-thread blocks (16384
 * floats) -8; 128-thread blocks -6 to -11; a lag of 1024 chunks -10.
 * Gap to the limit: unexplained ~10 points; a block lives only ~6 us, and
 * a block's start (the ticket's atomic round trip) and its reduction leave
 * its SM share idle. */
#include <stdlib.h>
#include "kernels/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"

#define MIN_C 32768

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 4) softmax_split_row_kernel(int C, KbSplitRow s,
                                                                               const float *__restrict__ x,
                                                                               float *__restrict__ y)
{
    constexpr int PACKS = KB_SPLIT_ROW_ITEMS / VEC;
    const KbSplitRowWork w = kb_split_row_work(s);
    if (w.kind != KB_SPLIT_ROW_IDLE) {
        const int begin = w.chunk * KB_SPLIT_ROW_CHUNK, n = min(KB_SPLIT_ROW_CHUNK, C - begin);
        const size_t at = (size_t)w.row * C + begin;
        const KbSoftmaxStat empty = {-INFINITY, 0.0f};
        float v[PACKS][VEC];
        if (w.kind == KB_SPLIT_ROW_STATS) {
            /* first read: a plain load, so that the chunk stays in L2 */
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
                    kb_load_once(v[k], x + at + kb_split_row_col<VEC>(k));
            KbSoftmaxStat st = empty;
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
                    kb_softmax_stat_push(st, v[k]);
            kb_split_row_publish(s, w, kb_block_allreduce(st, KbSoftmaxMerge{}, empty));
        } else {
            /* second read (from L2) and y: evict-first, the last use of both;
             * the loads are in flight while the row's pairs are gathered */
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n)
                    kb_load_stream(v[k], x + at + kb_split_row_col<VEC>(k));
            const KbSoftmaxStat st = kb_split_row_collect(s, w, KbSoftmaxMerge{}, empty);
            const float mx = st.m == -INFINITY ? 0.0f : st.m; /* an all -inf row: zeros */
            const float inv = st.s > 0.0f ? 1.0f / st.s : 0.0f;
#pragma unroll
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        v[k][j] = expf(v[k][j] - mx) * inv;
                    kb_store_stream(y + at + kb_split_row_col<VEC>(k), v[k]);
                }
        }
    }
    kb_split_row_retire(s);
}

typedef void (*split_row_kernel_t)(int, KbSplitRow, const float *, float *);

static split_row_kernel_t kernel_for(int C)
{
    return C % 4 == 0 ? softmax_split_row_kernel<4> : softmax_split_row_kernel<1>;
}

static const char *unsupported(const kb_shape *s)
{
    return s->d[1] < MIN_C ? "split_row is for C >= 32768 (shorter rows fit one block: see vectorized)" : NULL;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    if (a->C < MIN_C)
        return "split_row is for C >= 32768";
    KbSplitRow *s = (KbSplitRow *)calloc(1, sizeof *s);
    const char *why = kb_split_row_alloc(a->R, a->C, sizeof(KbSoftmaxStat), s);
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
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    const KbSplitRow *s = (const KbSplitRow *)ctx;
    kernel_for(a->C)<<<kb_split_row_blocks(s), KB_SPLIT_ROW_BLOCK, 0, stream>>>(a->C, *s, a->x, a->y);
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_split_row = {
    .name = "split_row",
    .summary = "C >= 32768: chunks of 8192 in registers, one block each, (max, sum) traded through global memory",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .unsupported = unsupported,
    .setup = setup,
    .teardown = teardown,
    .launch = launch,
};
