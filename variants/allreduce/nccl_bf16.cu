/* allreduce nccl_bf16: the bf16 rows' baseline, ncclAllReduce on
 * ncclBfloat16 (variants/allreduce/nccl.cu says how).  NCCL adds in fp32 but
 * stores bf16 between the hops of its ring: up to R - 1 roundings, where our
 * own kernels round once.
 * Measured (results/h200-x2/kbench-20261123-202045.csv, 2 H200 over NVLink,
 * L2 warm): bf16 1 GB 328 GB/s bus bandwidth, 1 MB 35.3 us, 8 KB 27.9 us.
 * Gap to the limit: about 73% of NVLink 4's ~450 GB/s a direction (NV18);
 * below ~4 MB a ~20 us floor dominates (the harness's fork and join of the two
 * GPUs' streams through CUDA events, plus two launches). */
#include "kernels/collective_nccl.h"

extern "C" const kb_variant allreduce_nccl_bf16 = {
    .name = "nccl_bf16",
    .summary = "ncclAllReduce in bf16, one call per GPU in a group (bf16 baseline)",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_NCCL,
    .min_cc = 80,
    .setup = kb_nccl_setup,
    .teardown = kb_nccl_teardown,
    .launch = kb_nccl_allreduce<KB_BF16>,
};
