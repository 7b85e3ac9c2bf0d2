/* softmax split_row: for C >= 32768, several ordinary blocks per row and
 * two sweeps, the second from L2 (kernels/split_row.cuh).  The row is cut
 * into chunks of 8192 floats (256 threads x 32 floats), each copied into
 * the block's shared memory by 16-byte cp.async (in flight without holding
 * registers: 40 per thread, six blocks per SM).  A statistics block folds
 * its chunk into a running (max, sum), merges the threads' pairs and
 * publishes its pair in global memory; an output block, started 256 chunks
 * (8 MiB) later, copies the chunk again (an L2 hit) while it gathers the
 * row's pairs, then writes exp(x - max) / sum (evict-first stores).  Memory
 * sees x read once and y written once, 8 bytes per element.
 *
 * Idea over long_row (a cluster per row, the row in its registers): no
 * cluster to place, so the longest rows lose nothing to GPC packing, and no
 * block holds a chunk while it waits for others.
 * Prediction: ~85-90% of the copy ceiling from 1024x32768 to 128x262144
 * (long_row then: 80/75/64% at 512x65536 .. 128x262144).
 * Measured on H100 (cold L2, % of the ~3005 GB/s copy ceiling, two runs):
 * 2,492-2,507 GB/s (82.9-83.4%) at 1024x32768; 2,430-2,446 (80.9-81.4%) at
 * 512x65536; 2,403 (80.0%) at 256x131072; 2,410-2,416 (80.2-80.4%) at
 * 128x262144.  The reference run (kbench-20261122-rowwise-final.csv):
 * 83.2 / 82.5 / 81.9 / 80.0% at 1024x32768 .. 128x262144, the best softmax
 * from 512x65536 on (level with long_row there).  Flat in C, since
 * every block is the same chunk, but short of the prediction.
 * Tried (same shapes, points against the version noted): chunks landing in
 * registers (64 registers, four blocks per SM) -1 to -2 against shared
 * memory; there, the output block's loads issued only after gathering the
 * pairs -2; each block keeping its chunk in registers through a wait for
 * the row's partials (one read, no lag) about the same; blocks numbered by
 * blockIdx instead of a ticket (unsafe: it relies on launch order) +2;
 * 512-thread blocks (16384 floats) -8; 128-thread blocks -6 to -11; a lag
 * of 1024 chunks -10, of 64 or 128 chunks -1 to -4; plain stores of y
 * instead of evict-first -1 (layernorm: -8).
 * Gap to the limit: L2 bandwidth.  Nsight Compute at 512x65536 (one
 * launch): DRAM reads 135.6 MB (x once: the second read hits L2), DRAM
 * throughput 67% of peak, but L2 (lts) throughput 86% of peak: L2 carries
 * 12 bytes per element (the fill, the second read, y) against 8 for a
 * one-read kernel (softmax vectorized at 4096x32768: L2 79%, DRAM 87%).
 * The two-sweep design cannot pass ~80-83%; above that needs one read with
 * a cheaper exchange than a cluster's (long_row at 512x65536: DRAM 63%, L2
 * 71%, SM 53%, 47% of warps active: latency-bound). */
#include "kernels/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/split_row.cuh"

#define MIN_C 32768

template <int VEC>
__global__ void __launch_bounds__(KB_SPLIT_ROW_BLOCK, 6) softmax_split_row_kernel(int C, KbSplitRow s,
                                                                               const float *__restrict__ x,
                                                                               float *__restrict__ y)
{
    constexpr int PACKS = KB_SPLIT_ROW_ITEMS / VEC;
    const KbSplitRowWork w = kb_split_row_work(s);
    if (w.kind != KB_SPLIT_ROW_IDLE) {
        const int begin = w.chunk * KB_SPLIT_ROW_CHUNK, n = min(KB_SPLIT_ROW_CHUNK, C - begin);
        const size_t at = (size_t)w.row * C + begin;
        const KbSoftmaxStat empty = {-INFINITY, 0.0f};
        __shared__ __align__(16) float buf[KB_SPLIT_ROW_CHUNK];
        kb_split_row_fetch<VEC>(buf, x + at, n); /* an output block's is an L2 hit */
        if (w.kind == KB_SPLIT_ROW_STATS) {
            kb_cp_async_wait<0>();
            KbSoftmaxStat st = empty;
#pragma unroll 4
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n) {
                    float v[VEC];
                    kb_split_row_pack(v, buf, k);
                    kb_softmax_stat_push(st, v);
                }
            kb_split_row_publish(s, w, kb_block_allreduce(st, KbSoftmaxMerge{}, empty));
        } else {
            /* the chunk is in flight while the row's pairs are gathered */
            const KbSoftmaxStat st = kb_split_row_collect(s, w, KbSoftmaxMerge{}, empty);
            const float mx = st.m == -INFINITY ? 0.0f : st.m; /* an all -inf row: zeros */
            const float inv = st.s > 0.0f ? 1.0f / st.s : 0.0f;
            kb_cp_async_wait<0>();
#pragma unroll 4
            for (int k = 0; k < PACKS; ++k)
                if (kb_split_row_col<VEC>(k) < n) {
                    float v[VEC];
                    kb_split_row_pack(v, buf, k);
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        v[j] = expf(v[j] - mx) * inv;
                    kb_store_stream(y + at + kb_split_row_col<VEC>(k), v); /* the last use of y's lines */
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
    return kb_split_row_setup(a->R, a->C, sizeof(KbSoftmaxStat), ctx);
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
    .teardown = kb_split_row_teardown,
    .launch = launch,
};
