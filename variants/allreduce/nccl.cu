/* allreduce nccl: the baseline.  ncclAllReduce on every rank in one group,
 * each on its GPU's stream (kernels/collective_nccl.h).  NCCL picks ring or
 * tree and its protocol (LL, LL128, Simple) by size; NVLink SHARP stays off
 * (kernels/nccl_comm.c).  Builds on nothing: what every framework calls.
 * Prediction (2 H200, NVLink 4, 450 GB/s each way): a latency floor of
 * ~10 us below 1 MB, busbw ~350-380 GB/s from 256 MB, as nccl-tests shows.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB 341 GB/s bus bandwidth, 2
 * MB 28.0 us, 16 KB 7.1 us.
 * Gap to the limit: about 76% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 7.1 us at 16 KB: the latency of its LL protocol.
 * The bf16 form: the bf16 rows' baseline: ncclAllReduce on ncclBfloat16.  NCCL
 * adds in fp32 but stores bf16 between the hops of its ring: up to R - 1
 * roundings, where our own kernels round once.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB 330 GB/s bus bandwidth, 1 MB
 * 14.1 us, 8 KB 7.0 us.  Gap to the limit: about 73% of NVLink 4's ~450 GB/s a
 * direction (NV18) at 1 GB; 7.0 us at 8 KB: the latency of its LL protocol. */
#include "kernels/collective_nccl.h"

extern "C" const kb_variant allreduce_nccl[] = {
    {
        .name = "nccl",
        .summary = "ncclAllReduce, one call per GPU in a group (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_NCCL,
        .setup = kb_nccl_setup,
        .teardown = kb_nccl_teardown,
        .launch = kb_nccl_allreduce<KB_F32>,
    },
    {
        .name = "nccl",
        .summary = "ncclAllReduce in bf16, one call per GPU in a group (baseline)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_NCCL,
        .min_cc = 80,
        .setup = kb_nccl_setup,
        .teardown = kb_nccl_teardown,
        .launch = kb_nccl_allreduce<KB_BF16>,
    },
    KB_VARIANT_END,
};
