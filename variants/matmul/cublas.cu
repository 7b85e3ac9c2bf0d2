/* matmul cublas: the baseline, cuBLAS SGEMM in plain fp32 (CUBLAS_DEFAULT_MATH:
 * no tf32 tensor-core math), so it computes the same function as the
 * hand-written kernels and the speedups compare like with like.
 *
 * Measured on H100: (to be filled from the committed run); about 51 TFLOP/s
 * is typical at 4096^3.
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
