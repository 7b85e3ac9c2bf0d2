/* Helpers shared by the attention variants (a header of this folder, not a
 * variant): the score-matrix workspace of the unfused variants (naive,
 * cublas), sized and checked before the allocation so that a shape whose
 * scores do not fit becomes a SKIP with a reason instead of a sticky CUDA
 * error; the block order of the fused kernels; the mma.sync wrappers of the
 * tensor-core ones, their quad reductions, a fresh read of the thread
 * index for copy loops and the vector fp32 reduction to global memory of
 * the backward's dq. */
#ifndef KBENCH_ATTENTION_COMMON_CUH
#define KBENCH_ATTENTION_COMMON_CUH

#include <stdint.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include "ops/attention.h"
#include "kernels/cuda_util.h"
#include "kernels/cp_async.cuh"
#include "variants/matmul/bf16_common.cuh" /* pack_bf16 */

/* log2(e): the fused kernels use exp2 with it folded into the score scale. */
#define KB_LOG2E 1.4426950408889634f

/* 2^x in one MUFU.EX2, results under 2^-126 flushed to zero: exp2f adds
 * four instructions around it to keep subnormals, which a probability
 * that small never needs (it is below bf16's and the sum's resolution). */
__device__ __forceinline__ float exp2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* B*H*Tq*Tk fp32 scores, or a reason why they cannot be had. */
static inline const char *kb_attention_alloc_scores(const kb_attention_args *a, float **scores)
{
    const size_t n = (size_t)a->B * a->H * (size_t)a->Tq * (size_t)a->Tk;
    return kb_alloc_workspace((void **)scores, n * sizeof(float), "score matrix");
}

/* The fused kernels' online softmax starts from key 0, which every row sees
 * while Tq <= Tk; a causal Tq > Tk shape has rows that see no key, and they
 * SKIP it. */
static inline const char *kb_attention_fused_unsupported(const kb_shape *s)
{
    return s->flags && s->d[2] > s->d[3]
               ? "causal with Tq > Tk: the first Tq - Tk rows see no key, which the online softmax does not handle"
               : NULL;
}

/* ---- block order ------------------------------------------------------------ */

/* A 1-D grid of (row tile, head) pairs.  Not causal: row tiles fastest,
 * so the blocks in flight together are the row tiles of a few heads and
 * share their K and V in L2.  Causal: a row tile's work grows with its
 * index, so the blocks run longest first across all heads (every head's
 * last row tile, then every head's second last, ...): the short tiles fill
 * the tail.  (Longest first within each head, heads one after another, left
 * the last heads' long tiles running alone at the end: flash_mma causal
 * ran at 0.78x its non-causal rate at 2x16x4096x4096x128, 0.96x this way.) */
struct KbAttnTile {
    int row0;     /* first query row of the tile */
    int64_t bh;   /* b * H + h */
};

__device__ __forceinline__ KbAttnTile kb_attn_tile_at(int64_t id, int row_tiles, int heads, int rows_per_tile,
                                                      int causal)
{
    if (causal)
        return {(row_tiles - 1 - (int)(id / heads)) * rows_per_tile, id % heads};
    return {(int)(id % row_tiles) * rows_per_tile, id / row_tiles};
}

/* The tile of this block (a tile a block). */
__device__ __forceinline__ KbAttnTile kb_attn_tile(int row_tiles, int heads, int rows_per_tile, int causal)
{
    return kb_attn_tile_at(blockIdx.x, row_tiles, heads, rows_per_tile, causal);
}


/* ---- mma.sync m16n8k16 in bf16: the PTX that flash_mma and flash_decode_mma share ---- */

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* c += a * b for one m16n8k16 tile. */
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* threadIdx.x, read anew at every call (asm volatile, which the compiler
 * neither hoists nor merges): a copy loop that takes its addresses from it
 * recomputes them per call, a few integer instructions, instead of holding
 * them in registers across a kernel's main loop. */
__device__ __forceinline__ int kb_tid_fresh()
{
    int tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    return tid;
}

/* dst[0] += a and dst[1] += b in global memory (dst 8-byte aligned), with
 * no value returned: one vector reduction, red.global.add.v2.f32, on sm_90
 * and newer, two scalar ones before.  The order in which the reductions
 * of several threads land is not defined, so a sum built this way is not
 * bitwise reproducible.  (The accumulator pair of an mma.sync C fragment,
 * columns 2t and 2t + 1 of a row, is one such pair.) */
__device__ __forceinline__ void red_add_f32x2(float *dst, float a, float b)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
    asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst), "f"(a) : "memory");
    asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst + 1), "f"(b) : "memory");
#endif
}

/* The max and the sum of v over the four lanes of a quad: the lanes that
 * hold one row of an mma.sync or wgmma accumulator. */
__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

#endif
