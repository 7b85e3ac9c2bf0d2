/* linear gemv: the Llama model's decode product for o_proj and down_proj
 * (kernels/gemv.cuh, GEMV_RESIDUAL): the bf16 input vector staged in
 * shared memory, two weight rows a warp streamed by 16-byte loads, four
 * in flight per row per lane, the two sums added into y.  A batch of one
 * (M = 1) with K a multiple of 8; SKIPs other shapes.  Launched as a
 * programmatic dependent on sm_90 and newer.
 *
 * Builds on cublaslt (at M = 1): a kernel for the matrix-vector product,
 * a persistent grid and no wasted tile rows.
 * Prediction: ~80-90% of the copy ceiling on the weights at the models'
 * sizes (4-32 MB a product); smaller ones are launches and tails.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 2,101 GB/s
 * at 1x2048x8192 (16.0 us), 49.6% of the run's 4237 GB/s memory ceiling, 1.17x
 * cublaslt, far under the 80-90% predicted; 994 GB/s (23.4%, 1.08x) at
 * 1x2048x2048; the 2048x2048x8192 prefill product SKIPs (M must be 1).  In the
 * model, a Llama-3.2-1B decode step ran at 77.6% of the copy ceiling
 * (docs/model.md).
 * Gap to the limit: 50.4 points at 1x2048x8192: the grid's ramp and tail, a
 * few microseconds a launch, which PDL overlaps with the neighbours' in the
 * model. */
#include "kernels/gemv.cuh"
#include "ops/linear.h"

static const char *unsupported(const kb_shape *s)
{
    return s->d[0] != 1 ? "a batch of one: M must be 1 (a decode step's product)" : kb_gemv::k_refusal(s->d[2]);
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_linear_args *l = (const kb_linear_args *)args;
    kb_gemv::GemvArgs a = kb_gemv::args_for(l->w, l->N, l->K);
    a.xb = (const kb_gemv::bf16 *)l->x, a.y = l->y;
    return kb_gemv::launch<kb_gemv::GEMV_RESIDUAL>((const kb_gemv::Ctx *)ctx, a, stream);
}

extern "C" const kb_variant linear_gemv[] = {
    {
        .name = "gemv",
        .summary = "a batch of one: 16-byte weight loads, persistent grid, PDL (the Llama decode's o_proj, down_proj)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .setup = kb_gemv::setup_for<kb_gemv::GEMV_RESIDUAL, kb_linear_args>,
        .teardown = kb_gemv::teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
