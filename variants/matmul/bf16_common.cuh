/* Device pieces shared by the hand-written 16-bit (bf16 and f16) matmul rungs: the
 * mma.sync and ldmatrix wrappers, the cp.async tile loader that fills one
 * 16-byte chunk of a shared tile, the grouped block and tile orders and the
 * bf16 store of the fp32 accumulators.  Hopper's own primitives are
 * kernels/wgmma.cuh (wgmma, setmaxnreg) and kernels/tma.cuh (TMA copies,
 * clusters), their host side kernels/tma_host.h.  Each rung keeps its own
 * tile shapes, shared layout and main loop, which are what its file is
 * about.
 *
 * Shared addresses are 32-bit (cvta to the shared window) so that a rung can
 * compute swizzled offsets on them directly. */
#ifndef KBENCH_MATMUL_BF16_COMMON_CUH
#define KBENCH_MATMUL_BF16_COMMON_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include "kernels/dtype.cuh"

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ uint32_t bf16_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Two floats as a pair of 16-bit H (bf16 or f16), lo in the low half (the
 * lower column): the layout of an accumulator pair as an MMA operand or a
 * stored pair. */
template <typename H>
__device__ __forceinline__ uint32_t kb_pack16(float lo, float hi)
{
    typename KbHalf2<H>::pair v = KbHalf2<H>::round(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) { return kb_pack16<bf16>(lo, hi); }

/* ---- copies global -> shared ---------------------------------------------- */

/* 16 bytes by cp.async (sm_80+), src_bytes 0 or 16 (0: zero-fill). .cg: L2 only. */
__device__ __forceinline__ void bf16_cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void bf16_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int Pending>
__device__ __forceinline__ void bf16_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

/* Element (r, c) of a row-major rows x cols bf16 matrix as raw bits, 0 outside. */
__device__ __forceinline__ uint32_t bf16_elem(const uint16_t *m, int r, int c, int rows, int cols, int ld)
{
    return r < rows && c < cols ? (uint32_t)m[(size_t)r * ld + c] : 0u;
}

/* The 8 elements (r, c .. c+7) of a row-major rows x cols matrix with
 * leading dimension ld into the 16 shared bytes at dst; elements outside the
 * matrix are zeros, so a partial tile multiplies as if padded with zeros.
 * Vec: one 16-byte cp.async, which needs ld % 8 == 0, c % 8 == 0 and a
 * 16-byte aligned base (then a chunk is wholly inside or wholly outside).
 * Otherwise eight 2-byte loads and one 16-byte shared store: synchronous,
 * for the shapes whose rows are not 16-byte aligned. */
template <bool Vec>
__device__ __forceinline__ void bf16_load_chunk(uint32_t dst, const uint16_t *m, int r, int c, int rows, int cols,
                                                int ld)
{
    if constexpr (Vec) {
        const bool in = r < rows && c < cols;
        bf16_cp_async16(dst, in ? m + (size_t)r * ld + c : m, in ? 16 : 0);
    } else {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
            w[i] = bf16_elem(m, r, c + 2 * i, rows, cols, ld) | bf16_elem(m, r, c + 2 * i + 1, rows, cols, ld) << 16;
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]),
                     "r"(w[3])
                     : "memory");
    }
}

/* ---- mma.sync (sm_80+) ---------------------------------------------------- */

/* Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i. */
__device__ __forceinline__ void bf16_ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The same, each matrix transposed (B stored K x N gives the col-major B
 * fragments). */
__device__ __forceinline__ void bf16_ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* c += a * b for one m16n8k16 tile, bf16 in, fp32 accumulate. */
__device__ __forceinline__ void bf16_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* ---- block order and epilogue --------------------------------------------- */

/* Grouped block order (as gemm_pipeline.cuh's): consecutive blocks walk down
 * GroupM block-rows before moving one block-column right, so the blocks
 * resident together share A rows and B columns in L2. */
template <int GroupM>
__device__ __forceinline__ void bf16_block_tile(int *tile_m, int *tile_n)
{
    const int tiles_n = gridDim.x, tiles_m = gridDim.y;
    const int id = blockIdx.y * tiles_n + blockIdx.x;
    const int per_group = GroupM * tiles_n;
    const int first_m = (id / per_group) * GroupM;
    const int rows_here = min(tiles_m - first_m, GroupM);
    const int in_group = id % per_group;
    *tile_m = first_m + in_group % rows_here;
    *tile_n = in_group / rows_here;
}

/* C[r][c], C[r][c+1] = v0, v1 rounded to H (bf16 or f16), whichever lie
 * inside C.  c is even; with pair (N even, C 4-byte aligned) both go in one
 * 4-byte store. */
template <typename H>
__device__ __forceinline__ void kb_store_pair16(uint16_t *C, int M, int N, bool pair, int r, int c, float v0,
                                                float v1)
{
    if (r >= M || c >= N)
        return;
    H *p = reinterpret_cast<H *>(C) + (size_t)r * N + c;
    if (pair) {
        *reinterpret_cast<typename KbHalf2<H>::pair *>(p) = KbHalf2<H>::round(v0, v1);
    } else {
        p[0] = kb_from_float<H>(v0);
        if (c + 1 < N)
            p[1] = kb_from_float<H>(v1);
    }
}
__device__ __forceinline__ void bf16_store_pair(uint16_t *C, int M, int N, bool pair, int r, int c, float v0,
                                                float v1)
{
    kb_store_pair16<bf16>(C, M, N, pair, r, c, v0, v1);
}

/* ---- persistent tiles (wgmma_persistent and the rungs after it) ---------- */

/* Grouped order of a linear tile id over a tiles_m x tiles_n grid (the
 * order bf16_block_tile gives the blocks of a grid), for persistent blocks
 * that walk tile ids themselves. */
template <int GroupM>
__device__ __forceinline__ void bf16_grouped_tile(int id, int tiles_m, int tiles_n, int *tile_m, int *tile_n)
{
    const int per_group = GroupM * tiles_n;
    const int first_m = (id / per_group) * GroupM;
    const int rows_here = min(tiles_m - first_m, GroupM);
    const int in_group = id % per_group;
    *tile_m = first_m + in_group % rows_here;
    *tile_n = in_group / rows_here;
}

#endif
