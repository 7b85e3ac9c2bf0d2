/* reduce_scatter p2p in T (float or __nv_bfloat16): the code of p2p.cu and
 * p2p.cu, whose headers say why. */
#ifndef KBENCH_REDUCE_SCATTER_P2P_CUH
#define KBENCH_REDUCE_SCATTER_P2P_CUH

#include "kernels/p2p.cuh"

template <typename T>
__global__ void __launch_bounds__(KB_P2P_THREADS)
    reduce_scatter_p2p_kernel(kb_collective_args a, kb_p2p_sync s, unsigned epoch)
{
    const int r = s.rank;
    const T *in[KB_MAX_RANKS];
#pragma unroll
    for (int p = 0; p < KB_MAX_RANKS; ++p)
        in[p] = p < a.ranks ? (const T *)a.in[p] + r * a.n : nullptr;
    /* Our block starts at r * N: on 16 bytes for every r only when N is a
     * whole number of vectors. */
    const bool vec = a.n % kb_vec_len<T> == 0;
    kb_p2p_barrier(s, epoch); /* every peer's kernel has started: its input is ready */
    kb_p2p_reduce((T *)a.out[r], in, a.ranks, a.n, vec);
    kb_p2p_barrier(s, epoch + 1); /* no peer still reads our input */
}

template <typename T>
static const char *reduce_scatter_p2p_setup(const void *args, void **ctx)
{
    return kb_p2p_setup(args, ctx, (const void *)reduce_scatter_p2p_kernel<T>);
}

template <typename T>
static const char *reduce_scatter_p2p_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_p2p_ctx *c = (kb_p2p_ctx *)ctx;
    const int grid = kb_p2p_grid(c, KB_CEIL_DIV(a->n, kb_vec_len<T>));
    return kb_p2p_launch(c, stream, 2, [&](kb_p2p_sync s, unsigned epoch, cudaStream_t st) {
        reduce_scatter_p2p_kernel<T><<<grid, KB_P2P_THREADS, 0, st>>>(*a, s, epoch);
    });
}

#endif
