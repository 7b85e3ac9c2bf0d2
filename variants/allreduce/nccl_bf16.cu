/* allreduce nccl_bf16: the bf16 rows' baseline, ncclAllReduce on
 * ncclBfloat16 (variants/allreduce/nccl.cu says how).  NCCL adds in fp32 but
 * stores bf16 between the hops of its ring: up to R - 1 roundings, where our
 * own kernels round once.
 * Measured: pending (needs --devices on 2+ GPUs). */
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
