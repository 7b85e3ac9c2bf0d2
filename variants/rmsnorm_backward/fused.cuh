/* rmsnorm_backward's setup and launch for fused and fused_prefetch (PREFETCH: the
 * row loop with the next row's loads in flight), on the kernels of
 * kernels/norm_backward.cuh: dx, and dgamma from the blocks' partials. */
#ifndef KBENCH_RMSNORM_BACKWARD_FUSED_CUH
#define KBENCH_RMSNORM_BACKWARD_FUSED_CUH

#include "ops/rmsnorm_backward.h"
#include "kernels/norm_backward.cuh"

template <class T, bool PREFETCH>
static const char *fused_setup(const void *args, void **ctx)
{
    const kb_rmsnorm_backward_args *a = (const kb_rmsnorm_backward_args *)args;
    return kb_norm_backward_setup<false, T, PREFETCH>(a->R, a->C, ctx);
}

template <class T, bool PREFETCH>
static const char *fused_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_rmsnorm_backward_args *a = (const kb_rmsnorm_backward_args *)args;
    const KbNormGrad<T> g = {a->R, a->C,    (const T *)a->x, (const T *)a->gamma, (const T *)a->dy,
                             NULL, a->rstd, (T *)a->dx,      (T *)a->dgamma,      NULL};
    return kb_norm_backward_launch<false, PREFETCH>(g, (const KbNormBackwardPlan *)ctx, stream);
}

#endif
