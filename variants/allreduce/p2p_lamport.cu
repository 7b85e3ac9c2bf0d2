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
 * p2p_oneshot from 4 MB. */
#include "variants/allreduce/p2p_lamport.cuh"

extern "C" const kb_variant allreduce_p2p_lamport = {
    .name = "p2p_lamport",
    .summary = "each GPU pushes its input to every peer; -0.0 marks elements not yet arrived, no barriers",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .unsupported = allreduce_lamport_unsupported<float>,
    .setup = allreduce_lamport_setup<float>,
    .teardown = allreduce_lamport_teardown,
    .launch = allreduce_lamport_launch<float>,
};
