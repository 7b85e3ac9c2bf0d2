/* allreduce p2p_twoshot: a reduce-scatter then an all-gather, both over
 * peer memory in one kernel.  Rank r sums chunk r (about N / R, in whole
 * 16-byte vectors) from every rank's input into its own output, a flag
 * barrier, then copies each chunk p from rank p's output; an exit barrier
 * keeps every rank's input and chunk alive while peers read them
 * (kernels/p2p.cuh).  The sum is rounded once, by its chunk's owner, so every
 * GPU's output is the same bits.
 * Builds on p2p_oneshot: the same loads and barriers, traffic per GPU cut
 * from (R - 1) N to 2 (R - 1) N / R (a ring's, in two steps instead of
 * 2 (R - 1)) for a third barrier.
 * Prediction: at R = 2 the same bytes as p2p_oneshot plus a barrier, so
 * level with it at large N and a couple of us slower at small N; from R = 4
 * ahead of it at large N and near NCCL.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB 336 GB/s bus bandwidth
 * (0.99x nccl), 2 MB 1.58x, 16 KB 0.69x.
 * Gap to the limit: about 75% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 10.2 us at 16 KB: a launch and three flag-barrier round trips over
 * NVLink.
 * The bf16 form, on bf16 storage: 8 elements a 16-byte vector, summed in fp32
 * and rounded to bf16 once.  Half the bytes of f32 for the same N.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB 334 GB/s bus bandwidth (1.01x
 * nccl), 1 MB 0.96x, 8 KB 0.69x.  Gap to the limit: about 74% of NVLink 4's
 * ~450 GB/s a direction (NV18) at 1 GB; 10.2 us at 8 KB: a launch and three
 * flag-barrier round trips over NVLink. */
#include "variants/allreduce/p2p_twoshot.cuh"

extern "C" const kb_variant allreduce_p2p_twoshot[] = {
    {
        .name = "p2p_twoshot",
        .summary = "reduce-scatter then all-gather over peer memory, flag barriers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = allreduce_twoshot_setup<float>,
        .teardown = kb_p2p_teardown,
        .launch = allreduce_twoshot_launch<float>,
    },
    {
        .name = "p2p_twoshot",
        .summary = "reduce-scatter then all-gather over peer memory, flag barriers",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .setup = allreduce_twoshot_setup<__nv_bfloat16>,
        .teardown = kb_p2p_teardown,
        .launch = allreduce_twoshot_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
