/* layernorm welford: one pass over memory.  The row is loaded once into
 * registers as float4 packs (kb_row_dispatch in kernels/reduce.cuh: a group
 * of 4..32 lanes per row for C <= 1024, a block of C/32 threads per row up
 * to C = 32768), shifted by its first element (d = x - x[0]), and each thread
 * runs Welford's update over its own values (with 1/n a compile-time
 * constant, since a thread's valid packs are a prefix); the threads' (n,
 * mean, M2) triples merge by Chan's formula through shuffles (and one value
 * per warp in shared memory for a block).  y = (d - mean) * rstd * gamma +
 * beta is then computed from the same registers and stored: x read once, y
 * written once, 16-byte plain accesses (gamma and beta, reused by
 * every row, go through the cached read-only path).  The device code is
 * shared with add_layernorm (kb_row_welford, kb_row_layernorm_store).
 * Rows longer than 32768 (16384 for C % 4 != 0, which takes scalar packs)
 * do not fit in registers and fall back to a two-read path: one 1024-thread
 * block per row, Welford over a first read (cached, so that the second may
 * hit L2), then normalize from a second.
 *
 * Builds on warp: one read of x instead of three, float4 accesses, and
 * block-per-row for long rows.
 * Prediction: ~90% of the copy ceiling for C from 128 to 32768 with
 * thousands of rows, ~1.4x PyTorch; ~60% for C > 32768 (12 bytes moved per
 * element).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,980 GB/s
 * at 65536x4096, 99.2% of the run's 3005 GB/s memory ceiling, 13.00x naive
 * (84.3% at 1024x32768, 57.4% at 128x262144 on two reads).
 * Gap to the limit: about a point at 65536x4096; the reduction's latency with
 * no loads in flight on that row, which other rows on the SM (or other SMs, at
 * one 1024-thread block per SM for C = 32768) must cover. History:
 * docs/notes/softmax-layernorm.md.
 * The f16 form: the same code on f16 storage, 8-byte packs, fp32 math.
 * Measured f16 (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,155
 * GB/s at 65536x4096, 74.5% of that run's 4237 GB/s memory ceiling, 19.41x
 * naive (f16); 48.8% at 1024x32768, 37.7% at 128x262144. */
#include "ops/layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_layernorm.cuh"

template <class Cfg, typename T>
__global__ void __launch_bounds__(Cfg::BLOCK) layernorm_welford_kernel(int R, int C, float eps,
                                                                      const T *__restrict__ x,
                                                                      const T *__restrict__ gamma,
                                                                      const T *__restrict__ beta,
                                                                      T *__restrict__ y)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    const float shift = (float)__ldg(x + p.base); /* the row's first element */
    float d[Cfg::PACKS][Cfg::VEC];
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols)
            kb_load_once(d[k], x + p.base + col);
        else
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                d[k][j] = shift; /* past the row: never pushed or stored */
    }
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j)
            d[k][j] -= shift;
    const KbWelford w = kb_row_welford<Cfg>(d, p.cols, p.rank);
    kb_row_layernorm_store<Cfg>(d, w.mean, kb_welford_rstd(w, C, eps), gamma, beta, y + p.base, p.cols, p.rank);
}

/* Rows too long for registers: Welford over a first read, normalize from a second. */
template <int VEC, typename T>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) layernorm_two_read_kernel(int C, float eps,
                                                                               const T *__restrict__ x,
                                                                               const T *__restrict__ gamma,
                                                                               const T *__restrict__ beta,
                                                                               T *__restrict__ y)
{
    const T *in = x + (size_t)blockIdx.x * C;
    const float shift = (float)__ldg(in);
    const KbWelford w = kb_block_welford_pass<VEC, KB_TWO_READ_BLOCK>(
        C, shift, [&](float (&v)[VEC], int col) { kb_load_cached(v, in + col); });
    kb_block_layernorm_pass<VEC, KB_TWO_READ_BLOCK>(in, C, shift, w.mean, kb_welford_rstd(w, C, eps), gamma, beta,
                                                    y + (size_t)blockIdx.x * C);
}

/* The tensors hold the form's storage type T. */
template <typename T>
static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_args *a = (const kb_layernorm_args *)args;
    const T *x = (const T *)a->x, *gamma = (const T *)a->gamma, *beta = (const T *)a->beta;
    T *y = (T *)a->y;
    (void)ctx;
    bool in_registers = kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        layernorm_welford_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(a->R, a->C, a->eps, x,
                                                                                         gamma, beta, y);
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            layernorm_two_read_kernel<4><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, a->eps, x, gamma, beta, y);
        else
            layernorm_two_read_kernel<1><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(a->C, a->eps, x, gamma, beta, y);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant layernorm_welford[] = {
    {
        .name = "welford",
        .summary = "one-pass shifted Welford, float4, row in registers (two reads past C = 32768)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch<float>,
    },
    {
        .name = "welford",
        .summary = "f16 in and out, fp32 math, 8-byte packs, row in registers (two reads past C = 32768)",
        .dtype = KB_F16,
        .math = KB_MATH_F16,
        .launch = launch<__half>,
    },
    KB_VARIANT_END,
};
