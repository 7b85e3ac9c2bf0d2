/* reduce_scatter p2p_bf16: p2p (variants/reduce_scatter/p2p.cu says how) on
 * bf16 storage: 8 elements a 16-byte vector, summed in fp32 and rounded to
 * bf16 once.  Half the bytes of f32 for the same N.
 * Measured: pending (needs --devices on 2+ GPUs). */
#include "variants/reduce_scatter/p2p.cuh"

extern "C" const kb_variant reduce_scatter_p2p_bf16 = {
    .name = "p2p_bf16",
    .summary = "every GPU sums its block of all inputs over peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = reduce_scatter_p2p_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = reduce_scatter_p2p_launch<__nv_bfloat16>,
};
