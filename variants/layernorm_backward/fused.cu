/* layernorm_backward fused: one read of x and dy for all three gradients.
 * The row lives in registers as in layernorm welford (a group of
 * threads a row, float4 packs); each thread keeps its columns' share of
 * dgamma and dbeta in registers while its block walks rows grid-stride,
 * leaves them in a workspace at the end, and a second small kernel sums
 * the blocks' partials in a fixed order (kernels/norm_backward.cuh, shared
 * with rmsnorm_backward fused).  The row's two sums (of dy gamma and of
 * dy gamma xhat) share one block reduction.  Rows of up to 8192 columns.
 *
 * Builds on naive: a group of threads per row, coalesced 16-byte loads,
 * and dgamma and dbeta from the same read as dx instead of a second pass.
 * Prediction: ~85% of the copy ceiling at 65536x4096, against naive's 3.6%.
 * Measured (run 3 of docs/notes/backward.md, H200, cold L2): 3,047 GB/s at
 * 65536x4096, 63.3% of the datasheet's 4814 GB/s, 20.5x naive, 1.63x
 * PyTorch eager; 40.0% at 16384x768.
 * Gap to the limit: 37 points at 65536x4096: one row a block in flight
 * and two blocks an SM (91 registers a thread); one reduction instead of
 * two for the row sums moved it by 0.9%, within the noise. */
#include "ops/layernorm_backward.h"
#include "kernels/norm_backward.cuh"

static const char *setup(const void *args, void **ctx)
{
    const kb_layernorm_backward_args *a = (const kb_layernorm_backward_args *)args;
    return kb_norm_backward_setup<true>(a->R, a->C, ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_layernorm_backward_args *a = (const kb_layernorm_backward_args *)args;
    const KbNormGrad g = {a->R, a->C, a->x, a->gamma, a->dy, a->mean, a->rstd, a->dx, a->dgamma, a->dbeta};
    return kb_norm_backward_launch<true>(g, (const KbNormBackwardPlan *)ctx, stream);
}

extern "C" const kb_variant layernorm_backward_fused[] = {
    {
        .name = "fused",
        .summary = "row in registers, dgamma's and dbeta's partials in registers then summed: one read",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = setup,
        .teardown = kb_norm_backward_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
