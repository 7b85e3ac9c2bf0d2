/* layernorm_backward fused: one read of x and dy for all three gradients.
 * The row lives in registers as in layernorm welford (a group of
 * threads a row, float4 packs); each thread keeps its columns' share of
 * dgamma and dbeta in registers while its block walks rows grid-stride,
 * leaves them in a workspace at the end, and a second small kernel sums
 * the blocks' partials in a fixed order (kernels/norm_backward.cuh, shared
 * with rmsnorm_backward fused).  The row's two sums (of dy gamma and of
 * dy gamma xhat) share one block reduction.  Rows of up to 8192 columns.
 *
 * The bf16 form loads and stores bf16 (4 elements an 8-byte pack) and
 * keeps everything else in fp32: the same kernel over 6 bytes an element
 * instead of 12.  A sweep at a03df72 (docs/notes/backward.md): 1942 GB/s
 * at 65536x4096, 45.9% of 4236, 0.76x torch.compile: the same time as f32,
 * since a thread has half f32's bytes in flight.
 *
 * Builds on naive: a group of threads per row, coalesced 16-byte loads,
 * and dgamma and dbeta from the same read as dx instead of a second pass.
 * Prediction: ~85% of the copy ceiling at 65536x4096, against naive's 3.6%.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 4109
 * GB/s at 65536x4096 (0.784 ms), 96.9% of the run's 4239 GB/s memory
 * ceiling, 26.7x naive, 2.23x PyTorch eager and 1.18x torch.compile (0.928
 * ms); 2124 GB/s (50.1%) at 16384x768.  It was 3047 GB/s until a row's
 * loads were all issued before the first is used (the notes' run 10).
 * Gap to the limit: 3 points at 65536x4096; at 16384x768 a 71 us launch,
 * where the partials, the second kernel and the grid's tail weigh more. */
#include "variants/layernorm_backward/fused.cuh"

extern "C" const kb_variant layernorm_backward_fused[] = {
    {
        .name = "fused",
        .summary = "row in registers, dgamma's and dbeta's partials in registers then summed: one read",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<float, false>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<float, false>,
    },
    {
        .name = "fused",
        .summary = "row in registers, dgamma's and dbeta's partials in registers then summed: one read; bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<__nv_bfloat16, false>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<__nv_bfloat16, false>,
    },
    KB_VARIANT_END,
};
