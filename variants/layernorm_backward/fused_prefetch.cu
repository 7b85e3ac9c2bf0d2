/* layernorm_backward fused_prefetch: fused with the next row's loads in
 * flight while this row is reduced and stored.  fused's bf16 form took the
 * same 0.78 ms as its f32 form at 65536x4096 for half the bytes (45.9% of
 * the memory ceiling, 0.76x torch.compile): its rows wait on their loads,
 * and a thread has one row's packs of x and dy in flight, 64 bytes in bf16
 * against f32's 128, at the same occupancy (the fp32 values and the column
 * partials set the registers).  Here each thread loads its next row's
 * packs as stored (a bf16 pack of 4 in 2 registers) before it widens and
 * works on the current one, so two rows' loads are outstanding
 * (kernels/norm_backward.cuh's kb_norm_backward_rows_prefetched).
 *
 * Rows of over 4096 columns (2048 when C is not a multiple of 4) run in
 * blocks of 512 or 1024 threads, whose registers hold no second row: they
 * take fused's loop.
 *
 * Builds on fused: the same row work and partials, the loads a row ahead.
 * Prediction: bf16 from 46% to some 85-90% of the ceiling at 65536x4096;
 * f32 within 2% of fused's 96.9% (32 more registers a thread).
 * Measured: not yet on a GPU (written when no machine was lent).
 * Gap to the limit: as fused's, once the loads no longer wait. */
#include "variants/layernorm_backward/fused.cuh"

extern "C" const kb_variant layernorm_backward_fused_prefetch[] = {
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
