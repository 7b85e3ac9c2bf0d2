/* Host-side choice of how rows are run: kb_row_dispatch picks the
 * register-resident configuration (row_cfg.cuh) for C at launch and
 * kb_row_grid its grid; the two-read paths' block size for rows that do
 * not fit, the length from which rows are the long-row variants', and the
 * long-row families' `unsupported` of an RxC shape. */
#ifndef KBENCH_ROW_DISPATCH_CUH
#define KBENCH_ROW_DISPATCH_CUH

#include <stdint.h>
#include "kernels/cuda_util.h"
#include "ops/kbench.h"
#include "kernels/row_cfg.cuh"

template <class Cfg>
inline unsigned kb_row_grid(int R)
{
    return (unsigned)KB_CEIL_DIV(R, Cfg::ROWS_PER_BLOCK);
}

/* Calls f(Cfg{}) with the register-resident configuration for rows of C
 * columns and returns true, or returns false when the row does not fit
 * (C > 32768, or C > 16384 when C % 4 != 0).  float4 packs need C % 4 == 0;
 * other C use scalar packs.  The whole row is loaded before the first
 * reduction, with up to 128 bytes in flight per thread:
 *   C <= 1024: a group of 4..32 lanes per row (several rows per 128-thread
 *     block), 1..8 float4 or 1..32 scalars per lane;
 *   larger C: one block per row, 64..1024 threads of 8 float4 each, or
 *     128..1024 threads of 16 scalars each (32 scalars need more registers
 *     than a 1024-thread block leaves: layernorm spills). */
template <class F>
inline bool kb_row_dispatch(int C, F &&f)
{
    if (C % 4 == 0) {
        if (C <= 16) f(KbRowCfg<4, 1, 4>{});
        else if (C <= 32) f(KbRowCfg<4, 1, 8>{});
        else if (C <= 64) f(KbRowCfg<4, 1, 16>{});
        else if (C <= 128) f(KbRowCfg<4, 1, 32>{});
        else if (C <= 256) f(KbRowCfg<4, 2, 32>{});
        else if (C <= 512) f(KbRowCfg<4, 4, 32>{});
        else if (C <= 1024) f(KbRowCfg<4, 8, 32>{});
        else if (C <= 2048) f(KbRowCfg<4, 8, 64>{});
        else if (C <= 4096) f(KbRowCfg<4, 8, 128>{});
        else if (C <= 8192) f(KbRowCfg<4, 8, 256>{});
        else if (C <= 16384) f(KbRowCfg<4, 8, 512>{});
        else if (C <= 32768) f(KbRowCfg<4, 8, 1024>{});
        else return false;
    } else {
        if (C <= 32) f(KbRowCfg<1, 1, 32>{});
        else if (C <= 64) f(KbRowCfg<1, 2, 32>{});
        else if (C <= 128) f(KbRowCfg<1, 4, 32>{});
        else if (C <= 256) f(KbRowCfg<1, 8, 32>{});
        else if (C <= 512) f(KbRowCfg<1, 16, 32>{});
        else if (C <= 1024) f(KbRowCfg<1, 32, 32>{});
        else if (C <= 2048) f(KbRowCfg<1, 16, 128>{});
        else if (C <= 4096) f(KbRowCfg<1, 16, 256>{});
        else if (C <= 8192) f(KbRowCfg<1, 16, 512>{});
        else if (C <= 16384) f(KbRowCfg<1, 16, 1024>{});
        else return false;
    }
    return true;
}

/* Block size of the two-read paths, for rows kb_row_dispatch refuses. */
#define KB_TWO_READ_BLOCK 1024

/* Rows from this length on are the long-row variants' (cluster_row.cuh,
 * split_row.cuh, persistent_row.cuh): shorter ones fit one block's registers. */
#define KB_LONG_ROW_MIN_C 32768

/* A long-row family's reason to refuse rows of C floats (WHY), as a
 * variant's `unsupported` of an RxC shape. */
template <const char *(*WHY)(int64_t)>
static const char *kb_unsupported_cols(const kb_shape *s)
{
    return WHY(s->d[1]);
}

#endif
