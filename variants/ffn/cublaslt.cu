/* ffn cublaslt: the baseline, two cuBLASLt matmuls in plain fp32
 * (CUBLAS_COMPUTE_32F: no tf32 tensor-core math) with cuBLASLt's fused
 * epilogues, as a framework's fused Linear (addmm with bias) runs them:
 *   1. h = relu(x W1 + b1)   CUBLASLT_EPILOGUE_RELU_BIAS, bias b1
 *   2. y = h W2 + b2         CUBLASLT_EPILOGUE_BIAS, bias b2
 * Each is a row-major product of kernels/lt_gemm.h (b1 has F entries, b2
 * has D).
 * The handle, the descriptors, the layouts, a heuristic-chosen algorithm per
 * product, a 32 MiB workspace and the M x F hidden h are made in setup from
 * the shape and pointers (the heuristic sees their alignments); launch only
 * enqueues the two matmuls.
 *
 * Prediction: the speed of cuBLAS SGEMM on each product, the bias and ReLU
 * free in the epilogue.
 * Measured (results/h100/kbench-20261127-195738.csv, H100, cold L2): 51.9
 * TFLOP/s at 8192x4096x16384, 82.5% of the run's 62.9 TFLOP/s fp32 ceiling
 * (matmul cublas: 51.3-51.4).
 * Gap to the limit: 17 points to the fp32 ceiling; h makes a round trip
 * through memory between the two products.  History: docs/notes/matmul.md.
 *
 * The bf16 form: the bf16 rows' baseline, the same two fused products in
 * bf16 storage with fp32 accumulation (the tensor cores), biases in bf16;
 * the epilogues add the bias and clamp in fp32, h and y rounded to bf16 as
 * they are stored.  The tensor-parallel rows' speedup is over it: "x the
 * same layer on one GPU".  Measured (results/h200-x2/kbench-20261123-233258.csv,
 * one H200 of two, sw_power_cap at 1555 MHz): 12.19 ms at 8192x8192x32768,
 * 722 TFLOP/s; the GEMMs' own gap to the bf16 tensor ceiling.
 * History: docs/notes/ffn-tensor-parallel.md. */
#include "variants/ffn/lt_ffn.cuh"

static const char *setup(const void *args, void **ctx) { return lt_ffn_setup(args, ctx, CUDA_R_32F, sizeof(float)); }

static const char *setup_bf16(const void *args, void **ctx)
{
    return lt_ffn_setup(args, ctx, CUDA_R_16BF, sizeof(uint16_t));
}

extern "C" const kb_variant ffn_cublaslt[] = {
    {
        .name = "cublaslt",
        .summary = "two cuBLASLt fp32 matmuls, bias+ReLU and bias epilogues (baseline)",
        .dtype = KB_F32,
        .math = KB_MATH_F32,
        .needs = KB_NEEDS_CUBLAS,
        .setup = setup,
        .teardown = lt_ffn_teardown,
        .launch = lt_ffn_launch,
    },
    {
        .name = "cublaslt",
        .summary = "two cuBLASLt bf16 matmuls, fp32 accumulation, bias+ReLU and bias epilogues (baseline)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup_bf16,
        .teardown = lt_ffn_teardown,
        .launch = lt_ffn_launch,
    },
    KB_VARIANT_END,
};
