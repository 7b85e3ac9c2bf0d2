/* The register-resident row softmax step shared by softmax/vectorized and
 * attention/cublas (its causal rows): group max, exp, group sum and the
 * scaled store, once a thread holds its packs of the row. */
#ifndef KBENCH_ROW_SOFTMAX_CUH
#define KBENCH_ROW_SOFTMAX_CUH

#include <math.h>
#include <cuda_runtime.h>
#include "kernels/combine.cuh"
#include "kernels/reduce.cuh"
#include "kernels/cache_hints.cuh"
#include "kernels/row_cfg.cuh"

/* The register-resident row softmax once a thread holds its packs of the
 * row in v, with -inf wherever an entry is past the row or masked: group
 * max, exp, group sum, then y = v / sum for the packs inside the row.  An
 * all -inf row (or a group past the last row) gives zeros, not NaN.  y is
 * float or a 16-bit type (cache_hints.cuh rounds the stores). */
template <class Cfg, typename T>
__device__ __forceinline__ void kb_row_softmax_store(float (&v)[Cfg::PACKS][Cfg::VEC], T *y_row, int cols, int rank)
{
    float max = -INFINITY;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j)
            max = fmaxf(max, v[k][j]);
    max = kb_group_allreduce<Cfg::GROUP>(max, KbMax{}, -INFINITY);
    if (max == -INFINITY)
        max = 0.0f;

    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
#pragma unroll
        for (int j = 0; j < Cfg::VEC; ++j) {
            v[k][j] = expf(v[k][j] - max);
            sum += v[k][j];
        }
    sum = kb_group_allreduce<Cfg::GROUP>(sum, KbSum{}, 0.0f);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, rank);
        if (col < cols) {
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                v[k][j] *= inv;
            kb_store_once(y_row + col, v[k]);
        }
    }
}

#endif
