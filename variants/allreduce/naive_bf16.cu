/* allreduce naive_bf16: naive (variants/allreduce/naive.cu says how) on bf16
 * storage, summed in fp32 and rounded to bf16 once.  Half the bytes of f32
 * for the same N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 1 GB 138 GB/s bus bandwidth
 * (0.42x nccl_bf16), 1 MB 0.33x, 8 KB 0.19x.
 * Gap to the limit: about 31% of NVLink 4's ~450 GB/s a direction (NV18) at 1
 * GB; 37.2 us at 8 KB: copy-engine transfers and cross-GPU event waits between
 * them, a floor no size lifts. */
#include "variants/allreduce/naive.cuh"

extern "C" const kb_variant allreduce_naive_bf16 = {
    .name = "naive_bf16",
    .summary = "reduce on GPU 0 from peer copies, then copy the sum to every GPU, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allreduce_naive_setup<__nv_bfloat16>,
    .teardown = allreduce_naive_teardown,
    .launch = allreduce_naive_launch<__nv_bfloat16>,
};
