/* allreduce p2p_twoshot in T (float or __nv_bfloat16): the code of
 * p2p_twoshot.cu and p2p_twoshot.cu, whose headers say why. */
#ifndef KBENCH_ALLREDUCE_P2P_TWOSHOT_CUH
#define KBENCH_ALLREDUCE_P2P_TWOSHOT_CUH

#include "kernels/p2p.cuh"

/* Chunk p of N: [p * chunk, (p + 1) * chunk) cut at N, maybe empty. */
__device__ __forceinline__ int64_t twoshot_begin(int64_t n, int64_t chunk, int p)
{
    return p * chunk < n ? p * chunk : n;
}

template <typename T>
__global__ void __launch_bounds__(KB_P2P_THREADS)
    allreduce_twoshot_kernel(kb_collective_args a, kb_p2p_sync s, unsigned epoch, int64_t chunk)
{
    const int r = s.rank;
    T *out = (T *)a.out[r];
    const int64_t lo = twoshot_begin(a.n, chunk, r), len = twoshot_begin(a.n, chunk, r + 1) - lo;
    const T *in[KB_MAX_RANKS];
#pragma unroll
    for (int p = 0; p < KB_MAX_RANKS; ++p)
        in[p] = p < a.ranks ? (const T *)a.in[p] + lo : nullptr;
    kb_p2p_barrier(s, epoch); /* every peer's kernel has started: its input is ready */
    /* Reduce-scatter: our chunk's sum, from every rank's input. */
    kb_p2p_reduce(out + lo, in, a.ranks, len, true);
    kb_p2p_barrier(s, epoch + 1); /* every chunk's sum is in its owner's output */
    /* All-gather: chunk p from rank p's output, starting with the next rank
     * so that the GPUs do not all read the same peer at once. */
    for (int k = 1; k < a.ranks; ++k) {
        const int p = (r + k) % a.ranks;
        const int64_t plo = twoshot_begin(a.n, chunk, p), plen = twoshot_begin(a.n, chunk, p + 1) - plo;
        kb_p2p_copy(out + plo, (const T *)a.out[p] + plo, plen, true);
    }
    kb_p2p_barrier(s, epoch + 2); /* no peer still reads our input or our chunk */
}

template <typename T>
static const char *allreduce_twoshot_setup(const void *args, void **ctx)
{
    return kb_p2p_setup(args, ctx, (const void *)allreduce_twoshot_kernel<T>);
}

template <typename T>
static const char *allreduce_twoshot_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_p2p_ctx *c = (kb_p2p_ctx *)ctx;
    /* Chunks of whole vectors, so every chunk starts on 16 bytes; the last
     * non-empty one ends with N's scalar tail. */
    const int64_t vectors = KB_CEIL_DIV(KB_CEIL_DIV(a->n, kb_vec_len<T>), a->ranks);
    const int64_t chunk = vectors * kb_vec_len<T>;
    const int grid = kb_p2p_grid(c, vectors);
    return kb_p2p_launch(c, stream, 3, [&](kb_p2p_sync s, unsigned epoch, cudaStream_t st) {
        allreduce_twoshot_kernel<T><<<grid, KB_P2P_THREADS, 0, st>>>(*a, s, epoch, chunk);
    });
}

#endif
