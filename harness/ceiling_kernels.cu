/* The compute ceilings: an fp32 FMA-chain kernel of our own; for the
 * tensor cores, a wgmma kernel of our own on Hopper (sm_90a), else a large
 * cuBLAS bf16 GEMM; and memory read alone and written alone (the copy's
 * ceiling is the copy op's own rows).  Each is a kb_variant, so the harness's timing loop
 * measures it like any other row. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"
#include "kernels/tma_host.h"
#include "kernels/wgmma.cuh"
#include "variants/matmul/bf16_common.cuh"

#define FMA_CHAINS 8       /* independent chains per thread: hides FMA latency */
#define FMA_ITERS 4096
#define FMA_BLOCKS_PER_SM 8
#define FMA_THREADS 256
#define GEMM_N 8192
#define STAMPED_BLOCKS 4096 /* blocks of a launch that stamp their clocks */

/* The SM clock inside our ceiling kernels: NVML reads the clock between
 * launches (1980 MHz on an H100), and the SMs may run slower under the
 * load (1750-1790 MHz, by GPC, in flash_wgmma's launches).  Thread 0 of
 * each block stamps clock64, which counts its SM's cycles, and
 * %globaltimer, in ns on every SM, at its start and end; the last launch's
 * stamps stay here. */
__device__ unsigned long long clock_stamps[STAMPED_BLOCKS][4];
static int stamped_blocks; /* of the last launch; 0: a kernel not ours */

__device__ __forceinline__ void stamp_clocks(int end)
{
    /* Both in one asm: work that the compiler moved between two separate
     * reads made the FMA kernel's clock read 2150 MHz on a 1980 MHz H100. */
    unsigned long long cycles, ns;
    asm volatile("mov.u64 %0, %%clock64;\n\tmov.u64 %1, %%globaltimer;" : "=l"(cycles), "=l"(ns));
    if (threadIdx.x == 0 && blockIdx.x < STAMPED_BLOCKS) {
        clock_stamps[blockIdx.x][2 * end] = cycles;
        clock_stamps[blockIdx.x][2 * end + 1] = ns;
    }
}

/* The median over the last launch's blocks of cycles per ns, in MHz; 0
 * when it was not ours or its stamps cannot be read. */
extern "C" double kb_ceiling_inside_mhz(void)
{
    static unsigned long long s[STAMPED_BLOCKS][4];
    const int n = stamped_blocks < STAMPED_BLOCKS ? stamped_blocks : STAMPED_BLOCKS;
    if (n == 0 || cudaMemcpyFromSymbol(s, clock_stamps, n * sizeof s[0]) != cudaSuccess)
        return 0;
    double mhz[STAMPED_BLOCKS];
    int m = 0;
    for (int i = 0; i < n; ++i)
        if (s[i][3] > s[i][1] && s[i][2] > s[i][0])
            mhz[m++] = 1e3 * (double)(s[i][2] - s[i][0]) / (double)(s[i][3] - s[i][1]);
    if (m == 0)
        return 0;
    kb_stats st;
    kb_stats_compute(mhz, m, &st);
    return st.median;
}

/* Each thread runs FMA_CHAINS dependent chains of FMA_ITERS FMAs.  The
 * result is stored so the compiler cannot drop the work. */
__global__ void __launch_bounds__(FMA_THREADS) fma_chain_kernel(float *out, float b, float c)
{
    stamp_clocks(0);
    float acc[FMA_CHAINS];
#pragma unroll
    for (int i = 0; i < FMA_CHAINS; ++i)
        acc[i] = threadIdx.x * 1e-3f + i;
    for (int it = 0; it < FMA_ITERS; ++it)
#pragma unroll
        for (int i = 0; i < FMA_CHAINS; ++i)
            acc[i] = fmaf(acc[i], b, c);
    float sum = 0;
#pragma unroll
    for (int i = 0; i < FMA_CHAINS; ++i)
        sum += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    stamp_clocks(1);
}

static int sm_count(void)
{
    int dev, sms;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    return sms;
}

static int fma_blocks(void) { return sm_count() * FMA_BLOCKS_PER_SM; }

extern "C" double kb_fma_flops(void)
{
    return 2.0 * FMA_CHAINS * FMA_ITERS * (double)fma_blocks() * FMA_THREADS;
}

