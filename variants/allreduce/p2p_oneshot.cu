/* allreduce p2p_oneshot: every GPU reads all R inputs straight from peer
 * memory (16-byte loads, every rank's load issued before the adds), sums in
 * fp32 in rank order (so every GPU's output is the same bits) and writes its
 * own full output.  One kernel per GPU, no copies, no scratch; a flag
 * barrier per block at entry (peers' inputs ready) and exit (no peer still
 * reads ours), in device memory, so no host synchronization between GPUs
 * (kernels/p2p.cuh).  At most one block per SM: block b waits on block b of
 * every peer, so all must be resident.
 * Builds on naive: no GPU 0 bottleneck, no copy-engine round trips, one
 * step; the latency-optimal allreduce for small messages.
 * Prediction: each GPU pulls (R - 1) N over its links against a ring's
 * 2 (R - 1) N / R: the same N at R = 2, so near NCCL's busbw at large N and
 * ~5 us at small N (two barrier round trips over NVLink) against NCCL's ~10;
 * at R = 8 four times a ring's traffic, far behind it at large N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB 337 GB/s bus bandwidth
 * (0.99x nccl), 2 MB 1.81x, 16 KB 0.91x.
 * Gap to the limit: about 75% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 7.8 us at 16 KB: a launch and two flag-barrier round trips over NVLink.
 * The bf16 form, on bf16 storage: 8 elements a 16-byte vector, summed in fp32
 * and rounded to bf16 once.  Half the bytes of f32 for the same N.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB 335 GB/s bus bandwidth (1.02x
 * nccl), 1 MB 1.13x, 8 KB 0.91x.  Gap to the limit: about 74% of NVLink 4's
 * ~450 GB/s a direction (NV18) at 1 GB; 7.7 us at 8 KB: a launch and two
 * flag-barrier round trips over NVLink. */
#include "variants/allreduce/p2p_oneshot.cuh"

extern "C" const kb_variant allreduce_p2p_oneshot[] = {
    {
        .name = "p2p_oneshot",
        .summary = "every GPU sums all inputs over peer memory into its own output, flag barriers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = allreduce_oneshot_setup<float>,
        .teardown = kb_p2p_teardown,
        .launch = allreduce_oneshot_launch<float>,
    },
    {
        .name = "p2p_oneshot",
        .summary = "every GPU sums all inputs over peer memory into its own output, flag barriers",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .setup = allreduce_oneshot_setup<__nv_bfloat16>,
        .teardown = kb_p2p_teardown,
        .launch = allreduce_oneshot_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
