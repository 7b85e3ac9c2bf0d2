/* allreduce naive: reduce on GPU 0, then broadcast.  GPU 0 pulls the R - 1
 * peers' inputs into a scratch buffer (cudaMemcpyPeerAsync, each after an
 * event on that peer's stream), sums all R with one thread per element
 * (fp32, ranks in order), and every peer pulls the sum from GPU 0's output
 * after an event on GPU 0's stream.  Events order it all; the host never
 * waits.  Builds on nothing: the textbook first try.
 * Prediction: GPU 0's links carry (R - 1) N in, then (R - 1) N out, one
 * after the other, with the sum between: at R = 2 about half a ring's busbw
 * (~150-180 GB/s on NVLink 4) at large N, worse as R grows; at small N a
 * few copy-engine launches, ~20-30 us.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2
 * warm, each GPU timed on its own stream): f32 2 GB 168 GB/s bus bandwidth
 * (0.49x nccl), 2 MB 0.58x, 16 KB 0.19x.
 * Gap to the limit: about 37% of NVLink 4's ~450 GB/s a direction (NV18) at 2
 * GB; 37.3 us at 16 KB: copy-engine transfers and cross-GPU event waits between
 * them, a floor no size lifts.
 * The bf16 form, on bf16 storage, summed in fp32 and rounded to bf16 once. 
 * Half the bytes of f32 for the same N.  Measured
 * (results/h200-x2/kbench-20261123-233258.csv, 2 H200 over NVLink, L2 warm,
 * each GPU timed on its own stream): bf16 1 GB 138 GB/s bus bandwidth (0.42x
 * nccl), 1 MB 0.33x, 8 KB 0.19x.  Gap to the limit: about 31% of NVLink 4's
 * ~450 GB/s a direction (NV18) at 1 GB; 37.2 us at 8 KB: copy-engine transfers
 * and cross-GPU event waits between them, a floor no size lifts. */
#include "variants/allreduce/naive.cuh"

extern "C" const kb_variant allreduce_naive[] = {
    {
        .name = "naive",
        .summary = "reduce on GPU 0 from peer copies, then copy the sum to every GPU",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .setup = allreduce_naive_setup<float>,
        .teardown = allreduce_naive_teardown,
        .launch = allreduce_naive_launch<float>,
    },
    {
        .name = "naive",
        .summary = "reduce on GPU 0 from peer copies, then copy the sum to every GPU",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .min_cc = 80,
        .setup = allreduce_naive_setup<__nv_bfloat16>,
        .teardown = allreduce_naive_teardown,
        .launch = allreduce_naive_launch<__nv_bfloat16>,
    },
    KB_VARIANT_END,
};