static const char *fma_setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cuda_status(cudaMalloc(ctx, (size_t)fma_blocks() * FMA_THREADS * sizeof(float)));
}

static void free_ctx(void *ctx) { cudaFree(ctx); }

static const char *fma_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    /* b just under 1 and c small keep the chains finite and non-trivial. */
    stamped_blocks = fma_blocks();
    fma_chain_kernel<<<fma_blocks(), FMA_THREADS, 0, s>>>((float *)ctx, 0.9999f, 1e-4f);
    KB_LAUNCHED();
}

extern "C" const kb_variant kb_fma_peak = {
    .name = "fma_chain", .summary = "fp32 FMA chains", .dtype = KB_F32, .math = KB_MATH_F32,
    .setup = fma_setup, .teardown = free_ctx, .launch = fma_launch};

/* ---- memory read alone, and written alone ---------------------------------- */

/* The read and write ceilings stream STREAM_BYTES (1 GiB, as the copy
 * ceiling's source) in 16-byte accesses, grid-stride over blocks of 4 per
 * SM; a copy's ceiling moves the same bytes both ways. */
#define STREAM_BYTES ((size_t)1 << 30)
#define STREAM_THREADS 512

/* Reads every float4 and sums it; a thread stores its sum only when it is
 * a value the data cannot give (the fill is finite), which the compiler
 * cannot know, so the loads stay. */
__global__ void __launch_bounds__(STREAM_THREADS) read_stream_kernel(const float4 *x, size_t n, float *sink)
{
    float a = 0, b = 0, c = 0, d = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        a += v.x, b += v.y, c += v.z, d += v.w;
    }
    if (a + b + c + d == INFINITY)
        sink[0] = a;
}

__global__ void __launch_bounds__(STREAM_THREADS) write_stream_kernel(float4 *x, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = make_float4(v, v, v, v);
}

extern "C" double kb_stream_bytes(void) { return (double)STREAM_BYTES; }

static const char *stream_setup(const void *args, void **ctx)
{
    (void)args;
    void *p = NULL;
    KB_TRY(kb_alloc_workspace(&p, STREAM_BYTES + 256, "the read and write ceilings' 1 GiB"));
    *ctx = p;
    return kb_cuda_status(cudaMemset(p, 0, STREAM_BYTES + 256)); /* zeros: finite, never the sink's INFINITY */
}

static int stream_blocks(void) { return sm_count() * 4; }

static const char *read_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    stamped_blocks = 0;
    read_stream_kernel<<<stream_blocks(), STREAM_THREADS, 0, s>>>((const float4 *)ctx, STREAM_BYTES / 16,
                                                                  (float *)((char *)ctx + STREAM_BYTES));
    KB_LAUNCHED();
}

static const char *write_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    stamped_blocks = 0;
    write_stream_kernel<<<stream_blocks(), STREAM_THREADS, 0, s>>>((float4 *)ctx, STREAM_BYTES / 16, 0.5f);
    KB_LAUNCHED();
}

extern "C" const kb_variant kb_read_peak = {
    .name = "read_stream", .summary = "1 GiB read in 16-byte loads", .dtype = KB_F32, .math = KB_MATH_F32,
    .setup = stream_setup, .teardown = free_ctx, .launch = read_launch};
extern "C" const kb_variant kb_write_peak = {
    .name = "write_stream", .summary = "1 GiB written in 16-byte stores", .dtype = KB_F32, .math = KB_MATH_F32,
    .setup = stream_setup, .teardown = free_ctx, .launch = write_launch};

/* ---- bf16 GEMM through cuBLAS -------------------------------------------- */

typedef struct {
    cublasHandle_t handle;
    __nv_bfloat16 *a, *b, *c;
} gemm_ctx;

/* Random bf16 in [-1, 1] from a hash of the index: never time on zeros. */
__global__ void fill_bf16_kernel(__nv_bfloat16 *x, size_t n, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        x[i] = __float2bfloat16((h & 0xffffff) * (2.0f / 16777216.0f) - 1.0f);
    }
}

extern "C" double kb_gemm_flops(void) { return 2.0 * GEMM_N * GEMM_N * (double)GEMM_N; }

