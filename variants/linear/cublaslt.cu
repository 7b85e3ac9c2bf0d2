/* linear cublaslt: the baseline, the Llama model's prefill product for
 * o_proj and down_proj: one cuBLASLt matmul (kernels/lt_gemm.h's
 * kb_lt_plan_linear: bf16 x and W read transposed, fp32 y accumulated
 * with beta = 1), planned once per shape in setup with a 32 MiB
 * workspace, so timing sees only cublasLtMatmul.
 *
 * Idea: what a framework runs; at M = 1 (a decode step) it is the bar the
 * hand-written gemv has to clear.
 * Prediction: near the tensor ceiling at prefill sizes; at M = 1 a GEMV
 * is memory-bound, and cuBLASLt's tiles, sized for products, read the
 * weights at some 50-70% of the copy ceiling.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 755.8
 * TFLOP/s at the 2048x2048x8192 prefill product, 79.5% of the run's 951
 * TFLOP/s tensor ceiling; at M = 1, 1,790 GB/s at 1x2048x8192 (18.8 us), 42.2%
 * of its 4237 GB/s memory ceiling, under the 50-70% predicted, and 922 GB/s
 * (21.8%) at 1x2048x2048.
 * Gap to the limit: 20.5 points at 2048x2048x8192; 57.8 at 1x2048x8192: at
 * M = 1, the tiles' wasted rows and the launch. */
#include "kernels/cuda_util.h"
#include "kernels/lt_gemm.h"
#include "ops/linear.h"

/* One product planned for the shape, its handle and workspace (lt_gemm.h). */
static const char *setup(const void *args, void **ctx)
{
    const kb_linear_args *a = (const kb_linear_args *)args;
    kb_lt_single *c;
    KB_TRY(kb_lt_single_open(&c));
    return kb_lt_single_done(c, kb_lt_plan_linear(&c->product, c->lt, a->M, a->N, a->K, 1, a->x, a->w, a->y), ctx);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_linear_args *a = (const kb_linear_args *)args;
    return kb_lt_single_run((const kb_lt_single *)ctx, a->x, a->w, a->y, stream);
}

extern "C" const kb_variant linear_cublaslt[] = {
    {
        .name = "cublaslt",
        .summary = "cuBLASLt, W transposed, y += in the epilogue (the Llama prefill's o_proj and down_proj)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS,
        .min_cc = 80,
        .setup = setup,
        .teardown = kb_lt_single_free,
        .launch = launch,
    },
    KB_VARIANT_END,
};
