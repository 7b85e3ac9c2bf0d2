/* allgather p2p: every GPU copies each rank's input straight from peer
 * memory into that rank's block of its own output (a pull, 16-byte vectors
 * when N is a whole number of them, else elements), its own block first and
 * then the next ranks' so that the GPUs do not all read one peer at once.
 * Flag barriers per block at entry and exit, in device memory
 * (kernels/p2p.cuh).  Builds on allreduce p2p_twoshot's second phase.
 * Prediction: each GPU pulls (R - 1) N, the minimum, in one step: near
 * NCCL's busbw at large N, ahead of its R - 1 ring steps at small N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB gathered 277 GB/s bus
 * bandwidth (0.98x nccl), 4 MB 1.68x, 32 KB 0.86x.
 * Gap to the limit: about 62% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 7.8 us at 32 KB: a launch and two flag-barrier round trips over NVLink.
 * The bf16 form, on bf16 storage: 8 elements a 16-byte vector, copied as they
 * are.  Half the bytes of f32 for the same N.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB gathered 276 GB/s bus bandwidth
 * (1.02x nccl), 2 MB 1.36x, 16 KB 0.83x.  Gap to the limit: about 61% of NVLink
 * 4's ~450 GB/s a direction (NV18) at 1 GB; 7.8 us at 16 KB: a launch and two
 * flag-barrier round trips over NVLink. */
#include "variants/allgather/p2p.cuh"

extern "C" const kb_variant allgather_p2p[] = {
    {
        .name = "p2p",
        .summary = "every GPU copies each peer's input from peer memory, flag barriers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = allgather_p2p_setup<float>,
        .teardown = kb_p2p_teardown,
        .launch = allgather_p2p_launch<float>,
    },
    {
        .name = "p2p",
        .summary = "every GPU copies each peer's input from peer memory, flag barriers",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .setup = allgather_p2p_setup<__nv_bfloat16>,
        .teardown = kb_p2p_teardown,
        .launch = allgather_p2p_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
