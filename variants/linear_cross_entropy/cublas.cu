/* linear_cross_entropy cublas: the baseline, what an unfused framework
 * runs: the whole N x V logits in bf16 from one cuBLAS GEMM, cross-entropy
 * in place of them (cross_entropy's online kernel), then dh = dz W and
 * dW = dz^T h as two more GEMMs (chunks.cuh, with one chunk).
 * Workspace: the logits, 2 N V bytes (2.0 GiB at 8192x128256x2048), and
 * when V is not a multiple of 8, padded copies of W and dW.
 *
 * Builds on: cuBLAS's bf16 GEMMs and the cross_entropy ladder's online rung.
 * Prediction: the three GEMMs (12.9 TFLOP at 8192x128256x2048) at about
 * 800 TFLOP/s are 16 ms; the cross-entropy pass reads the logits twice and
 * writes them once (6.3 GB, ~2 ms): ~18 ms, 710 TFLOP/s.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 20.09
 * ms, 643 TFLOP/s at 8192x128256x2048, 66.8% of the run's 961 TFLOP/s bf16
 * tensor ceiling, at 1642 MHz under its power cap.
 * Gap to the limit: 33.2 points; the GEMMs alone are ~17 ms at the run's
 * clocks; the rest is the cross-entropy pass and the logits' memory. */
#include "variants/linear_cross_entropy/chunks.cuh"

static const char *setup(const void *args, void **ctx)
{
    const kb_linear_cross_entropy_args *a = (const kb_linear_cross_entropy_args *)args;
    return kb_lce_chunks_setup(a, a->N, ctx);
}

extern "C" const kb_variant linear_cross_entropy_cublas[] = {
    {
        .name = "cublas",
        .summary = "all the logits from one cuBLAS GEMM, cross-entropy in place, dh and dW by two more",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup,
        .teardown = kb_lce_chunks_teardown,
        .launch = kb_lce_run,
    },
    KB_VARIANT_END,
};
