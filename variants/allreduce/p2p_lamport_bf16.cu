/* allreduce p2p_lamport_bf16: p2p_lamport (variants/allreduce/p2p_lamport.cu
 * says how) on bf16 storage: -0.0 in bf16 (0x8000) marks an empty element,
 * sums in fp32, rounded to bf16 once, in rank order on every GPU.
 * Prediction (2 H200): as p2p_lamport at the same bytes; 1.7x NCCL at
 * <= 1 MB. */
#include "variants/allreduce/p2p_lamport.cuh"

extern "C" const kb_variant allreduce_p2p_lamport_bf16 = {
    .name = "p2p_lamport_bf16",
    .summary = "each GPU pushes its input to every peer; -0.0 marks elements not yet arrived, no barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .unsupported = allreduce_lamport_unsupported<__nv_bfloat16>,
    .setup = allreduce_lamport_setup<__nv_bfloat16>,
    .teardown = allreduce_lamport_teardown,
    .launch = allreduce_lamport_launch<__nv_bfloat16>,
};
