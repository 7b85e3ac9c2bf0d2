/* allreduce naive_bf16: naive (variants/allreduce/naive.cu says how) on bf16
 * storage, summed in fp32 and rounded to bf16 once.  Half the bytes of f32
 * for the same N.
 * Measured: pending (needs --devices on 2+ GPUs). */
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
