/* allgather nccl: the baseline.  ncclAllGather on every rank in one group,
 * each on its GPU's stream (kernels/collective_nccl.h); NCCL's ring, its
 * protocol picked by size.  Builds on nothing: what every framework calls.
 * Prediction (2 H200, NVLink 4): busbw ~350-380 GB/s from 256 MB, a
 * latency floor of ~10 us below 1 MB.
 * Measured: pending (needs --devices on 2+ GPUs). */
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
