/* gate_up gemv: the Llama model's decode gate/up product
 * (kernels/gemv.cuh, GEMV_SWIGLU): x RMSNorm'd into shared memory as
 * bf16, each warp streaming gate row i and up row i together with 16-byte
 * loads, silu(gate) * up stored as bf16.  Needs K a multiple of 8, else
 * SKIPs.  Launched as a programmatic dependent on sm_90 and newer.
 *
 * Builds on naive: the norm once per block of a persistent grid, 16-byte
 * loads four deep, the next pair's loads in flight during this one's sums.
 * Prediction: ~85% of the copy ceiling on Llama-3.2-1B's 64 MB of gate
 * and up weights; SmolLM2's 3.5 MB is a few waves.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 2,847 GB/s
 * at 8192x2048 (23.6 us), 67.2% of the run's 4237 GB/s memory ceiling, 3.14x
 * naive, under the ~85% predicted; 493 GB/s (11.6%, 1.60x) at SmolLM2's
 * 1536x576, 7.2 us.
 * Gap to the limit: 32.8 points at 8192x2048, 88.4 at 1536x576: the launch's
 * ramp and tail. */
#include "kernels/gemv.cuh"
#include "ops/decode.h"

static const char *unsupported(const kb_shape *s) { return kb_gemv::k_refusal(s->d[1]); }

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_gate_up_args *g = (const kb_gate_up_args *)args;
    kb_gemv::GemvArgs a = kb_gemv::args_for(g->w, g->F, g->K);
    a.x = g->x, a.norm = g->gamma, a.eps = g->eps, a.yb = (kb_gemv::bf16 *)g->h;
    return kb_gemv::launch<kb_gemv::GEMV_SWIGLU>((const kb_gemv::Ctx *)ctx, a, stream);
}

extern "C" const kb_variant gate_up_gemv[] = {
    {
        .name = "gemv",
        .summary = "RMSNorm staged, gate and up rows together, 16-byte loads, persistent grid, PDL (the Llama decode's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .setup = kb_gemv::setup_for<kb_gemv::GEMV_SWIGLU, kb_gate_up_args>,
        .teardown = kb_gemv::teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
