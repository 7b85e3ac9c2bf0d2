/* matmul cublas_tf32: cuBLAS SGEMM allowed to round the inputs to tf32 (10-bit
 * mantissa) and use the tensor cores (CUBLAS_TF32_TENSOR_OP_MATH).  Not the
 * same function as fp32: it is checked with the tf32 tolerance.  Shows what
 * giving up fp32 products buys.
 *
 * Measured on H100 (results/h100/, cold L2): 394 TFLOP/s at 4096^3, 360 at 8192^3,
 * 226 at 4096x768x3072 (7.6x fp32 SGEMM).
 * Gap to the limit: dense tf32 tensor peak is ~495 TFLOP/s on H100 SXM. */
#include "kernels/matmul.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, CUBLAS_TF32_TENSOR_OP_MATH);
}

extern "C" const kb_variant matmul_cublas_tf32 = {
    .name = "cublas_tf32",
    .summary = "cuBLAS SGEMM with tf32 tensor-core math",
    .dtype = KB_F32,
    .math = KB_MATH_TF32,
    .needs = KB_NEEDS_CUBLAS,
    .setup = setup,
    .teardown = kb_cublas_teardown,
    .launch = kb_cublas_matmul,
};
