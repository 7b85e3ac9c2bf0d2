/* matmul cublas: the baseline, cuBLAS SGEMM in plain fp32 (CUBLAS_DEFAULT_MATH:
 * no tf32 tensor-core math), so it computes the same function as the
 * hand-written kernels and the speedups compare like with like.
 *
 * Measured on H100 (results/h100/, cold L2): 52.0 TFLOP/s at 4096^3, 51.5 at
 * 8192^3, 46.7 at 4096x768x3072.
 * That is 78% of the fp32 FFMA peak (66.9 TFLOP/s at 1980 MHz) at 4096^3.
 * Gap to the limit: the fp32 FFMA peak, ~67 TFLOP/s at boost clock. */
#include "kernels/matmul.h"
#include "variants/matmul/cublas_common.h"

static const char *setup(const void *args, void **ctx)
{
    (void)args;
    return kb_cublas_setup(ctx, CUBLAS_DEFAULT_MATH);
}

extern "C" const kb_variant matmul_cublas = {
    .name = "cublas",
    .summary = "cuBLAS SGEMM, fp32 math (no tf32)",
    .dtype = KB_F32,
    .math = KB_MATH_F32,
    .needs = KB_NEEDS_CUBLAS,
    .setup = setup,
    .teardown = kb_cublas_teardown,
    .launch = kb_cublas_matmul,
};
