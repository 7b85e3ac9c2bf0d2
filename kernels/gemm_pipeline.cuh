/* The fp32 SGEMM pipeline of matmul double_buffered, shared with the ffn
 * variants: warp tiling fed by a multi-stage cp.async pipeline (sm_80+),
 * every shape supported (see variants/matmul/double_buffered.cu for the
 * design and its measurements).
 *
 * The kernel is templated on an epilogue: an object whose
 *     __device__ float apply(float value, int row, int col) const
 * maps each output C[row][col] just before it is stored.  GemmIdentity is the
 * plain SGEMM (it compiles to the same code as no epilogue: no loads);
 * GemmBias<Relu> adds bias[col] and, when Relu, clamps at 0, which is a
 * Linear layer's bias (+ ReLU) fused into the GEMM's store. */
#ifndef KBENCH_GEMM_PIPELINE_CUH
#define KBENCH_GEMM_PIPELINE_CUH

#include <stddef.h>
#include "kernels/cuda_util.h"
#include "kernels/cp_async.cuh"

/* ---- epilogues ------------------------------------------------------------ */

struct GemmIdentity {
    __device__ __forceinline__ float apply(float v, int, int) const { return v; }
};

/* value + bias[col], then max(., 0) when Relu.  bias has N entries. */
template <bool Relu>
struct GemmBias {
    const float *bias;
    __device__ __forceinline__ float apply(float v, int, int col) const
    {
        v += __ldg(bias + col);
        return Relu ? fmaxf(v, 0.0f) : v;
    }
};

/* ---- tile configuration ------------------------------------------------ */

template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages, int GroupM>
struct DbConfig {
    static constexpr int kBM = BM, kBN = BN, kBK = BK, kStages = Stages, kGroupM = GroupM;
    static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN;
    static constexpr int kThreads = WarpsM * WarpsN * 32;
    static constexpr int kWM = BM / WarpsM, kWN = BN / WarpsN;  /* warp tile */
    static constexpr int kLanesM = 8, kLanesN = 4;              /* lanes in a warp */
    static constexpr int kSubM = kWM / (kLanesM * 4);           /* float4 row groups per lane */
    static constexpr int kSubN = kWN / (kLanesN * 4);           /* float4 column groups per lane */
    static constexpr int kSubStrideM = kLanesM * 4, kSubStrideN = kLanesN * 4;
    static constexpr int kTM = kSubM * 4, kTN = kSubN * 4;      /* outputs per lane */
    static constexpr int kLdA = BM + 4;                         /* As[k][m], padded */
    static constexpr int kLdB = BN;                             /* Bs[k][n] */
    static constexpr int kStageFloats = BK * kLdA + BK * kLdB;
    static constexpr int kSmemBytes = Stages * kStageFloats * (int)sizeof(float);

    static_assert(kWM % (kLanesM * 4) == 0 && kWN % (kLanesN * 4) == 0, "warp tile shape");
    static_assert((BK * BN / 4) % kThreads == 0, "B copy: equal chunks per thread");
    static_assert(Stages >= 2, "a pipeline needs two stages");
};

/* The configuration tuned on H100 (see double_buffered.cu). */
using DbFlagship = DbConfig<128, 256, 32, 2, 4, 3, 16>;

/* ---- global -> shared copies of one BK step ------------------------------ */

/* A's tile (rows row0.., columns k0..) transposed into As[k][m], one float
 * per copy.  A warp copies 32 consecutive k of one row: one 128-byte line of
 * A.  Its shared-memory writes k*kLdA + r fall in 8 banks (4-way conflicts);
 * a mapping of 4 rows x 8 k per warp avoids them but measured ~2% slower,
 * as it touches 4 lines per copy instead of 1.  Only a running offset, a
 * row mask and the thread's k stay live across the K loop. */
template <class Cfg>
struct CopyA {
    static constexpr int kRowsPerPass = Cfg::kThreads / Cfg::kBK;
    static constexpr int kPasses = Cfg::kBM / kRowsPerPass;
    static_assert(Cfg::kThreads % Cfg::kBK == 0 && Cfg::kBM % kRowsPerPass == 0,
                  "threads tile the tile");
    static_assert(kPasses <= 32, "row mask fits a word");
    size_t off;        /* offset in A of this thread's first element of tile 0 */
    unsigned rows_ok;  /* bit p: the row of pass p is < M */
    int r, k;          /* this thread's first row and its column inside the tile */

    __device__ __forceinline__ CopyA(int M, int K, int row0)
    {
        r = threadIdx.x / Cfg::kBK;
        k = threadIdx.x % Cfg::kBK;
        off = (size_t)(row0 + r) * K + k;
        rows_ok = 0;
#pragma unroll
        for (int p = 0; p < kPasses; ++p)
            rows_ok |= (unsigned)(row0 + r + p * kRowsPerPass < M) << p;
    }

