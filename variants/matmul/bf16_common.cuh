/* Device pieces shared by the hand-written bf16 matmul rungs: the
 * tensor-core PTX wrappers (mma.sync, and for sm_90a wgmma's descriptors,
 * fences and m64n256k16 / m64n192k16 products, TMA loads, mbarriers and
 * setmaxnreg), the tile loader that fills one 16-byte chunk of a shared
 * tile, the grouped block order and the bf16 store of the fp32
 * accumulators.  Each rung keeps its own tile
 * shapes, shared layout and main loop, which are what its file is about.
 *
 * Shared addresses are 32-bit (cvta to the shared window) so that a rung can
 * compute swizzled offsets on them directly. */
#ifndef KBENCH_MATMUL_BF16_COMMON_CUH
#define KBENCH_MATMUL_BF16_COMMON_CUH

#include <stdint.h>
#include <cuda.h>
#include <cuda_bf16.h>

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ uint32_t bf16_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Two floats as a bf16 pair, lo in the low half (the lower column): the
 * layout of an accumulator pair as an MMA operand or a stored pair. */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

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

/* C[r][c], C[r][c+1] = v0, v1 rounded to bf16, whichever lie inside C.  c is
 * even; with pair (N even, C 4-byte aligned) both go in one 4-byte store. */
__device__ __forceinline__ void bf16_store_pair(uint16_t *C, int M, int N, bool pair, int r, int c, float v0,
                                                float v1)
{
    if (r >= M || c >= N)
        return;
    bf16 *p = reinterpret_cast<bf16 *>(C) + (size_t)r * N + c;
    if (pair) {
        *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(v0, v1);
    } else {
        p[0] = __float2bfloat16_rn(v0);
        if (c + 1 < N)
            p[1] = __float2bfloat16_rn(v1);
    }
}

/* ---- warp specialization and persistent tiles (wgmma_warpspec,
 * wgmma_persistent) ------------------------------------------------------ */

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

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* This thread's plain arrival on an mbarrier (release: its earlier reads and
 * its warpgroup's completed MMAs come before the phase completes). */
__device__ __forceinline__ void bf16_mbar_arrive(unsigned long long *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bf16_smem_addr(bar)) : "memory");
}

/* Give registers back to the SM (dec) or take them (inc): every thread of
 * the warpgroup executes the same one.  Regs: a multiple of 8 in 24..256. */
template <int Regs>
__device__ __forceinline__ void bf16_setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void bf16_setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}

/* A shared-memory matrix descriptor: start address, leading and stride
 * byte offsets (all >> 4), 128-byte swizzle (mode 1 in bits 62-63). */
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32 |
           1ull << 62;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/* Keep the compiler from moving accumulator accesses across the async MMAs. */
template <int Regs>
__device__ __forceinline__ void fence_acc(float (&d)[Regs])
{
#pragma unroll
    for (int i = 0; i < Regs; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* d = A (64x16, K-major) * B (16x256, N-major) + (accumulate ? d : 0),
 * both operands by descriptor. */
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

/* The box of `map` at element coordinates (x inner, y outer) into shared
 * dst, its bytes counted on bar when they land. */
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap *map, int x, int y, unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst), "l"((uint64_t)map), "r"(x), "r"(y), "r"(bf16_smem_addr(bar))
                 : "memory");
}

/* d = A (64x16, K-major) * B (16x192, N-major) + (accumulate ? d : 0), both
 * by 128-byte-swizzled descriptors: wgmma_tma's m64n256k16 with three
 * 64-column panels of B in place of four (wgmma_persistent's narrow tiles). */
__device__ __forceinline__ void bf16_wgmma_m64n192k16(float (&d)[96], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
                 "}, %96, %97, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
                 : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

#endif
