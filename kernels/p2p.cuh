/* What the collectives' own peer-to-peer kernels share: a barrier between
 * the GPUs through flags in device memory, 16-byte vector sums and copies
 * in f32 or bf16 (fp32 accumulation, one rounding), and the host side that
 * allocates the flags and launches one kernel per GPU.
 *
 * Every GPU reads its peers' buffers directly (kb_enable_peers), so no
 * GPU may start reading before its peers' kernels have started (their
 * inputs are then ready) or return while a peer still reads its buffers.
 * Block b of each GPU meets block b of every other: the grids are equal and
 * at most one block per SM, so every block is resident and none waits on a
 * block that cannot start.  Each launch takes fresh epochs from a counter
 * that only grows, so the flags never need resetting. */
#ifndef KBENCH_P2P_CUH
#define KBENCH_P2P_CUH

#include <climits>
#include <cstdlib>
#include <cuda_bf16.h>
#include "ops/collective.h"
#include "kernels/cuda_util.h"

#define KB_P2P_THREADS 512
/* A barrier that waits this long has lost a peer (its launch failed): trap,
 * which the harness reports, rather than hang the run. */
#define KB_P2P_TIMEOUT_NS 10000000000ull

/* flags[p] lives on GPU p: slot b * ranks + q holds the last epoch that
 * rank q's block b reached.  `rank` is the GPU the kernel runs on. */
typedef struct {
    unsigned *flags[KB_MAX_RANKS];
    int rank, ranks;
} kb_p2p_sync;

__device__ __forceinline__ void kb_store_release_sys(unsigned *p, unsigned v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned kb_load_acquire_sys(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Block b waits for block b of every peer to reach `epoch`.  The first
 * __syncthreads orders the whole block's work before the release stores; the
 * acquire loads then the second one order every peer's work before the rest
 * of the block.  A peer may already be one barrier further, hence >=. */
__device__ __forceinline__ void kb_p2p_barrier(const kb_p2p_sync &s, unsigned epoch)
{
    __syncthreads();
    const int peer = threadIdx.x;
    if (peer < s.ranks && peer != s.rank) {
        kb_store_release_sys(s.flags[peer] + blockIdx.x * s.ranks + s.rank, epoch);
        const unsigned *arrived = s.flags[s.rank] + blockIdx.x * s.ranks + peer;
        const unsigned long long t0 = kb_globaltimer_ns();
        while ((int)(kb_load_acquire_sys(arrived) - epoch) < 0)
            if (kb_globaltimer_ns() - t0 > KB_P2P_TIMEOUT_NS)
                __trap();
    }
    __syncthreads();
}

__device__ __forceinline__ float kb_to_f32(float x) { return x; }
__device__ __forceinline__ float kb_to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T kb_from_f32(float x);
template <> __device__ __forceinline__ float kb_from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 kb_from_f32<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}

/* Elements of T in one 16-byte vector. */
template <typename T> constexpr int kb_vec_len = 16 / sizeof(T);

/* 16 bytes of T at p, widened to fp32 and added into acc. */
template <typename T>
__device__ __forceinline__ void kb_vec_add(float (&acc)[kb_vec_len<T>], uint4 raw)
{
    const T *x = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int k = 0; k < kb_vec_len<T>; ++k)
        acc[k] += kb_to_f32(x[k]);
}

/* acc rounded to T, stored as one 16-byte vector at p. */
template <typename T>
__device__ __forceinline__ void kb_vec_store(T *p, const float (&acc)[kb_vec_len<T>])
{
    alignas(16) T y[kb_vec_len<T>];
#pragma unroll
    for (int k = 0; k < kb_vec_len<T>; ++k)
        y[k] = kb_from_f32<T>(acc[k]);
    *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(y);
}

/* This thread's share of a range of n elements: which 16-byte vectors and
 * which elements after them.  Vector i goes to global thread i mod the
 * grid, the few elements past the last whole vector to block 0: a block
 * then touches the same elements of a range whatever kernel phase or GPU
 * walks it, which is what lets per-block barriers stand for the grid. */
struct kb_p2p_share {
    int64_t first, stride;
    __device__ kb_p2p_share()
        : first((int64_t)blockIdx.x * blockDim.x + threadIdx.x), stride((int64_t)gridDim.x * blockDim.x)
    {
    }
};

/* dst[i] = sum over p < ranks of src[p][i] for i < n, this thread's share.
 * In 16-byte vectors when `vec` (every pointer then 16-byte aligned: the
 * caller's offsets are multiples of kb_vec_len), all ranks' loads issued
 * before the adds; in fp32, ranks in order, so every GPU rounds alike. */
template <typename T>
__device__ __forceinline__ void kb_p2p_reduce(T *dst, const T *const (&src)[KB_MAX_RANKS], int ranks,
                                              int64_t n, bool vec)
{
    constexpr int V = kb_vec_len<T>;
    const kb_p2p_share sh;
    const int64_t nv = vec ? n / V : 0;
    for (int64_t i = sh.first; i < nv; i += sh.stride) {
        uint4 raw[KB_MAX_RANKS];
        float acc[V] = {};
#pragma unroll
        for (int p = 0; p < KB_MAX_RANKS; ++p)
            if (p < ranks)
                raw[p] = *reinterpret_cast<const uint4 *>(src[p] + i * V);
#pragma unroll
        for (int p = 0; p < KB_MAX_RANKS; ++p)
            if (p < ranks)
                kb_vec_add<T>(acc, raw[p]);
        kb_vec_store(dst + i * V, acc);
    }
    for (int64_t i = nv * V + sh.first; i < n; i += sh.stride) {
        float acc = 0;
        for (int p = 0; p < ranks; ++p)
            acc += kb_to_f32(src[p][i]);
        dst[i] = kb_from_f32<T>(acc);
    }
}

