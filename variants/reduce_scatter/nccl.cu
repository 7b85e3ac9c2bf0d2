/* reduce_scatter nccl: the baseline.  ncclReduceScatter on every rank in
 * one group, each on its GPU's stream (kernels/collective_nccl.h); NCCL's
 * ring, its protocol picked by size.  Builds on nothing: what every
 * framework calls (ZeRO's and FSDP's gradient step).
 * Prediction (2 H200, NVLink 4): busbw ~350-380 GB/s from 256 MB, a
 * latency floor of ~10 us below 1 MB.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB input 285 GB/s bus
 * bandwidth, 4 MB 23.3 us, 32 KB 6.3 us.
 * Gap to the limit: about 63% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 6.3 us at 32 KB: the latency of its LL protocol.
 * The bf16 form: the bf16 rows' baseline: ncclReduceScatter on ncclBfloat16. 
 * NCCL adds in fp32 but stores bf16 between the hops of its ring: up to R - 1
 * roundings, where our own kernels round once.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB input 267 GB/s bus bandwidth, 2
 * MB 15.0 us, 16 KB 6.2 us.  Gap to the limit: about 59% of NVLink 4's ~450
 * GB/s a direction (NV18) at 1 GB; 6.2 us at 16 KB: the latency of its LL
 * protocol. */
#include "kernels/collective_nccl.h"

extern "C" const kb_variant reduce_scatter_nccl[] = {
    {
        .name = "nccl",
        .summary = "ncclReduceScatter, one call per GPU in a group (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_NCCL,
        .setup = kb_nccl_setup,
        .teardown = kb_nccl_teardown,
        .launch = kb_nccl_reduce_scatter<KB_F32>,
    },
    {
        .name = "nccl",
        .summary = "ncclReduceScatter in bf16, one call per GPU in a group (baseline)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_NCCL,
        .min_cc = 80,
        .setup = kb_nccl_setup,
        .teardown = kb_nccl_teardown,
        .launch = kb_nccl_reduce_scatter<KB_BF16>,
    },
    KB_VARIANT_END,
};
