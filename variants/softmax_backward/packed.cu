/* softmax_backward packed (bf16): vectorized with each row's bf16 packs
 * kept in registers as stored and widened where they are used, twice: for
 * the dot product sum_j dy_j y_j, and for dx = y (dy - dot).  vectorized's
 * bf16 form widens its packs on the load and holds the floats, 4 registers
 * for 4 elements of each row, so it keeps the f32 form's registers, and
 * its occupancy, for half the bytes in flight: 2794 GB/s at 65536x4096,
 * 66.0% of the ceiling, 0.73x torch.compile (a sweep at a03df72).  Packed,
 * a row's 4 elements take 2 registers: at 4096 columns (blocks of 128)
 * 70 registers a thread against vectorized's 97, 7 blocks an SM against
 * 4, 1.75x the bytes in flight.
 *
 * Builds on vectorized: its row layout and reduction, the loads issued
 * before any is used, the packs widened on use.  Rows past vectorized's
 * in-register limit (C > 16384; 8192 when C is not a multiple of 4) SKIP:
 * this rung is about that path.
 * Prediction: 85-90% of the ceiling at 65536x4096 and 8192x4096.
 * Measured: not yet on a GPU (written when no machine was lent).
 * Gap to the limit: vectorized's f32 form reaches 102% (two reads a write
 * against a copy's ceiling). */
#include <cuda_bf16.h>
#include "ops/softmax_backward.h"
#include "kernels/cuda_util.h"
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/row_dispatch.cuh"

typedef __nv_bfloat16 bf16;

/* An empty asm that may have changed x: what is computed from x before it
 * is computed again after it. */
__device__ __forceinline__ void opaque(uint2 &x) { asm volatile("" : "+r"(x.x), "+r"(x.y)); }
__device__ __forceinline__ void opaque(bf16 &x)
{
    unsigned short &b = reinterpret_cast<unsigned short &>(x);
    asm volatile("" : "+h"(b));
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::BLOCK) softmax_backward_packed_kernel(int R, int C, const bf16 *__restrict__ y,
                                                                             const bf16 *__restrict__ dy,
                                                                             bf16 *__restrict__ dx)
{
    constexpr int P = Cfg::PACKS, V = Cfg::VEC;
    typedef typename KbRawPack<bf16, V>::type Raw;
    const KbRowPos p = kb_row_pos<Cfg>(R, C);
    Raw ry[P], rd[P];
#pragma unroll
    for (int k = 0; k < P; ++k)
        if (kb_pack_col<Cfg>(k, p.rank) < p.cols) {
            ry[k] = kb_raw_load<bf16, V>(y + p.base + kb_pack_col<Cfg>(k, p.rank));
            rd[k] = kb_raw_load<bf16, V>(dy + p.base + kb_pack_col<Cfg>(k, p.rank));
        }
    float dot = 0.0f;
#pragma unroll
    for (int k = 0; k < P; ++k)
        if (kb_pack_col<Cfg>(k, p.rank) < p.cols) {
            float vy[V], vd[V];
            kb_raw_widen(vy, ry[k]);
            kb_raw_widen(vd, rd[k]);
#pragma unroll
            for (int j = 0; j < V; ++j)
                dot = fmaf(vd[j], vy[j], dot);
        }
    dot = kb_group_allreduce<Cfg::GROUP>(dot, KbSum{}, 0.0f);
    /* The packs, as far as the compiler knows, change here: it widens them
     * again below instead of keeping the first loop's floats alive across
     * the reduction (which took 107 registers a thread to vectorized's 97). */
#pragma unroll
    for (int k = 0; k < P; ++k)
        opaque(ry[k]), opaque(rd[k]);
#pragma unroll
    for (int k = 0; k < P; ++k) {
        const int col = kb_pack_col<Cfg>(k, p.rank);
        if (col < p.cols) {
            float vy[V], vd[V];
            kb_raw_widen(vy, ry[k]);
            kb_raw_widen(vd, rd[k]);
#pragma unroll
            for (int j = 0; j < V; ++j)
                vd[j] = vy[j] * (vd[j] - dot);
            kb_store_once(dx + p.base + col, vd);
        }
    }
}

/* The rows vectorized holds in registers. */
static const char *unsupported(const kb_shape *s)
{
    return s->d[1] > (s->d[1] % 4 ? 8192 : 16384) ? "rows past 16384 columns (8192 unaligned) do not fit its registers"
                                                 : NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_softmax_backward_args *a = (const kb_softmax_backward_args *)args;
    (void)ctx;
    bool ran = false;
    kb_row_dispatch(a->C, [&](auto cfg) {
        using Cfg = decltype(cfg);
        if constexpr (Cfg::MAX_C <= (Cfg::VEC == 4 ? 16384 : 8192)) {
            softmax_backward_packed_kernel<Cfg><<<kb_row_grid<Cfg>(a->R), Cfg::BLOCK, 0, stream>>>(
                a->R, a->C, (const bf16 *)a->y, (const bf16 *)a->dy, (bf16 *)a->dx);
            ran = true;
        }
    });
    if (!ran)
        return "a row past the in-register path";
    KB_LAUNCHED();
}

extern "C" const kb_variant softmax_backward_packed[] = {
    {
        .name = "packed",
        .summary = "vectorized with the bf16 packs kept as stored in registers, widened on use",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .unsupported = unsupported,
        .launch = launch,
    },
    KB_VARIANT_END,
};
