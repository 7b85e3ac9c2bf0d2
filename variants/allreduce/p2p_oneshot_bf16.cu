/* allreduce p2p_oneshot_bf16: p2p_oneshot (variants/allreduce/p2p_oneshot.cu
 * says how) on bf16 storage: 8 elements a 16-byte vector, summed in fp32 and
 * rounded to bf16 once.  Half the bytes of f32 for the same N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 1 GB 335 GB/s bus bandwidth
 * (1.02x nccl_bf16), 1 MB 1.13x, 8 KB 0.91x.
 * Gap to the limit: about 74% of NVLink 4's ~450 GB/s a direction (NV18) at 1
 * GB; 7.7 us at 8 KB: a launch and two flag-barrier round trips over NVLink. */
#include "variants/allreduce/p2p_oneshot.cuh"

extern "C" const kb_variant allreduce_p2p_oneshot_bf16 = {
    .name = "p2p_oneshot_bf16",
    .summary = "every GPU sums all inputs over peer memory into its own output, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allreduce_oneshot_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = allreduce_oneshot_launch<__nv_bfloat16>,
};
