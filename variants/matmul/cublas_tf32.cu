/* matmul cublas_tf32: cuBLAS SGEMM allowed to round the inputs to tf32 (10-bit
 * mantissa) and use the tensor cores (CUBLAS_TF32_TENSOR_OP_MATH).  Not the
 * same function as fp32: it is checked with the tf32 tolerance.  Shows what
 * giving up fp32 products buys.
 *
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 397.3
 * TFLOP/s at 4096^3 and 408.3 at 8192^3 (clock 1980 MHz at both), 82.2%
 * and 84.5% of the run's tf32 ceiling (half its 967 TFLOP/s bf16 tensor
 * ceiling), 7.74x and 7.95x cublas.
 * Gap to the limit: 17.8 points at 4096^3; 15.5 points at 8192^3.
 * History: docs/notes/matmul.md. */
#include "ops/matmul.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, CUBLAS_TF32_TENSOR_OP_MATH);
}

extern "C" const kb_variant matmul_cublas_tf32[] = {
    {
        .name = "cublas_tf32",
        .summary = "cuBLAS SGEMM with tf32 tensor-core math",
        .dtype = KB_F32,
        .math = KB_MATH_TF32,
        .needs = KB_NEEDS_CUBLAS,
        .setup = setup,
        .teardown = kb_cublas_teardown,
        .launch = kb_cublas_matmul,
    },
    KB_VARIANT_END,
};
