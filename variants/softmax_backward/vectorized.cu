/* softmax_backward vectorized: the row of y and dy in registers, read once,
 * dx written once.  Each thread loads its share of both rows as float4
 * packs, the dot product sum_j dy_j y_j is reduced over the row's group of
 * threads (shuffles, then one value per warp through shared memory for a
 * block), and dx = y (dy - dot) is stored from the same registers.  The
 * spread of a row is the forward's (kb_row_dispatch): a group of 4..32
 * lanes per row for C <= 1024, a block of C/32 threads per row beyond.
 * Two rows in registers take twice the forward's: past C = 16384 (8192
 * for scalar packs) a block's 1024 (512) threads would spill, so those
 * rows take two reads: the dot product from a cached first read, dx from a
 * second, one 1024-thread block per row.
 *
 * The bf16 form loads and stores bf16 (4 elements an 8-byte pack) and
 * keeps the arithmetic in fp32.  A sweep at a03df72 (docs/notes/backward.md):
 * 2794 GB/s at 65536x4096, 66.0% of 4236, 0.73x torch.compile.
 *
 * Builds on naive: a group of threads per row, coalesced 16-byte accesses,
 * one read of each input.
 * Prediction: ~90% of the copy ceiling from C = 128 to 16384 with
 * thousands of rows, as the forward's vectorized; ~70% beyond (20 bytes
 * moved per 12 counted).
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 4339
 * GB/s at 65536x4096 (0.742 ms), 102.3% of the run's 4239 GB/s memory
 * ceiling (past the copy ceiling: two reads a write), 1.58x cudnn, 2.01x
 * PyTorch eager, 1.06x torch.compile; 3627 GB/s (85.6%) at 1024x32768,
 * 2419 GB/s (57.1%) at 128x262144 on two reads.
 * Gap to the limit: none at 65536x4096 (2.3 points past it); the two-read
 * rows lose the second read's share, 14.4 and 42.9 points. */
#include "ops/softmax_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"

template <class Cfg, class T>
__global__ void __launch_bounds__(Cfg::BLOCK) softmax_backward_vectorized_kernel(int R, int C, const T *__restrict__ y,
                                                                                 const T *__restrict__ dy,
                                                                                 T *__restrict__ dx)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    float vy[Cfg::PACKS][Cfg::VEC], vd[Cfg::PACKS][Cfg::VEC];
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            kb_load_once(vy[k], y + p.base + col);
            kb_load_once(vd[k], dy + p.base + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                dot = fmaf(vd[k][j], vy[k][j], dot);
        }
    }
    dot = kb_group_allreduce<Cfg::GROUP>(dot, KbSum{}, 0.0f);
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                vd[k][j] = vy[k][j] * (vd[k][j] - dot);
            kb_store_once(dx + p.base + col, vd[k]);
        }
    }
}

/* Rows too long for registers: one block per row, two reads. */
template <int VEC, class T>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) softmax_backward_two_read_kernel(int C, const T *__restrict__ y,
                                                                                      const T *__restrict__ dy,
                                                                                      T *__restrict__ dx)
{
    const size_t base = (size_t)blockIdx.x * C;
    float dot = 0.0f;
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float vy[VEC], vd[VEC];
        kb_load_cached(vy, y + base + col); /* read again below: keep them in L2 */
        kb_load_cached(vd, dy + base + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            dot = fmaf(vd[j], vy[j], dot);
    }
    dot = kb_block_allreduce(dot, KbSum{}, 0.0f);
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float vy[VEC], vd[VEC];
        kb_load_stream(vy, y + base + col);
        kb_load_stream(vd, dy + base + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            vd[j] = vy[j] * (vd[j] - dot);
        kb_store_stream(dx + base + col, vd);
    }
}

template <class T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    const T *y = (const T *)a->y, *dy = (const T *)a->dy;
    T *dx = (T *)a->dx;
    (void)ctx;
    bool in_registers = false;
    kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        if constexpr (Cfg::MAX_C <= (Cfg::VEC == 4 ? 16384 : 8192)) {
            softmax_backward_vectorized_kernel<Cfg, T>
                <<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(a->R, a->C, y, dy, dx);
            in_registers = true;
        }
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            softmax_backward_two_read_kernel<4, T><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, y, dy, dx);
        else
            softmax_backward_two_read_kernel<1, T><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, y, dy, dx);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_backward_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "float4, y and dy rows in registers: one read each (two past C = 16384)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "vectorized",
        .summary = "4-element packs, y and dy rows in registers: one read each (two past C = 16384); bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .launch = launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
