/* allgather nccl: the baseline.  ncclAllGather on every rank in one group,
 * each on its GPU's stream (kernels/collective_nccl.h); NCCL's ring, its
 * protocol picked by size.  Builds on nothing: what every framework calls.
 * Prediction (2 H200, NVLink 4): busbw ~350-380 GB/s from 256 MB, a
 * latency floor of ~10 us below 1 MB.
 * Measured (results/h200-x2/kbench-20261123-202045.csv, 2 H200 over NVLink,
 * L2 warm): f32 2 GB gathered 289 GB/s bus bandwidth, 4 MB 46.5 us, 32 KB
 * 26.8 us.
 * Gap to the limit: about 64% of NVLink 4's ~450 GB/s a direction (NV18);
 * below ~4 MB a ~20 us floor dominates (the harness's fork and join of the two
 * GPUs' streams through CUDA events, plus two launches). */
#include "kernels/collective_nccl.h"

extern "C" const kb_variant allgather_nccl = {
    .name = "nccl",
    .summary = "ncclAllGather, one call per GPU in a group (baseline)",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .needs = KB_NEEDS_NCCL,
    .setup = kb_nccl_setup,
    .teardown = kb_nccl_teardown,
    .launch = kb_nccl_allgather<KB_F32>,
};
