/* matmul double_buffered (flagship): warptile's block -> warp -> thread
 * hierarchy fed by a 3-stage cp.async pipeline (sm_80+).  While the warps
 * multiply the tile in one shared-memory stage, the copies of the next two
 * tiles are in flight from global memory, straight into shared memory
 * without passing through registers, so the math and the loads overlap.
 * One barrier per BK step.
 *
 * Tiles (tuned on H100): block 128x256, BK 32, 256 threads as 2 x 4 warps of
 * 64x64; each lane owns 8x16 outputs (2 x 4 sub-tiles of 4x4, 32 rows and 16
 * columns apart), so per k it does 128 FFMAs for 6 LDS.128.  ~230 registers,
 * one block (146 KiB of shared memory) per SM.  Blocks run in groups of 16
 * block-rows, column by column, so blocks resident together share B panels
 * in L2.  As is A transposed (As[k][m], rows padded to BM + 4), built by
 * 4-byte copies, so a thread's A values for one k are a float4 like its B
 * values; Bs is B as is, 16-byte copies.
 *
 * Edges: a copy whose source lies outside A or B has source size 0, which
 * zero-fills its destination, so the math needs no checks.  16-byte copies of
 * B need N % 4 == 0 (aligned rows); otherwise B is copied 4 bytes at a time.
 * Every shape runs.
 *
 * Builds on warptile: the loads overlap the math.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 46.8
 * TFLOP/s at 4096^3, 74.5% of the run's 62.9 TFLOP/s fp32 ceiling, 0.91x
 * cublas; 47.6 TFLOP/s (75.8%) at 8192^3, 0.93x cublas.
 * Gap to the limit: 26 points; FFMAs are ~92% of the main loop's instructions,
 * the rest is issue and latency that one block of 8 warps per SM does not fully
 * hide.  History: docs/notes/matmul.md. */
#include <stdint.h>
#include "ops/matmul.h"
#include "kernels/cuda_util.h"
#include "kernels/gemm_pipeline.cuh"  /* the kernel, shared with the ffn variants */

/* ---- host side -------------------------------------------------------------- */

/* Both instantiations may use more than the default 48 KB of shared memory. */
template <class Cfg>
static const char *allow_smem()
{
    const void *kernels[] = {(const void *)gemm_pipeline_kernel<Cfg, true, GemmIdentity>,
                             (const void *)gemm_pipeline_kernel<Cfg, false, GemmIdentity>};
    for (const void *k : kernels) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             Cfg::kSmemBytes);
        if (e != cudaSuccess)
            return cudaGetErrorString(e);
    }
    return NULL;
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <class Cfg>
static const char *launch_config(const kb_matmul_args *a, cudaStream_t stream)
{
    /* Rows of B and C start 16-byte aligned iff N % 4 == 0 (and the bases are). */
    const bool vec_b = a->N % 4 == 0 && aligned16(a->B) && aligned16(a->C);
    dim3 grid(KB_CEIL_DIV(a->N, Cfg::kBN), KB_CEIL_DIV(a->M, Cfg::kBM));
    if (vec_b)
        gemm_pipeline_kernel<Cfg, true, GemmIdentity><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            a->M, a->N, a->K, a->A, a->B, a->C, GemmIdentity{});
    else
        gemm_pipeline_kernel<Cfg, false, GemmIdentity><<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(
            a->M, a->N, a->K, a->A, a->B, a->C, GemmIdentity{});
    KB_LAUNCHED();
}

/* The shared-memory opt-in is done once here, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    (void)args;
    *ctx = NULL;
    return allow_smem<DbFlagship>();
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    (void)ctx;
    return launch_config<DbFlagship>((const kb_matmul_args *)args, stream);
}

extern "C" const kb_variant matmul_double_buffered[] = {
    {
        .name = "double_buffered",
        .summary = "warp tiling + 3-stage cp.async pipeline, 128x256x32 block, 8x16 per thread",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .min_cc = 80,
        .setup = setup,
        .launch = launch,
    },
    KB_VARIANT_END,
};
