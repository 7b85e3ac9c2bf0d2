/* allreduce p2p_lamport: p2p_oneshot without its barriers.  Each GPU
 * pushes its input into a receive slot on every peer, then sums its own
 * slots as the elements arrive: an empty element holds -0.0, which no sent
 * element does, so the data is its own flag (a Lamport-style buffer, as
 * TensorRT-LLM's one-shot all-reduce uses).  Three buffers a GPU, used in
 * turn, so each launch empties the one before last and nothing is reset
 * between launches (p2p_lamport.cuh says why three suffice).
 * Builds on p2p_oneshot: the same bytes over NVLink (pushed, not pulled),
 * but no entry or exit barrier, so a launch costs one one-way NVLink trip
 * instead of two round trips.  Messages up to 16 MB (three copies of every
 * peer's message a GPU); larger rows SKIP, where p2p_oneshot already runs
 * at the link's speed.
 * Prediction (2 H200): ~4 us at 8 KB against NCCL's 7.0 and p2p_oneshot's
 * 7.7 (1.7x NCCL), ~8 us at 1 MB against NCCL's 14 (1.7x); level with
 * p2p_oneshot from 4 MB.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 16 KB 4.1 us (1.73x nccl), 256
 * KB 4.9 us (1.79x nccl), 2 MB 11.2 us (2.51x nccl), 16 MB 77.2 us (1.01x
 * nccl); larger messages SKIP.
 * Gap to the limit: about 48% of NVLink 4's ~450 GB/s a direction (NV18) at 16
 * MB; 4.1 us at 16 KB: a launch and one one-way NVLink trip; from 4 MB it falls
 * behind p2p_oneshot, likely for the extra passes (each GPU empties a buffer as
 * large as all its peers' messages, and pushes before it sums).
 * The bf16 form: -0.0 in bf16 (0x8000) marks an empty element, sums in fp32,
 * rounded once, in rank order on every GPU.  Measured (same file): 8 KB 4.3 us
 * (1.63x nccl), 128 KB 4.7 us (1.67x), 1 MB 7.7 us (1.82x), 8 MB 36.8 us
 * (1.27x). */
#include "variants/allreduce/p2p_lamport.cuh"

extern "C" const kb_variant allreduce_p2p_lamport[] = {
    {
        .name = "p2p_lamport",
        .summary = "each GPU pushes its input to every peer; -0.0 marks elements not yet arrived, no barriers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .unsupported = allreduce_lamport_unsupported<float>,
        .setup = allreduce_lamport_setup<float>,
        .teardown = allreduce_lamport_teardown,
        .launch = allreduce_lamport_launch<float>,
    },
    {
        .name = "p2p_lamport",
        .summary = "each GPU pushes its input to every peer; -0.0 marks elements not yet arrived, no barriers",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .unsupported = allreduce_lamport_unsupported<__nv_bfloat16>,
        .setup = allreduce_lamport_setup<__nv_bfloat16>,
        .teardown = allreduce_lamport_teardown,
        .launch = allreduce_lamport_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
