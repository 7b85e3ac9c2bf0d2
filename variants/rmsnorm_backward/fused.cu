/* rmsnorm_backward fused: one read of x and dy for both gradients.  The
 * row lives in registers as in rmsnorm vectorized (a group of threads a
 * row, float4 packs); each thread keeps its columns' share of dgamma in
 * registers while its block walks rows grid-stride, leaves it in a
 * workspace at the end, and a second small kernel sums the blocks'
 * partials in a fixed order (kernels/norm_backward.cuh, shared with
 * layernorm_backward fused).  Rows of up to 8192 columns.
 *
 * The bf16 form loads and stores bf16 (4 elements an 8-byte pack) and
 * keeps everything else in fp32: the same kernel over 6 bytes an element
 * instead of 12.  A sweep at a03df72 (docs/notes/backward.md): 3026 GB/s
 * at 65536x4096, 71.4% of 4236, 1.06x torch.compile.
 *
 * Builds on naive: a group of threads per row, coalesced 16-byte loads, and
 * dgamma from the same read as dx instead of a second pass over x and dy.
 * Prediction: ~85% of the copy ceiling at 65536x4096 (12 bytes an element
 * moved, the partials some 0.3% more); lower at 16384x768, where the
 * partials are a larger share.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 4053
 * GB/s at 65536x4096 (0.795 ms), 95.6% of the run's 4239 GB/s memory
 * ceiling, 18.9x naive, 2.18x PyTorch eager and 1.16x torch.compile (0.925
 * ms); 2488 GB/s (58.7%) at 16384x768.  It was 3689 GB/s until a row's
 * loads were all issued before the first is used (the notes' run 10).
 * Gap to the limit: 4 points at 65536x4096; at 16384x768 a 61 us launch,
 * where the partials, the second kernel and the grid's tail weigh more. */
#include "variants/rmsnorm_backward/fused.cuh"

extern "C" const kb_variant rmsnorm_backward_fused[] = {
    {
        .name = "fused",
        .summary = "row in registers, dgamma's partials in registers then summed: one read of x and dy",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<float, false>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<float, false>,
    },
    {
        .name = "fused",
        .summary = "row in registers, dgamma's partials in registers then summed: one read of x and dy; bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<__nv_bfloat16, false>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<__nv_bfloat16, false>,
    },
    KB_VARIANT_END,
};
