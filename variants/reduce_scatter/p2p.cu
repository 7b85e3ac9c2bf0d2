/* reduce_scatter p2p: rank r sums block r of every rank's input straight
 * from peer memory (16-byte loads when N is a whole number of vectors, else
 * elements; fp32, ranks in order, one rounding) into its output.  Flag
 * barriers per block at entry and exit, in device memory
 * (kernels/p2p.cuh).  Builds on allreduce p2p_twoshot's first phase.
 * Prediction: each GPU pulls (R - 1) N, the minimum, in one step: near
 * NCCL's busbw at large N, ahead of its R - 1 ring steps at small N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB input 334 GB/s bus
 * bandwidth (1.17x nccl), 4 MB 1.51x, 32 KB 0.80x.
 * Gap to the limit: about 74% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 7.9 us at 32 KB: a launch and two flag-barrier round trips over NVLink.
 * The bf16 form, on bf16 storage: 8 elements a 16-byte vector, summed in fp32
 * and rounded to bf16 once.  Half the bytes of f32 for the same N.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB input 331 GB/s bus bandwidth
 * (1.24x nccl), 2 MB 1.21x, 16 KB 0.78x.  Gap to the limit: about 74% of NVLink
 * 4's ~450 GB/s a direction (NV18) at 1 GB; 7.9 us at 16 KB: a launch and two
 * flag-barrier round trips over NVLink. */
#include "variants/reduce_scatter/p2p.cuh"

extern "C" const kb_variant reduce_scatter_p2p[] = {
    {
        .name = "p2p",
        .summary = "every GPU sums its block of all inputs over peer memory, flag barriers",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = reduce_scatter_p2p_setup<float>,
        .teardown = kb_p2p_teardown,
        .launch = reduce_scatter_p2p_launch<float>,
    },
    {
        .name = "p2p",
        .summary = "every GPU sums its block of all inputs over peer memory, flag barriers",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .setup = reduce_scatter_p2p_setup<__nv_bfloat16>,
        .teardown = kb_p2p_teardown,
        .launch = reduce_scatter_p2p_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
