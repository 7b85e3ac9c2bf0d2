/* ffn cublaslt_bf16: the bf16 baseline, cublaslt's two fused products in
 * bf16 storage with fp32 accumulation (CUBLAS_COMPUTE_32F on bf16
 * operands: the tensor cores), as a framework's bf16 Linear layers run them:
 *   1. h = relu(x W1 + b1)   CUBLASLT_EPILOGUE_RELU_BIAS, bias b1 (bf16)
 *   2. y = h W2 + b2         CUBLASLT_EPILOGUE_BIAS, bias b2 (bf16)
 * The epilogues add the bias and clamp in fp32; h and y are rounded to bf16
 * as they are stored.  Plans, workspace and the M x F bf16 h are made in
 * setup; launch only enqueues the two matmuls.  It is the bf16 rows'
 * baseline, so the tensor-parallel rows' speedup is "x the same layer on
 * one GPU".
 *
 * Builds on cublaslt (the same plan in bf16) and matmul cublaslt_bf16 (the
 * same product without epilogue).
 * Prediction: the speed of the two bf16 GEMMs, ~730 TFLOP/s at
 * 8192x8192x32768 on an H200 (~12 ms), h's round trip through memory
 * (2 x 512 MB at ~4.5 TB/s, in the shadow of the math) nearly free.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, one H200 of two,
 * sw_power_cap at 1555 MHz): 12.19 ms at 8192x8192x32768, 722 TFLOP/s.
 * Gap to the limit: the GEMMs' own gap to the bf16 tensor ceiling
 * (matmul cublaslt_bf16: 19 points at 8192^3 on an H100).
 * History: docs/notes/ffn-tensor-parallel.md. */
#include "variants/ffn/lt_ffn.cuh"

static const char *setup(const void *args, void **ctx) { return lt_ffn_setup(args, ctx, CUDA_R_16BF, sizeof(uint16_t)); }

extern "C" const kb_variant ffn_cublaslt_bf16 = {
    .name = "cublaslt_bf16",
    .summary = "two cuBLASLt bf16 matmuls, fp32 accumulation, bias+ReLU and bias epilogues (bf16 baseline)",
    .dtype = KB_BF16,
    .math = KB_MATH_BF16,
    .needs = KB_NEEDS_CUBLAS,
    .min_cc = 80,
    .setup = setup,
    .teardown = lt_ffn_teardown,
    .launch = lt_ffn_launch,
};
