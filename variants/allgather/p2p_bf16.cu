/* allgather p2p_bf16: p2p (variants/allgather/p2p.cu says how) on bf16
 * storage: 8 elements a 16-byte vector, copied as they are.  Half the bytes
 * of f32 for the same N.
 * Measured: pending (needs --devices on 2+ GPUs). */
#include "variants/allgather/p2p.cuh"

extern "C" const kb_variant allgather_p2p_bf16 = {
    .name = "p2p_bf16",
    .summary = "every GPU copies each peer's input from peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allgather_p2p_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = allgather_p2p_launch<__nv_bfloat16>,
};
