/* qkv_rope gemv: the Llama model's decode QKV (kernels/gemv.cuh,
 * GEMV_QKV): x RMSNorm'd into shared memory as bf16, each warp streaming
 * a RoPE pair of rows (i, i + D/2 of one head) with 16-byte loads, the
 * pair turned at the position read from device memory and stored into q
 * or the layer's cache.  Needs K a multiple of 8, else SKIPs.  Launched
 * as a programmatic dependent on sm_90 and newer.
 *
 * Builds on naive: the norm once per block of a persistent grid, 16-byte
 * loads four deep, the next pair's loads in flight during this one's sums.
 * Prediction: ~80% of the copy ceiling on the weights at Llama-3.2-1B's
 * (6 MB); SmolLM2's 0.9 MB is a few waves, bound by the ramp and tail.
 * Measured (results/h200/kbench-20261202-075017.csv, H200, cold L2): 1,194 GB/s
 * at 2048x32x8x64x1023 (12.6 MB counted, 10.6 us), 28.2% of the run's 4237
 * GB/s memory ceiling, 2.41x naive, far under the ~80% predicted; 169 GB/s
 * (4.0%, 1.70x) at 576x9x3x64x1023, 6.6 us.
 * Gap to the limit: 71.8 points at 2048x32x8x64x1023, 96.0 at
 * 576x9x3x64x1023: the launch's ramp and tail at small products. */
#include "kernels/gemv.cuh"
#include "ops/decode.h"

static const char *unsupported(const kb_shape *s) { return kb_gemv::k_refusal(s->d[0]); }

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_qkv_rope_args *q = (const kb_qkv_rope_args *)args;
    kb_gemv::GemvArgs a = kb_gemv::args_for(q->w, (q->H + 2 * q->KV) * q->D, q->K);
    a.x = q->x, a.norm = q->gamma, a.eps = q->eps;
    a.q = (kb_gemv::bf16 *)q->q, a.kc = (kb_gemv::bf16 *)q->k, a.vc = (kb_gemv::bf16 *)q->v;
    a.H = q->H, a.KV = q->KV, a.hd = q->D, a.ld = (int)q->ld;
    a.state = (int *)q->len, a.inv_freq = q->inv_freq; /* the state's first entry is len; only read */
    return kb_gemv::launch<kb_gemv::GEMV_QKV>((const kb_gemv::Ctx *)ctx, a, stream);
}

extern "C" const kb_variant qkv_rope_gemv[] = {
    {
        .name = "gemv",
        .summary = "RMSNorm staged, RoPE pairs of rows, 16-byte loads, persistent grid, PDL (the Llama decode's)",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .unsupported = unsupported,
        .setup = kb_gemv::setup_for<kb_gemv::GEMV_QKV, kb_qkv_rope_args>,
        .teardown = kb_gemv::teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
