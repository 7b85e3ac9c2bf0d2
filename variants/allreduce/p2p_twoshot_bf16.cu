/* allreduce p2p_twoshot_bf16: p2p_twoshot (variants/allreduce/p2p_twoshot.cu
 * says how) on bf16 storage: 8 elements a 16-byte vector, summed in fp32 and
 * rounded to bf16 once.  Half the bytes of f32 for the same N.
 * Measured: pending (needs --devices on 2+ GPUs). */
#include "variants/allreduce/p2p_twoshot.cuh"

extern "C" const kb_variant allreduce_p2p_twoshot_bf16 = {
    .name = "p2p_twoshot_bf16",
    .summary = "reduce-scatter then all-gather over peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allreduce_twoshot_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = allreduce_twoshot_launch<__nv_bfloat16>,
};
