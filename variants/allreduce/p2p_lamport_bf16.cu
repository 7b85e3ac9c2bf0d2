/* allreduce p2p_lamport_bf16: p2p_lamport (variants/allreduce/p2p_lamport.cu
 * says how) on bf16 storage: -0.0 in bf16 (0x8000) marks an empty element,
 * sums in fp32, rounded to bf16 once, in rank order on every GPU.
 * Prediction (2 H200): as p2p_lamport at the same bytes; 1.7x NCCL at
 * <= 1 MB.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 8 KB 4.3 us (1.63x nccl_bf16),
 * 128 KB 4.7 us (1.67x nccl_bf16), 1 MB 7.7 us (1.82x nccl_bf16), 8 MB 36.8 us
 * (1.27x nccl_bf16); larger messages SKIP.
 * Gap to the limit: about 51% of NVLink 4's ~450 GB/s a direction (NV18) at 8
 * MB; 4.3 us at 8 KB: a launch and one one-way NVLink trip; from 4 MB it falls
 * behind p2p_oneshot, likely for the extra passes (each GPU empties a buffer as
 * large as all its peers' messages, and pushes before it sums). */
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
