/* matmul wgmma (bf16): Hopper's warpgroup MMA.  Two warpgroups (8 warps)
 * share a 128x256 tile of C; each owns 64 rows and multiplies them with one
 * wgmma.mma_async.m64n256k16 per k16 step, its 64x256 fp32 accumulator
 * spread over the warpgroup's registers (128 a thread).  The operands come
 * straight from shared memory through 64-bit matrix descriptors, with no
 * ldmatrix and no per-warp fragments: A (128x64 per stage) is K-major, 128
 * bytes a row; B (64x256) is stored N-major, as it lies in global memory, in
 * four 64-column panels of 64 rows x 128 bytes (the descriptor's leading
 * byte offset steps between panels, the stride byte offset between groups of
 * 8 rows, and the MMA transposes it).  Both use the 128-byte swizzle: chunk
 * ^ (row % 8) within each 1024-byte group of 8 rows, the layout the
 * descriptors name, and conflict-free for the tensor cores' reads.
 *
 * Loads are still cp.async by all 256 threads (12 16-byte copies a thread a
 * tile), into a 4-stage ring (192 KiB).  wgmma is asynchronous: a warpgroup
 * issues its 4 MMAs for tile k, commits them and waits only for tile k-1's,
 * so the tensor cores stay busy across the barrier; the ring then holds tile
 * k-1 (still being read), k, and two tiles in flight.  Copies are made
 * visible to the MMAs (the async proxy) by fence.proxy.async before the
 * barrier.
 *
 * Edges: zero-filled copies and checked stores as in mma_sync; element-wise
 * copies when K or N is not a multiple of 8.  Every shape runs.
 * Needs sm_90a (wgmma): the kernel body exists only in the sm_90a cubin
 * (meson.build's kb_sm90a), and the variant SKIPs on any GPU but compute
 * capability 9.0.
 *
 * Builds on mma_sync_swizzled: wgmma from swizzled shared memory replaces
 * ldmatrix + mma.sync.
 * Measured: not yet in the reference run; a bf16 matmul run at 0bdafd7
 * (docs/notes/matmul.md) gave 567 TFLOP/s at 4096^3 (0.77x cublas_bf16),
 * 613 at 8192^3 (0.78x), 0.60-0.62x at the transformer shapes.
 * Gap to the limit: the dense bf16 tensor peak, ~990 TFLOP/s on H100 SXM.
 * What is left: the loads still cost every thread issue slots and
 * registers (TMA: the next rung), only two tiles are in flight, and the
 * epilogue writes C straight from registers. */
#include <stdint.h>
#include "kernels/matmul.h"
#include "kernels/cuda_util.h"
#include "variants/matmul/bf16_common.cuh"

namespace {
constexpr int kBM = 128, kBN = 256, kBK = 64;          /* block tile */
constexpr int kWarpgroups = 2, kThreads = kWarpgroups * 128;
constexpr int kStages = 4;
constexpr int kAStageBytes = kBM * kBK * 2, kBStageBytes = kBK * kBN * 2;
constexpr int kSmemBytes = kStages * (kAStageBytes + kBStageBytes) + 1024; /* + alignment */
static_assert(kBK * 2 == 128, "A's rows are one 128-byte swizzle line");
static_assert(kBM * kBK / 8 % kThreads == 0 && kBK * kBN / 8 % kThreads == 0, "equal chunks per thread");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kWgM = kBM / kWarpgroups;                /* 64 rows per warpgroup: one m64 MMA */
constexpr int kAhead = kStages - 2, kGroupM = 16;      /* tiles loaded ahead; block order */
constexpr int kPanelBytes = kBK * 128;                 /* one 64-column panel of B */

/* Byte offset of 16-byte chunk ch of row r in the 128-byte-swizzled layout
 * (rows of 128 bytes, the stage 1024-aligned). */
__device__ __forceinline__ uint32_t sw128(int r, int ch) { return r * 128 + ((ch ^ (r & 7)) * 16); }

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
__device__ __forceinline__ void fence_acc(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; ++i)
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
#endif
}