    __device__ __forceinline__ void copy(float *As, const float *__restrict__ A, int K, int t) const
    {
        const int k0 = t * Cfg::kBK;
        const bool k_ok = k0 + k < K;
        float *dst = As + k * Cfg::kLdA + r;
        size_t o = off + k0;
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
            const bool ok = k_ok && (rows_ok >> p & 1);
            kb_cp_async4(dst + p * kRowsPerPass, ok ? A + o : A, ok ? 4 : 0);
            o += (size_t)kRowsPerPass * K;
        }
    }
};

/* B's tile (rows k0.., columns col0..) into Bs[k][n]: 16-byte chunks when
 * Vec (N % 4 == 0, so a chunk is all inside B or all outside), else floats.
 * Consecutive threads take consecutive chunks of a row: coalesced, and
 * conflict-free in shared memory. */
template <class Cfg, bool Vec>
struct CopyB {
    static constexpr int kWidth = Vec ? 4 : 1;
    static constexpr int kThreadsPerRow = Cfg::kBN / kWidth;
    static constexpr int kRowsPerPass = Cfg::kThreads / kThreadsPerRow;
    static constexpr int kPasses = Cfg::kBK / kRowsPerPass;
    static_assert(kRowsPerPass >= 1 && Cfg::kBK % kRowsPerPass == 0, "threads tile the tile");
    size_t off;   /* offset in B of this thread's first chunk of tile 0 */
    bool col_ok;  /* this thread's column(s) are < N */
    int r, c;     /* this thread's first row and its column inside the tile */

    __device__ __forceinline__ CopyB(int N, int col0)
    {
        r = threadIdx.x / kThreadsPerRow;
        c = threadIdx.x % kThreadsPerRow * kWidth;
        off = (size_t)r * N + col0 + c;
        col_ok = col0 + c < N;
    }

    __device__ __forceinline__ void copy(float *Bs, const float *__restrict__ B, int N, int K,
                                         int t) const
    {
        const int k0 = t * Cfg::kBK;
        float *dst = Bs + r * Cfg::kLdB + c;
        size_t o = off + (size_t)k0 * N;
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
            const bool ok = col_ok && k0 + r + p * kRowsPerPass < K;
            if constexpr (Vec)
                kb_cp_async16(dst + p * kRowsPerPass * Cfg::kLdB, ok ? B + o : B, ok ? 16 : 0);
            else
                kb_cp_async4(dst + p * kRowsPerPass * Cfg::kLdB, ok ? B + o : B, ok ? 4 : 0);
            o += (size_t)kRowsPerPass * N;
        }
    }
};

/* ---- math on one stage ---------------------------------------------------- */

/* acc += As * Bs over one BK step.  Lane (m_lane, n_lane) owns rows
 * m_lane + s*kSubStrideM + (0..3) and columns n_lane + s*kSubStrideN + (0..3):
 * for one k, a warp's A loads are 8 consecutive float4 and its B loads 4
 * consecutive float4, each one conflict-free shared-memory access. */
