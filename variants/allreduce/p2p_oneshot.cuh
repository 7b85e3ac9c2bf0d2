/* allreduce p2p_oneshot in T (float or __nv_bfloat16): the code of
 * p2p_oneshot.cu and p2p_oneshot.cu, whose headers say why. */
#ifndef KBENCH_ALLREDUCE_P2P_ONESHOT_CUH
#define KBENCH_ALLREDUCE_P2P_ONESHOT_CUH

#include "kernels/p2p.cuh"

template <typename T>
__global__ void __launch_bounds__(KB_P2P_THREADS)
    allreduce_oneshot_kernel(kb_collective_args a, kb_p2p_sync s, unsigned epoch)
{
    const T *in[KB_MAX_RANKS];
#pragma unroll
    for (int p = 0; p < KB_MAX_RANKS; ++p)
        in[p] = (const T *)a.in[p];
    kb_p2p_barrier(s, epoch); /* every peer's kernel has started: its input is ready */
    /* Offsets are 0: every vector is aligned, and the tail is scalar. */
    kb_p2p_reduce((T *)a.out[s.rank], in, a.ranks, a.n, true);
    kb_p2p_barrier(s, epoch + 1); /* no peer still reads our input */
}

template <typename T>
static const char *allreduce_oneshot_setup(const void *args, void **ctx)
{
    return kb_p2p_setup(args, ctx, (const void *)allreduce_oneshot_kernel<T>);
}

template <typename T>
static const char *allreduce_oneshot_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_p2p_ctx *c = (kb_p2p_ctx *)ctx;
    const int grid = kb_p2p_grid(c, KB_CEIL_DIV(a->n, kb_vec_len<T>));
    return kb_p2p_launch(c, stream, 2, [&](kb_p2p_sync s, unsigned epoch, cudaStream_t st) {
        allreduce_oneshot_kernel<T><<<grid, KB_P2P_THREADS, 0, st>>>(*a, s, epoch);
    });
}

#endif
