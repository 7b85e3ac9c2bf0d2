/* The layout of a register-resident row: KbRowCfg says how a row is spread
 * over a group of threads (VEC floats per pack, PACKS packs per thread,
 * GROUP threads per row), kb_pack_col where a thread's pack lies and
 * kb_row_pos which row a thread works on.  Shared by the short-row variants
 * and the long-row headers (cluster_row, split_row, persistent_row), whose
 * blocks hold a chunk the same way. */
#ifndef KBENCH_ROW_CFG_CUH
#define KBENCH_ROW_CFG_CUH

#include <stddef.h>
#include <cuda_runtime.h>

/* A row of up to MAX_C columns held in registers by GROUP threads: thread
 * `rank` holds packs k = 0..PACKS-1 at columns (k * GROUP + rank) * VEC, so
 * each pack instruction of a warp covers consecutive memory.  GROUP <= 32:
 * several rows per 128-thread block, one per group of lanes; GROUP > 32: one
 * row per block of GROUP threads. */
template <int VEC_, int PACKS_, int GROUP_>
struct KbRowCfg {
    static constexpr int VEC = VEC_, PACKS = PACKS_, GROUP = GROUP_;
    static constexpr int BLOCK = GROUP <= 32 ? 128 : GROUP;
    static constexpr int ROWS_PER_BLOCK = BLOCK / GROUP;
    static constexpr int MAX_C = VEC * PACKS * GROUP;
    static_assert(BLOCK <= 1024 && BLOCK % GROUP == 0, "a row group fits a block");
};

template <class Cfg>
__device__ __forceinline__ int kb_pack_col(int k, int rank)
{
    return (k * Cfg::GROUP + rank) * Cfg::VEC;
}

/* Where this thread's row is: row index, rank in the row's group, and the
 * number of columns it may touch (0 for a group past the last row, which
 * still joins its warp's shuffles). */
struct KbRowPos {
    int row, rank, cols;
    size_t base; /* offset of the row (clamped to a real row) */
};

template <class Cfg>
__device__ __forceinline__ KbRowPos kb_row_pos(int R, int C)
{
    KbRowPos p;
    p.row = (int)blockIdx.x * Cfg::ROWS_PER_BLOCK + (int)threadIdx.x / Cfg::GROUP;
    p.rank = (int)threadIdx.x % Cfg::GROUP;
    p.cols = p.row < R ? C : 0;
    p.base = (size_t)(p.row < R ? p.row : R - 1) * (size_t)C;
    return p;
}

#endif