/* dst[i] = src[i] for i < n, this thread's share, vectors as above. */
template <typename T>
__device__ __forceinline__ void kb_p2p_copy(T *dst, const T *src, int64_t n, bool vec)
{
    constexpr int V = kb_vec_len<T>;
    const kb_p2p_share sh;
    const int64_t nv = vec ? n / V : 0;
    for (int64_t i = sh.first; i < nv; i += sh.stride)
        reinterpret_cast<uint4 *>(dst)[i] = reinterpret_cast<const uint4 *>(src)[i];
    for (int64_t i = nv * V + sh.first; i < n; i += sh.stride)
        dst[i] = src[i];
}

/* ---- host side ---- */

/* A p2p variant's state, made in setup and freed in teardown. */
typedef struct {
    kb_ranks ranks;
    kb_p2p_sync sync;  /* sync.rank set per launch */
    unsigned epoch;    /* the last barrier's, over every launch so far */
    int max_blocks;    /* the fewest SMs among the run's GPUs */
} kb_p2p_ctx;

static inline void kb_p2p_teardown(void *ctx)
{
    kb_p2p_ctx *c = (kb_p2p_ctx *)ctx;
    for (int r = 0; r < c->ranks.n; ++r)
        if (c->sync.flags[r]) {
            cudaSetDevice(c->ranks.device[r]);
            cudaFree(c->sync.flags[r]);
        }
    kb_ranks_close(&c->ranks);
    free(c);
}

/* Zeroed flags for every block on each GPU, and `kernel` loaded there now:
 * loaded lazily at its first launch, it could wait for a GPU that is
 * already spinning in the barrier. */
static inline const char *kb_p2p_open(kb_p2p_ctx *c, const kb_collective_args *a, const void *kernel)
{
    const char *why = kb_ranks_open(&c->ranks);
    if (why)
        return why;
    if (c->ranks.n != a->ranks)
        return "the shape's ranks differ from the run's GPUs";
    if ((why = kb_enable_peers()))
        return why;
    c->max_blocks = INT_MAX;
    for (int r = 0; r < a->ranks; ++r) {
        int sms = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, c->ranks.device[r]);
        c->max_blocks = sms < c->max_blocks ? sms : c->max_blocks;
    }
    c->sync.ranks = a->ranks;
    size_t bytes = (size_t)c->max_blocks * a->ranks * sizeof(unsigned);
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < a->ranks && e == cudaSuccess; ++r) {
        cudaFuncAttributes attr;
        e = cudaSetDevice(c->ranks.device[r]);
        if (e == cudaSuccess)
            e = cudaMalloc(&c->sync.flags[r], bytes);
        if (e == cudaSuccess)
            e = cudaMemset(c->sync.flags[r], 0, bytes);
        if (e == cudaSuccess)
            e = cudaFuncGetAttributes(&attr, kernel);
        if (e == cudaSuccess) /* the memset ran on the legacy stream, which ours do not wait for */
            e = cudaDeviceSynchronize();
    }
    cudaSetDevice(c->ranks.device[0]);
    return kb_cuda_status(e);
}

/* A variant's setup: its state in *ctx, or why not (then nothing is kept). */
static inline const char *kb_p2p_setup(const void *args, void **ctx, const void *kernel)
{
    kb_p2p_ctx *c = (kb_p2p_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *why = kb_p2p_open(c, (const kb_collective_args *)args, kernel);
    if (why) {
        kb_p2p_teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

/* Blocks for `items` vectors per block's range: as many as fill them, at
 * most one per SM of the smallest GPU, the same on every GPU. */
static inline int kb_p2p_grid(const kb_p2p_ctx *c, int64_t items)
{
    int64_t blocks = KB_CEIL_DIV(items, KB_P2P_THREADS);
    return blocks < 1 ? 1 : blocks > c->max_blocks ? c->max_blocks : (int)blocks;
}

/* One kernel per GPU, forked from and joined back into `stream`:
 * launch_rank(sync, first_epoch, stream) launches rank sync.rank's, whose
 * kernel passes `barriers` barriers with epochs first_epoch, first_epoch + 1,
 * and so on.  Joined even after a failed launch, so that the harness waits
 * for (and sees the trap of) the kernels that did start. */
template <typename F>
static const char *kb_p2p_launch(kb_p2p_ctx *c, cudaStream_t stream, int barriers, F launch_rank)
{
    const char *e = kb_ranks_fork(&c->ranks, stream);
    const unsigned first_epoch = c->epoch + 1;
    for (int r = 0; r < c->ranks.n && !e; ++r) {
        kb_p2p_sync s = c->sync;
        s.rank = r;
        e = kb_cuda_status(cudaSetDevice(c->ranks.device[r]));
        if (!e) {
            launch_rank(s, first_epoch, c->ranks.stream[r]);
            e = kb_cuda_status(cudaGetLastError());
        }
    }
    c->epoch += barriers;
    const char *joined = kb_ranks_join(&c->ranks, stream);
    return e ? e : joined;
}

#endif
