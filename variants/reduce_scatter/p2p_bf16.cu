/* reduce_scatter p2p_bf16: p2p (variants/reduce_scatter/p2p.cu says how) on
 * bf16 storage: 8 elements a 16-byte vector, summed in fp32 and rounded to
 * bf16 once.  Half the bytes of f32 for the same N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 1 GB input 331 GB/s bus
 * bandwidth (1.24x nccl_bf16), 2 MB 1.21x, 16 KB 0.78x.
 * Gap to the limit: about 74% of NVLink 4's ~450 GB/s a direction (NV18) at 1
 * GB; 7.9 us at 16 KB: a launch and two flag-barrier round trips over NVLink. */
#include "variants/reduce_scatter/p2p.cuh"

extern "C" const kb_variant reduce_scatter_p2p_bf16 = {
    .name = "p2p_bf16",
    .summary = "every GPU sums its block of all inputs over peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = reduce_scatter_p2p_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = reduce_scatter_p2p_launch<__nv_bfloat16>,
};
