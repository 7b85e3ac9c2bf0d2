/* allgather p2p_bf16: p2p (variants/allgather/p2p.cu says how) on bf16
 * storage: 8 elements a 16-byte vector, copied as they are.  Half the bytes
 * of f32 for the same N.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): bf16 1 GB gathered 276 GB/s bus
 * bandwidth (1.02x nccl_bf16), 2 MB 1.36x, 16 KB 0.83x.
 * Gap to the limit: about 61% of NVLink 4's ~450 GB/s a direction (NV18) at 1
 * GB; 7.8 us at 16 KB: a launch and two flag-barrier round trips over NVLink. */
#include "variants/allgather/p2p.cuh"

extern "C" const kb_variant allgather_p2p_bf16 = {
    .name = "p2p_bf16",
    .summary = "every GPU copies each peer's input from peer memory, flag barriers, bf16",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .min_cc = 80,
    .setup = allgather_p2p_setup<__nv_bfloat16>,
    .teardown = kb_p2p_teardown,
    .launch = allgather_p2p_launch<__nv_bfloat16>,
};