static void gemm_teardown(void *p)
{
    gemm_ctx *g = (gemm_ctx *)p;
    if (!g)
        return;
    cudaFree(g->a);
    cudaFree(g->b);
    cudaFree(g->c);
    if (g->handle)
        cublasDestroy(g->handle);
    free(g);
}

static const char *gemm_setup(const void *args, void **ctx)
{
    (void)args;
    size_t n = (size_t)GEMM_N * GEMM_N, bytes = n * sizeof(__nv_bfloat16);
    gemm_ctx *g = (gemm_ctx *)calloc(1, sizeof *g);
    *ctx = g;
    if (cudaMalloc(&g->a, bytes) != cudaSuccess || cudaMalloc(&g->b, bytes) != cudaSuccess ||
        cudaMalloc(&g->c, bytes) != cudaSuccess)
        return "out of device memory for the bf16 GEMM";
    if (cublasCreate(&g->handle) != CUBLAS_STATUS_SUCCESS)
        return "cublasCreate failed";
    fill_bf16_kernel<<<1024, 256>>>(g->a, n, 1u);
    fill_bf16_kernel<<<1024, 256>>>(g->b, n, 2u);
    return kb_cuda_status(cudaDeviceSynchronize());
}

static const char *gemm_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    gemm_ctx *g = (gemm_ctx *)ctx;
    const float one = 1.0f, zero = 0.0f;
    stamped_blocks = 0;
    cublasSetStream(g->handle, s);
    cublasStatus_t st = cublasGemmEx(g->handle, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N,
                                     &one, g->a, CUDA_R_16BF, GEMM_N, g->b, CUDA_R_16BF, GEMM_N,
                                     &zero, g->c, CUDA_R_16BF, GEMM_N, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? NULL : cublasGetStatusString(st);
}

extern "C" const kb_variant kb_bf16_gemm_peak = {
    .name = "cublas_bf16_gemm", .summary = "cuBLAS bf16 GEMM 8192^3", .dtype = KB_BF16,
    .math = KB_MATH_BF16, .needs = KB_NEEDS_CUBLAS, .setup = gemm_setup,
    .teardown = gemm_teardown, .launch = gemm_launch};

/* ---- bf16 wgmma from shared memory (Hopper) ------------------------------ */

#define WGMMA_WARPGROUPS 2  /* per block, one block per SM: as many as the matmul rungs issue from */
#define WGMMA_ITERS 2048    /* k-tiles of 64 per warpgroup: ~2 ms at 1980 MHz on 132 SMs */
#define WGMMA_A_BYTES (64 * 128)
#define WGMMA_B_BYTES (4 * 64 * 128)
#define WGMMA_SMEM (WGMMA_A_BYTES + WGMMA_B_BYTES + 1024)

/* Each warpgroup multiplies one 64x64 tile of A by one 64x256 tile of B
 * (the matmul rungs' 128-byte-swizzled layout), WGMMA_ITERS times into the
 * same accumulators: m64n256k16 back to back with one group in flight, and
 * no global traffic but the final sums, so only the tensor cores and their
 * shared-memory operand reads bound it.  FP8 is its e4m3 twin: tiles of
 * the same bytes, B K-major as fp8 MMAs take it, m64n256k32 (twice the
 * FLOPs an instruction). */
