/* rmsnorm vectorized: the row in registers, read once and written once.
 * Each thread loads its share of the row as float4 packs (plain loads), the
 * sum of squares is reduced over the row's group of threads (shuffles; one
 * value per warp through shared memory for a block), and y = x * rrms *
 * gamma is stored from the same registers.  Spread of a row by C
 * (kb_row_dispatch in kernels/reduce.cuh): a group of 4..32 lanes per row
 * for C <= 1024, one block of C/32 threads per row up to C = 32768 (16384
 * for C % 4 != 0, which takes scalar packs).  Longer rows fall back to two
 * reads: one 1024-thread block per row, the sum of squares from a cached
 * first read, then y from a second.
 *
 * Builds on naive: coalesced 16-byte loads, a group of threads per row and
 * a single read of x.
 * Prediction: ~90% of the copy ceiling for C from 128 to 32768 with
 * thousands of rows (one reduction per row, the cheapest of the row-wise
 * ops); ~60% for longer rows (12 bytes moved per element).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 3,007 GB/s
 * at 65536x4096, 100.0% of the run's 3005 GB/s memory ceiling, 11.66x naive.
 * Gap to the limit: none at 65536x4096; the reduction's latency with no
 * loads in flight on the row is covered by the other rows on the SM.
 * History:
 * docs/notes/softmax-layernorm.md.
 * The f16 form: the same code, y rounded to f16 as it is stored (8-byte
 * packs); x and gamma stay fp32.  Measured f16
 * (results/h200/kbench-20261202-075017.csv, H200, cold L2): 4,278 GB/s at
 * 65536x4096, 101.0% of that run's 4237 GB/s memory ceiling, 15.17x naive
 * (f16); 73.5% at 1024x32768, 51.6% at 128x262144. */
#include "ops/rmsnorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"

template <class Cfg, typename T>
__global__ void __launch_bounds__(Cfg::BLOCK) rmsnorm_vectorized_kernel(int R, int C, float eps,
                                                                       const float *__restrict__ x,
                                                                       const float *__restrict__ gamma,
                                                                       T *__restrict__ y)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    float v[Cfg::PACKS][Cfg::VEC];
    float sq = 0.0f;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            kb_load_once(v[k], x + p.base + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                sq = fmaf(v[k][j], v[k][j], sq);
        }
    }
    sq = kb_group_allreduce<Cfg::GROUP>(sq, KbSum{}, 0.0f);
    const float rrms = rsqrtf(sq / C + eps);
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            float g[Cfg::VEC];
            kb_load_cached(g, gamma + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                v[k][j] = v[k][j] * rrms * g[j];
            kb_store_once(y + p.base + col, v[k]);
        }
    }
}

/* Rows too long for registers: sum of squares from a first read, y from a second. */
template <int VEC, typename T>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) rmsnorm_two_read_kernel(int C, float eps,
                                                                             const float *__restrict__ x,
                                                                             const float *__restrict__ gamma,
                                                                             T *__restrict__ y)
{
    const float *in = x + (size_t)blockIdx.x * C;
    T *out = y + (size_t)blockIdx.x * C;
    float sq = 0.0f;
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float v[VEC];
        kb_load_cached(v, in + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            sq = fmaf(v[j], v[j], sq);
    }
    sq = kb_block_allreduce(sq, KbSum{}, 0.0f);
    const float rrms = rsqrtf(sq / C + eps);
#pragma unroll 4
    for (int col = threadIdx.x * VEC; col < C; col += KB_TWO_READ_BLOCK * VEC) {
        float v[VEC], g[VEC];
        kb_load_stream(v, in + col);
        kb_load_cached(g, gamma + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] = v[j] * rrms * g[j];
        kb_store_stream(out + col, v);
    }
}

/* y holds the form's storage type T; x and gamma are fp32 (ops/rmsnorm.h). */
template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_args *a = (const kb_rmsnorm_args *)args;
    const float *x = a->x, *gamma = a->gamma;
    T *y = (T *)a->y;
    (void)ctx;
    bool in_registers = kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        rmsnorm_vectorized_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(a->R, a->C, a->eps, x,
                                                                                         gamma, y);
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            rmsnorm_two_read_kernel<4><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, a->eps, x, gamma, y);
        else
            rmsnorm_two_read_kernel<1><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, a->eps, x, gamma, y);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant rmsnorm_vectorized[] = {
    {
        .name = "vectorized",
        .summary = "float4, warp or block per row, row in registers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "vectorized",
        .summary = "fp32 x, y rounded to f16, warp or block per row, row in registers",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