template <class Cfg>
__device__ __forceinline__ void multiply_stage(const float *As, const float *Bs, int m_lane,
                                               int n_lane, float (&acc)[Cfg::kTM][Cfg::kTN])
{
#pragma unroll
    for (int k = 0; k < Cfg::kBK; ++k) {
        float a[Cfg::kTM], b[Cfg::kTN];
#pragma unroll
        for (int s = 0; s < Cfg::kSubM; ++s)
            *reinterpret_cast<float4 *>(&a[s * 4]) = *reinterpret_cast<const float4 *>(
                As + k * Cfg::kLdA + m_lane + s * Cfg::kSubStrideM);
#pragma unroll
        for (int s = 0; s < Cfg::kSubN; ++s)
            *reinterpret_cast<float4 *>(&b[s * 4]) = *reinterpret_cast<const float4 *>(
                Bs + k * Cfg::kLdB + n_lane + s * Cfg::kSubStrideN);
#pragma unroll
        for (int i = 0; i < Cfg::kTM; ++i)
#pragma unroll
            for (int j = 0; j < Cfg::kTN; ++j)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* Grouped block order: consecutive blocks walk down kGroupM block-rows before
 * moving one block-column right, so blocks running together share A rows and
 * B columns in L2. */
template <class Cfg>
__device__ __forceinline__ void block_tile_coords(int *tile_m, int *tile_n)
{
    const int tiles_n = gridDim.x, tiles_m = gridDim.y;
    const int id = blockIdx.y * tiles_n + blockIdx.x;
    const int per_group = Cfg::kGroupM * tiles_n;
    const int first_m = (id / per_group) * Cfg::kGroupM;
    const int rows_here = min(tiles_m - first_m, Cfg::kGroupM);
    const int in_group = id % per_group;
    *tile_m = first_m + in_group % rows_here;
    *tile_n = in_group / rows_here;
}

/* Write this lane's outputs, each through epi.apply(value, row, col), skipping
 * those outside C (whose epilogue is then not evaluated either). */
template <class Cfg, bool Vec, class Epilogue>
__device__ __forceinline__ void store_c(float *__restrict__ C, int M, int N, int row0, int col0,
                                        int m_lane, int n_lane,
                                        const float (&acc)[Cfg::kTM][Cfg::kTN],
                                        const Epilogue &epi)
{
#pragma unroll
    for (int i = 0; i < Cfg::kTM; ++i) {
        const int row = row0 + m_lane + (i / 4) * Cfg::kSubStrideM + i % 4;
        if (row >= M)
            continue;
        float *c_row = C + (size_t)row * N;
#pragma unroll
        for (int s = 0; s < Cfg::kSubN; ++s) {
            const int col = col0 + n_lane + s * Cfg::kSubStrideN;
            const float *v = &acc[i][s * 4];
            if constexpr (Vec) {  /* N % 4 == 0: all four inside or none */
                if (col < N)
                    *reinterpret_cast<float4 *>(c_row + col) =
                        make_float4(epi.apply(v[0], row, col), epi.apply(v[1], row, col + 1),
                                    epi.apply(v[2], row, col + 2), epi.apply(v[3], row, col + 3));
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N)
                        c_row[col + j] = epi.apply(v[j], row, col + j);
            }
        }
    }
}

/* C = epi(A * B): A is M x K, B is K x N, C is M x N, all row-major.  Grid:
 * (ceil(N / kBN), ceil(M / kBM)) blocks of kThreads, kSmemBytes of dynamic
 * shared memory (opted in with cudaFuncSetAttribute).  VecB: N % 4 == 0 and
 * B and C 16-byte aligned. */
template <class Cfg, bool VecB, class Epilogue>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
gemm_pipeline_kernel(int M, int N, int K, const float *__restrict__ A,
                     const float *__restrict__ B, float *__restrict__ C, Epilogue epi)
{
    extern __shared__ __align__(16) float smem[];
    int tile_m, tile_n;
    block_tile_coords<Cfg>(&tile_m, &tile_n);
    const int row0 = tile_m * Cfg::kBM, col0 = tile_n * Cfg::kBN;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int m_lane = (warp / Cfg::kWarpsN) * Cfg::kWM + (lane / Cfg::kLanesN) * 4;
    const int n_lane = (warp % Cfg::kWarpsN) * Cfg::kWN + (lane % Cfg::kLanesN) * 4;
    const int k_tiles = KB_CEIL_DIV(K, Cfg::kBK);

    const CopyA<Cfg> copy_a(M, K, row0);
    const CopyB<Cfg, VecB> copy_b(N, col0);
    auto stage_a = [&](int s) { return smem + s * Cfg::kStageFloats; };
    auto stage_b = [&](int s) { return smem + s * Cfg::kStageFloats + Cfg::kBK * Cfg::kLdA; };
    auto copy_tile = [&](int t) {
        const int s = t % Cfg::kStages;
        copy_a.copy(stage_a(s), A, K, t);
        copy_b.copy(stage_b(s), B, N, K, t);
    };

    /* Prologue: start the first kStages - 1 tiles.  Every step commits one
     * group, empty or not, so group t always holds tile t. */
#pragma unroll
    for (int t = 0; t < Cfg::kStages - 1; ++t) {
        if (t < k_tiles)
            copy_tile(t);
        kb_cp_async_commit();
    }

    float acc[Cfg::kTM][Cfg::kTN] = {};
    for (int t = 0; t < k_tiles; ++t) {
        kb_cp_async_wait<Cfg::kStages - 2>();  /* this thread's copies of tile t landed */
        /* Now everyone's copies of tile t are visible, and everyone has
         * finished tile t - 1, whose stage the copy below overwrites. */
        __syncthreads();
        const int next = t + Cfg::kStages - 1;
        if (next < k_tiles)
            copy_tile(next);
        kb_cp_async_commit();
        const int s = t % Cfg::kStages;
        multiply_stage<Cfg>(stage_a(s), stage_b(s), m_lane, n_lane, acc);
    }
    kb_cp_async_wait<0>();  /* only empty groups remain; leave nothing in flight */

    store_c<Cfg, VecB>(C, M, N, row0, col0, m_lane, n_lane, acc, epi);
}

#endif
