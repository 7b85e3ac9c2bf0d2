/* allreduce p2p_twoshot_bf16: p2p_twoshot (variants/allreduce/p2p_twoshot.cu
 * says how) on bf16 storage: 8 elements a 16-byte vector, summed in fp32 and
 * rounded to bf16 once.  Half the bytes of f32 for the same N.
 * Measured (results/h200-x2/kbench-20261123-202045.csv, 2 H200 over NVLink,
 * L2 warm): bf16 1 GB 332 GB/s bus bandwidth (1.01x nccl_bf16), 1 MB 1.14x,
 * 8 KB 1.25x.
 * Gap to the limit: about 74% of NVLink 4's ~450 GB/s a direction (NV18);
 * below ~4 MB a ~20 us floor dominates (the harness's fork and join of the two
 * GPUs' streams through CUDA events, plus two launches). */
#include "variants/allreduce/p2p_twoshot.cuh"

extern "C" const kb_variant allreduce_p2p_twoshot_bf16 = {
    .name = "p2p_twoshot_bf16",
    .summary = "reduce-scatter then all-gather over peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allreduce_twoshot_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = allreduce_twoshot_launch<__nv_bfloat16>,
};