template <bool FP8>
__global__ void __launch_bounds__(128 * WGMMA_WARPGROUPS, 1) wgmma_peak_kernel(float *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr KbWgmmaType T = FP8 ? KbWgmmaType::e4m3 : KbWgmmaType::bf16;
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t base = (bf16_smem_addr(smem) + 1023) & ~1023u, a_s = base, b_s = base + WGMMA_A_BYTES;
    unsigned char *p = smem + (base - bf16_smem_addr(smem));
    /* Small finite values: a bf16 of -3/64..3/64 in each 16-bit half, or
     * an e4m3 of +-2^-6..2^-5; the sums stay far from overflow over all
     * the iterations. */
    for (int i = threadIdx.x; i < (WGMMA_A_BYTES + WGMMA_B_BYTES) / 4; i += blockDim.x) {
        if constexpr (FP8) {
            for (int j = 4 * i; j < 4 * i + 4; ++j)
                p[j] = (unsigned char)((j % 3 == 0 ? 0x80 : 0) | (0x08 + j % 16));
        } else {
            const __nv_bfloat16 lo = __float2bfloat16((i % 7 - 3) / 64.0f), hi = __float2bfloat16((i % 5 - 2) / 64.0f);
            __nv_bfloat162 v = {lo, hi};
            reinterpret_cast<__nv_bfloat162 *>(p)[i] = v;
        }
    }
    kb_fence_proxy_async(); /* the stores -> the MMAs' reads */
    __syncthreads();
    stamp_clocks(0);
    uint64_t da[4], db[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) { /* the k slices: 32 bytes along K of A, and of B when K-major */
        da[j] = kb_wgmma_desc(a_s + j * 32, 16, 1024);
        db[j] = FP8 ? kb_wgmma_desc(b_s + j * 32, 16, 1024) : kb_wgmma_desc(b_s + j * 2048, 64 * 128, 1024);
    }
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        d[i] = 0.0f;
    for (int it = 0; it < WGMMA_ITERS; ++it) {
        kb_fence_regs(d);
        kb_wgmma_fence();
#pragma unroll
        for (int j = 0; j < 4; ++j)
            kb_wgmma_ss<256, T, FP8 ? KbWgmmaB::k_major : KbWgmmaB::n_major>(d, da[j], db[j], 1);
        kb_wgmma_commit();
        kb_wgmma_wait<1>();
    }
    kb_wgmma_wait<0>();
    kb_fence_regs(d);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i)
        sum += d[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
    stamp_clocks(1);
#else
    (void)out;
    __trap(); /* setup's probe keeps this from running */
#endif
}

/* Sets *has to 1 when this GPU runs sm_90a code of this build. */
__global__ void wgmma_probe_kernel(int *has)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *has = 1;
#else
    *has = 0;
#endif
}

extern "C" double kb_wgmma_flops(void)
{
    return 2.0 * 64 * 256 * 64 * (double)WGMMA_ITERS * WGMMA_WARPGROUPS * sm_count();
}

extern "C" double kb_wgmma_fp8_flops(void) { return 2 * kb_wgmma_flops(); /* k32 slices of the same bytes */ }

/* The context is the output buffer; the probe's flag sits after it. */
static const char *wgmma_setup(const void *args, void **ctx)
{
    (void)args;
    int has = 0;
    const char *why = kb_sm90a_unsupported();
    if (why)
        return why;
    const size_t n = (size_t)sm_count() * 128 * WGMMA_WARPGROUPS;
    const char *e = kb_cuda_status(cudaMalloc(ctx, n * sizeof(float) + sizeof(int)));
    int *flag = (int *)((float *)*ctx + n);
    if (!e) {
        wgmma_probe_kernel<<<1, 1>>>(flag);
        e = kb_cuda_status(cudaMemcpy(&has, flag, sizeof has, cudaMemcpyDeviceToHost));
    }
    if (!e && !has)
        e = "this build has no sm_90a code (build with -Dgpu_arch=90)";
    return e;
}

static const char *wgmma_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    stamped_blocks = sm_count();
    wgmma_peak_kernel<false><<<sm_count(), 128 * WGMMA_WARPGROUPS, WGMMA_SMEM, s>>>((float *)ctx);
    KB_LAUNCHED();
}

static const char *wgmma_fp8_launch(const void *args, void *ctx, cudaStream_t s)
{
    (void)args;
    stamped_blocks = sm_count();
    wgmma_peak_kernel<true><<<sm_count(), 128 * WGMMA_WARPGROUPS, WGMMA_SMEM, s>>>((float *)ctx);
    KB_LAUNCHED();
}

extern "C" const kb_variant kb_wgmma_fp8_peak = {
    .name = "wgmma_fp8_peak", .summary = "e4m3 wgmma m64n256k32 from shared memory on every SM", .dtype = KB_E4M3,
    .math = KB_MATH_FP8, .setup = wgmma_setup, .teardown = free_ctx, .launch = wgmma_fp8_launch};

extern "C" const kb_variant kb_wgmma_peak = {
    .name = "wgmma_peak", .summary = "bf16 wgmma m64n256k16 from shared memory on every SM", .dtype = KB_BF16,
    .math = KB_MATH_BF16, .setup = wgmma_setup, .teardown = free_ctx, .launch = wgmma_launch};
