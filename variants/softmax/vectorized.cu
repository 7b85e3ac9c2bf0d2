/* softmax vectorized: the row lives in registers.  Every thread loads all of
 * its share of the row up front (up to 8 float4, 128 bytes in flight per
 * thread), then the max, the exps, the sum and the scaled stores all work on
 * registers: x is read from memory exactly once and y written once, 8 bytes
 * moved per element, what the op counts.  How a row is spread (kb_row_dispatch
 * in kernels/reduce.cuh, chosen from C at launch):
 *   C <= 1024: a group of 4..32 lanes per row, several rows per 128-thread
 *     block, shuffle reductions only;
 *   C <= 32768: one block of C/32 threads (64..1024) per row, shuffles then
 *     one value per warp through shared memory (C <= 16384, C/16 threads,
 *     for scalar packs).
 * float4 (LDG.E.128/STG.E.128; the two-read path's are evict-first) when
 * C % 4 == 0, which keeps every row 16-byte aligned; other C take the same
 * code with scalar packs.
 * Longer rows do not fit in registers (1024 threads x 32 floats):
 * they fall back to an online two-read path, one 1024-thread block per row
 * with float4 loads: running (max, sum) in a first sweep, then a second read
 * of x (from L2 when it is still there) to write y.  For those see long_row,
 * split_row and persistent_row.
 *
 * Builds on online: one read instead of two, and 16-byte accesses.
 * Prediction: ~90% of the copy ceiling for C from 128 to 32768 once
 * thousands of rows are in flight; ~60% past C = 32768 (12 bytes moved per
 * element).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 3,005 GB/s
 * at 65536x4096, 100.0% of the run's 3005 GB/s memory ceiling, 1.00x cudnn
 * (90.4% at 1024x32768, 61.5% at 128x262144 on two reads).
 * Gap to the limit: none at 65536x4096, where cudnn (100.1%) is 0.13% faster;
 * 10 points at 1024x32768: a row's reduction and exps leave its SM with no
 * loads in flight for a moment, which other rows on the SM (or, at C = 32768
 * with one block per SM, other SMs) have to cover. History:
 * docs/notes/softmax-layernorm.md.
 * The f16 form: the same code on f16 storage, 8-byte packs, fp32 math.
 * Measured f16 (results/h200/kbench-20261202-075017.csv, H200, cold L2): 4,070
 * GB/s at 65536x4096, 96.1% of that run's 4237 GB/s memory ceiling, 1.78x
 * cudnn (f16); 58.8% (2.85x) at 1024x32768, 48.7% (9.65x) at 128x262144. */
#include "ops/softmax.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_softmax.cuh"

template <class Cfg, typename T>
__global__ void __launch_bounds__(Cfg::BLOCK) softmax_vectorized_kernel(int R, int C, const T *__restrict__ x,
                                                                        T *__restrict__ y)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    float v[Cfg::PACKS][Cfg::VEC];

#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols)
            kb_load_once(v[k], x + p.base + col);
        else
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                v[k][j] = -INFINITY; /* exp(-inf - max) = 0: adds nothing */
    }
    kb_row_softmax_store<Cfg>(v, y + p.base, p.cols, p.rank);
}

/* Rows too long for registers: one block per row, two reads of x. */
template <int VEC, typename T>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) softmax_two_read_kernel(int C, const T *__restrict__ x,
                                                                             T *__restrict__ y)
{
    const T *in = x + (size_t)blockIdx.x * C;
    T *out = y + (size_t)blockIdx.x * C;

    KbSoftmaxStat st = {-INFINITY, 0.0f};
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float v[VEC];
        kb_load_cached(v, in + col); /* read again below: keep it in L2 */
        kb_softmax_stat_push(st, v);
    }
    st = kb_block_allreduce(st, KbSoftmaxMerge{}, KbSoftmaxStat{-INFINITY, 0.0f});
    const float max = st.m == -INFINITY ? 0.0f : st.m;
    const float inv = st.s > 0.0f ? 1.0f / st.s : 0.0f;

#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float v[VEC];
        kb_load_stream(v, in + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] = expf(v[j] - max) * inv;
        kb_store_stream(out + col, v);
    }
}

/* x and y hold the form's storage type T. */
template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_args *a = (const kb_softmax_args *)args;
    const T *x = (const T *)a->x;
    T *y = (T *)a->y;
    (void)ctx;
    bool in_registers = kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        softmax_vectorized_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(a->R, a->C, x, y);
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            softmax_two_read_kernel<4><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, x, y);
        else
            softmax_two_read_kernel<1><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, x, y);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "float4, row in registers: one read, one write (two reads past C = 32768)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "vectorized",
        .summary = "f16 in and out, fp32 math, 8-byte packs, row in registers (two reads past C = 32768)",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
