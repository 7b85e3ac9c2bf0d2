/* add_layernorm unfused: the baseline, two kernels as an unfused framework
 * runs them: a residual-add kernel writes sum = x + r (grid-stride, float4
 * with a scalar tail), then a LayerNorm kernel reads sum back and writes y.
 * The LayerNorm kernel is layernorm/welford's: the same shared device code
 * (kb_row_welford, kb_row_layernorm_store and the two-read path in
 * kernels/reduce.cuh), row in registers, one read of sum.
 *
 * Idea: what fusion is measured against.
 * Prediction: 24 bytes moved per element (x, r read; sum written; sum read
 * back; y written) for 16 counted: ~2/3 of the copy ceiling at best, a bit
 * less for the second launch and, for small matrices, sum still in L2
 * helps (which it cannot for >= 256 MB).
 * Measured on H100: (to be filled from the committed run).
 * Gap to the limit: the round trip of sum through memory (fused removes it). */
#include "kernels/add_layernorm.h"
#include "kernels/cuda_util.h"
#include "kernels/reduce.cuh"

#define ADD_BLOCK 256
#define ADD_WAVES 8 /* blocks per SM for the grid-stride add */

__global__ void __launch_bounds__(ADD_BLOCK) add_layernorm_unfused_add_kernel(int64_t n, const float *__restrict__ x,
                                                                             const float *__restrict__ r,
                                                                             float *__restrict__ sum)
{
    const int64_t n4 = n / 4, stride = (int64_t)gridDim.x * ADD_BLOCK;
    const int64_t first = (int64_t)blockIdx.x * ADD_BLOCK + threadIdx.x;
    for (int64_t i = first; i < n4; i += stride) {
        float4 a = __ldcs(reinterpret_cast<const float4 *>(x) + i);
        float4 b = __ldcs(reinterpret_cast<const float4 *>(r) + i);
        /* plain store: the LayerNorm kernel reads sum back */
        reinterpret_cast<float4 *>(sum)[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    if (first < n - n4 * 4) /* the last n % 4 elements */
        sum[n4 * 4 + first] = x[n4 * 4 + first] + r[n4 * 4 + first];
}

/* layernorm/welford's kernel, reading sum. */
template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK) add_layernorm_unfused_norm_kernel(int R, int C, float eps,
                                                                               const float *__restrict__ s,
                                                                               const float *__restrict__ gamma,
                                                                               const float *__restrict__ beta,
                                                                               float *__restrict__ y)
{
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    const float shift = __ldg(s + p.base);
    float d[Cfg::PACKS][Cfg::VEC];
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            kb_load_stream(d[k], s + p.base + col);
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                d[k][j] -= shift;
        }
    }
    const KbWelford w = kb_row_welford<Cfg>(d, p.cols, p.rank);
    kb_row_layernorm_store<Cfg>(d, w.mean, kb_welford_rstd(w, C, eps), gamma, beta, y + p.base, p.cols, p.rank);
}

template <int VEC>
__global__ void __launch_bounds__(KB_TWO_READ_BLOCK) add_layernorm_unfused_two_read_kernel(
    int C, float eps, const float *__restrict__ s, const float *__restrict__ gamma, const float *__restrict__ beta,
    float *__restrict__ y)
{
    const float *in = s + (size_t)blockIdx.x * C;
    const float shift = __ldg(in);
    const KbWelford w = kb_block_welford_pass<VEC, KB_TWO_READ_BLOCK>(
        C, shift, [&](float (&v)[VEC], int col) { kb_load_cached(v, in + col); });
    kb_block_layernorm_pass<VEC, KB_TWO_READ_BLOCK>(in, C, shift, w.mean, kb_welford_rstd(w, C, eps), gamma, beta,
                                                    y + (size_t)blockIdx.x * C);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_add_layernorm_args *a = (const kb_add_layernorm_args *)args;
    (void)ctx;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t n = (int64_t)a->R * a->C;
    const int64_t blocks = KB_CEIL_DIV(n / 4 > 0 ? n / 4 : 1, ADD_BLOCK);
    const int grid = (int)(blocks < (int64_t)ADD_WAVES * sms ? blocks : (int64_t)ADD_WAVES * sms);
    add_layernorm_unfused_add_kernel<<<grid, ADD_BLOCK, 0, stream>>>(n, a->x, a->r, a->sum);

    bool in_registers = kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        add_layernorm_unfused_norm_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(
            a->R, a->C, a->eps, a->sum, a->gamma, a->beta, a->y);
    });
    if (!in_registers) {
        if (a->C % 4 == 0)
            add_layernorm_unfused_two_read_kernel<4><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(
                a->C, a->eps, a->sum, a->gamma, a->beta, a->y);
        else
            add_layernorm_unfused_two_read_kernel<1><<<a->R, KB_TWO_READ_BLOCK, 0, stream>>>(
                a->C, a->eps, a->sum, a->gamma, a->beta, a->y);
    }
    KB_LAUNCHED();
}

extern "C" const kb_variant add_layernorm_unfused = {
    .name = "unfused",
    .summary = "residual-add kernel, then layernorm welford's kernel reading sum back (baseline)",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .launch = launch,
};