template <bool Vec>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_kernel(int M, int N, int K, bool pair,
                                                                 const uint16_t *__restrict__ A,
                                                                 const uint16_t *__restrict__ B,
                                                                 uint16_t *__restrict__ C)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(128) unsigned char smem[];
    int tile_m, tile_n;
    bf16_block_tile<kGroupM>(&tile_m, &tile_n);
    const int m0 = tile_m * kBM, n0 = tile_n * kBN;
    const int tid = threadIdx.x, wg = tid / 128;
    /* The swizzle permutes by address bits 7-9: stages start 1024-aligned. */
    const uint32_t a_s = (bf16_smem_addr(smem) + 1023) & ~1023u, b_s = a_s + kStages * kAStageBytes;

    /* Tile kt of A (rows m0.., columns 64kt..) and of B (rows 64kt..,
     * columns n0..) into stage s.  B's chunk ch of row r goes to panel
     * ch / 8, chunk ch % 8 there. */
    auto load_tile = [&](int s, int kt) {
        const int k0 = kt * kBK;
#pragma unroll(Vec ? kBM * kBK / 8 / kThreads : 1) /* the element copies: one chunk at a time, few registers */
        for (int i = 0; i < kBM * kBK / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / 8, ch = c % 8;
            bf16_load_chunk<Vec>(a_s + s * kAStageBytes + sw128(r, ch), A, m0 + r, k0 + ch * 8, M, K, K);
        }
#pragma unroll(Vec ? kBK * kBN / 8 / kThreads : 1)
        for (int i = 0; i < kBK * kBN / 8 / kThreads; ++i) {
            const int c = tid + i * kThreads, r = c / (kBN / 8), ch = c % (kBN / 8);
            bf16_load_chunk<Vec>(b_s + s * kBStageBytes + (ch / 8) * kPanelBytes + sw128(r, ch % 8), B, k0 + r,
                                 n0 + ch * 8, K, N, N);
        }
    };

    float d[128]; /* set by the first MMA (accumulate = 0), never by other code: that would serialize the MMAs */
    const int k_tiles = KB_CEIL_DIV(K, kBK);
#pragma unroll
    for (int s = 0; s < kAhead; ++s) {
        if (s < k_tiles)
            load_tile(s, s);
        bf16_cp_async_commit();
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        bf16_cp_async_wait<kAhead - 1>();
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* this thread's copies -> the MMAs */
        __syncthreads(); /* tile kt is in; both warpgroups' MMAs of tile kt - 2 are done */
        if (kt + kAhead < k_tiles)
            load_tile((kt + kAhead) % kStages, kt + kAhead);
        bf16_cp_async_commit();

        /* A: this warpgroup's 64 rows, k16 step j 32 bytes into the rows;
         * leading offset unused (one swizzle line holds all of K), stride
         * 1024 between groups of 8 rows.  B: k16 step j 16 rows (2048
         * bytes) down; leading offset one panel (64 columns), stride 1024
         * between groups of 8 rows. */
        const uint32_t a_base = a_s + s * kAStageBytes + wg * kWgM * 128, b_base = b_s + s * kBStageBytes;
        fence_acc(d);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < kBK / 16; ++j)
            wgmma_m64n256k16(d, wgmma_desc(a_base + j * 32, 16, 1024),
                             wgmma_desc(b_base + j * 2048, kPanelBytes, 1024), kt > 0 || j > 0);
        wgmma_commit();
        wgmma_wait<1>();
        fence_acc(d);
    }
    wgmma_wait<0>();
    fence_acc(d);

    /* The accumulator as mma.sync's m16n8 tiles side by side: warp w of the
     * warpgroup holds rows 16w.., d[4j..4j+1] at (row g, columns 8j + 2t,
     * +1) and d[4j+2..4j+3] at row g + 8, g = lane / 4, t = lane % 4. */
    const int w = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int r = m0 + wg * kWgM + w * 16 + g;
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
        const int c = n0 + j * 8 + 2 * t;
        bf16_store_pair(C, M, N, pair, r, c, d[4 * j], d[4 * j + 1]);
        bf16_store_pair(C, M, N, pair, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
#else
    (void)M, (void)N, (void)K, (void)pair, (void)A, (void)B, (void)C;
    __trap(); /* no wgmma on this arch: the variant SKIPs here */
#endif
}

static bool aligned(const void *p, uintptr_t bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

/* wgmma exists on compute capability 9.0 only (sm_90a). */
static const char *unsupported(const kb_shape *s)
{
    (void)s;
    int dev = 0, major = 0, minor = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0 ? NULL : "wgmma needs sm_90a: compute capability 9.0 only";
}

/* Both instantiations use more than the default 48 KiB of shared memory:
 * opted in once here, outside the timed launches. */
static const char *setup(const void *args, void **ctx)
{
    (void)args;
    *ctx = NULL;
    const void *kernels[] = {(const void *)matmul_wgmma_kernel<true>, (const void *)matmul_wgmma_kernel<false>};
    for (const void *k : kernels) {
        const char *err =
            kb_cuda_status(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
        if (err)
            return err;
    }
    return NULL;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    (void)ctx;
    const kb_matmul_args *a = (const kb_matmul_args *)args;
    const bool vec = a->K % 8 == 0 && a->N % 8 == 0 && aligned(a->A16, 16) && aligned(a->B16, 16);
    const bool pair = a->N % 2 == 0 && aligned(a->C16, 4);
    const dim3 grid(KB_CEIL_DIV(a->N, kBN), KB_CEIL_DIV(a->M, kBM));
    if (vec)
        matmul_wgmma_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16,
                                                                          a->C16);
    else
        matmul_wgmma_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(a->M, a->N, a->K, pair, a->A16, a->B16,
                                                                           a->C16);
    KB_LAUNCHED();
}

extern "C" const kb_variant matmul_wgmma = {
    .name = "wgmma",
    .summary = "sm_90a wgmma m64n256k16 from 128B-swizzled smem descriptors, 2 warpgroups, 4-stage cp.async, 128x256x64",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 90,
    .unsupported = unsupported,
    .setup = setup,
    .launch = launch,
};
