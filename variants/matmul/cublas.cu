/* matmul cublas: the baseline, cuBLAS SGEMM in plain fp32 (CUBLAS_DEFAULT_MATH:
 * no tf32 tensor-core math), so it computes the same function as the
 * hand-written kernels and the speedups compare like with like.
 *
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 51.3
 * TFLOP/s at 4096^3, 81.6% of the run's 62.9 TFLOP/s fp32 ceiling; 51.4 TFLOP/s
 * (81.7%) at 8192^3.
 * Gap to the limit: 18 points to the measured fp32 ceiling (66.9 TFLOP/s on the
 * datasheet at 1980 MHz).  History: docs/notes/matmul.md. */
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
