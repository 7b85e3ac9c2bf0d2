/* lm_head gemv: the Llama model's decode LM head (kernels/gemv.cuh,
 * GEMV_LOGITS): x RMSNorm'd into shared memory as bf16, each warp
 * streaming two neighbouring rows with 16-byte loads, every logit written
 * (and kept for the step when asked), each block's largest packed
 * (logit, index) key merged by atomicMax; the last block to finish takes
 * the pick and advances the decode state, leaving the pick's slots (in
 * the variant's context) zero for the next launch.  Needs K a multiple of
 * 8, else SKIPs.  Launched as a programmatic dependent on sm_90 and
 * newer.
 *
 * Builds on naive: one kernel for the logits and the pick, the norm once
 * per block of a persistent grid, 16-byte loads four deep.
 * Prediction: ~85% of the copy ceiling on Llama-3.2-1B's 525 MB head
 * (262 MB of bf16 weights read once).
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 3,739 GB/s
 * at 128256x2048 (141 us), 88.2% of the run's 4237 GB/s memory ceiling, 3.59x
 * naive; 2,365 GB/s (55.8%, 3.71x) at SmolLM2's 49152x576.
 * Gap to the limit: 11.8 points at 128256x2048: the launch's ramp and tail;
 * the pick costs one atomic per block. */
#include "kernels/gemv.cuh"
#include "ops/decode.h"

static const char *unsupported(const kb_shape *s) { return kb_gemv::k_refusal(s->d[1]); }

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_lm_head_args *h = (const kb_lm_head_args *)args;
    const kb_gemv::Ctx *c = (const kb_gemv::Ctx *)ctx;
    kb_gemv::GemvArgs a = kb_gemv::args_for(h->w, h->V, h->K);
    a.x = h->x, a.norm = h->gamma, a.eps = h->eps, a.y = h->logits;
    a.state = h->state, a.best = c->best, a.done = c->done, a.out = h->out;
    a.max_tokens = h->max_tokens, a.set_len = h->set_len, a.keep = h->keep;
    return kb_gemv::launch<kb_gemv::GEMV_LOGITS>(c, a, stream);
}

extern "C" const kb_variant lm_head_gemv[] = {
    {
        .name = "gemv",
        .summary = "RMSNorm staged, 16-byte loads, the pick by atomicMax in the same kernel, PDL (the Llama decode's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .setup = kb_gemv::setup_for<kb_gemv::GEMV_LOGITS, kb_lm_head_args>,
        .teardown = kb_gemv::teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
