/* allgather nccl_bf16: the bf16 rows' baseline, ncclAllGather on
 * ncclBfloat16 (variants/allgather/nccl.cu says how).  Half the bytes of f32
 * for the same N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 1 GB gathered 270 GB/s bus
 * bandwidth, 2 MB 16.5 us, 16 KB 6.5 us.
 * Gap to the limit: about 60% of NVLink 4's ~450 GB/s a direction (NV18) at 1
 * GB; 6.5 us at 16 KB: the latency of its LL protocol. */
#include "kernels/collective_nccl.h"

extern "C" const kb_variant allgather_nccl_bf16 = {
    .name = "nccl_bf16",
    .summary = "ncclAllGather in bf16, one call per GPU in a group (bf16 baseline)",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_NCCL,
    .min_cc = 80,
    .setup = kb_nccl_setup,
    .teardown = kb_nccl_teardown,
    .launch = kb_nccl_allgather<KB_BF16>,
};
