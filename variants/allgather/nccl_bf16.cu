/* allgather nccl_bf16: the bf16 rows' baseline, ncclAllGather on
 * ncclBfloat16 (variants/allgather/nccl.cu says how).  Half the bytes of f32
 * for the same N.
 * Measured (results/h200-x2/kbench-20261123-202045.csv, 2 H200 over NVLink,
 * L2 warm): bf16 1 GB gathered 268 GB/s bus bandwidth, 2 MB 42.0 us, 16 KB
 * 27.0 us.
 * Gap to the limit: about 60% of NVLink 4's ~450 GB/s a direction (NV18);
 * below ~4 MB a ~20 us floor dominates (the harness's fork and join of the two
 * GPUs' streams through CUDA events, plus two launches). */
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
