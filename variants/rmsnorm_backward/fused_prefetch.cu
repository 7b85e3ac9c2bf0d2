/* rmsnorm_backward fused_prefetch: fused with the next row's loads in
 * flight while this row is reduced and stored, as layernorm_backward's
 * fused_prefetch (its header gives the reasoning).  fused's bf16 form ran
 * 3026 GB/s at 65536x4096, 71.4% of the ceiling, 1.06x torch.compile: it
 * keeps fewer registers than layernorm's (no dbeta), so more rows are
 * resident and it waited less.
 *
 * Rows of over 4096 columns (2048 when C is not a multiple of 4) run in
 * blocks of 512 or 1024 threads, whose registers hold no second row: they
 * take fused's loop.
 *
 * Builds on fused: the same row work and partials, the loads a row ahead.
 * Prediction: bf16 from 71% to some 85-90% of the ceiling at 65536x4096;
 * f32 within 2% of fused's 96.2%.
 * Measured: not yet on a GPU (written when no machine was lent).
 * Gap to the limit: as fused's, once the loads no longer wait. */
#include "variants/rmsnorm_backward/fused.cuh"

extern "C" const kb_variant rmsnorm_backward_fused_prefetch[] = {
    {
        .name = "fused_prefetch",
        .summary = "fused with the next row's loads in flight during this row's work",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<float, true>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<float, true>,
    },
    {
        .name = "fused_prefetch",
        .summary = "fused with the next row's loads in flight during this row's work; bf16",
        .dtype = KB_BF16,
        .math = KB_MATH_F32,
        .unsupported = kb_norm_backward_unsupported,
        .setup = fused_setup<__nv_bfloat16, true>,
        .teardown = kb_norm_backward_teardown,
        .launch = fused_launch<__nv_bfloat16, true>,
    },
    KB_VARIANT_END,
};
