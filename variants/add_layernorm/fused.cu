/* add_layernorm fused: one kernel.  Each thread loads its packs of x and r
 * (float4, plain loads: kb_load_once), adds them in fp32, stores sum at
 * once and keeps it in registers; the row of sum is then normalized from
 * those registers by layernorm/welford's shared code (kb_row_welford, kb_row_layernorm_store in
 * kernels/reduce.cuh): shift by sum[row][0] = x[row][0] + r[row][0] (the same
 * fp32 add), Welford, Chan merges, y.  x and r are read once, sum and y
 * written once: 16 bytes moved per element, what the op counts.
 * Rows too long for registers (C > 32768, or C > 16384 when C % 4 != 0) take a
 * two-read path: one block per row writes sum while accumulating Welford,
 * then reads back its own sum (each thread the elements it wrote) to
 * normalize.
 *
 * Builds on unfused: sum never makes a round trip through memory, and one
 * launch instead of two.
 * Prediction: 1.5x unfused (16 bytes moved per element instead of 24), close
 * to layernorm welford's fraction of the copy ceiling (~90%).
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 2,928 GB/s
 * at 65536x4096, 97.4% of the run's 3005 GB/s memory ceiling, 1.27x unfused.
 * Gap to the limit: under 3 points; as layernorm welford, the reduction with no
 * loads in flight for that row, and twice the registers per element loaded in
 * flight (x and r) for the same 32 floats of sum held per thread. History:
 * docs/notes/softmax-layernorm.md. */
#include "ops/add_layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"
#include "kernels/row_layernorm.cuh"

template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK) add_layernorm_fused_kernel(int R, int C, float eps,
                                                                        const float *__restrict__ x,
                                                                        const float *__restrict__ r,
                                                                        const float *__restrict__ gamma,
                                                                        const float *__restrict__ beta,
                                                                        float *__restrict__ y, float *__restrict__ sum)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    const float shift = __ldg(x + p.base) + __ldg(r + p.base); /* == sum[row][0] */
    float d[Cfg::PACKS][Cfg::VEC];
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            float a[Cfg::VEC], b[Cfg::VEC];
            kb_load_once(a, x + p.base + col);
            kb_load_once(b, r + p.base + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                d[k][j] = a[j] + b[j];
            kb_store_once(sum + p.base + col, d[k]);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                d[k][j] -= shift;
        }
    }
    const KbWelford w = kb_row_welford<Cfg>(d, p.cols, p.rank);
    kb_row_layernorm_store<Cfg>(d, w.mean, kb_welford_rstd(w, C, eps), gamma, beta, y + p.base, p.cols, p.rank);
}

/* Rows too long for registers: write sum while accumulating, read it back to normalize. */
template <int VEC>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) add_layernorm_fused_two_read_kernel(
    int C, float eps, const float *__restrict__ x, const float *__restrict__ r, const float *__restrict__ gamma,
    const float *__restrict__ beta, float *__restrict__ y, float *__restrict__ sum)
{
    const size_t base = (size_t)blockIdx.x * C;
    const float shift = __ldg(x + base) + __ldg(r + base);
    const KbWelford w = kb_block_welford_pass<VEC, KB_TWO_READ_BLOCK>(C, shift, [&](float (&v)[VEC], int col) {
        float b[VEC];
        kb_load_stream(v, x + base + col);
        kb_load_stream(b, r + base + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            v[j] += b[j];
        if constexpr (VEC == 4) /* a plain store: read back below */
            *reinterpret_cast<float4 *>(sum + base + col) = make_float4(v[0], v[1], v[2], v[3]);
        else
            sum[base + col] = v[0];
    });
    kb_block_layernorm_pass<VEC, KB_TWO_READ_BLOCK>(sum + base, C, shift, w.mean, kb_welford_rstd(w, C, eps), gamma,
                                                    beta, y + base);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_add_layernorm_args *a = (const kb_add_layernorm_args *)args;
    (void)ctx;
    bool in_registers = kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        add_layernorm_fused_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(
            a->R, a->C, a->eps, a->x, a->r, a->gamma, a->beta, a->y, a->sum);
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            add_layernorm_fused_two_read_kernel<4><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(
                a->C, a->eps, a->x, a->r, a->gamma, a->beta, a->y, a->sum);
        else
            add_layernorm_fused_two_read_kernel<1><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(
                a->C, a->eps, a->x, a->r, a->gamma, a->beta, a->y, a->sum);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant add_layernorm_fused[] = {
    {
        .name = "fused",
        .summary = "one kernel: x and r read once, sum and y written once, row in registers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .launch = launch,
    },
    KB_VARIANT_END,
};
