/* ffn tp_nccl: the bf16 layer tensor-parallel over the run's GPUs, Megatron
 * style (variants/ffn/tp_layer.h): each GPU runs cublaslt's two fused
 * products on its shard, W1's F/R columns then W2's F/R rows (rank 0's adds
 * b2), and one ncclAllReduce (sum, bf16) of the M x D partial y, in place,
 * leaves y on the first GPU.  Launch forks every GPU's stream from the
 * timed one, enqueues GEMM, GEMM, all-reduce on each, and joins them back.
 * Any R >= 2 that divides F; weights sharded and x replicated in setup.
 *
 * Builds on cublaslt (the bf16 baseline, so the speedup column is
 * "x the same layer on one GPU").
 * Prediction at 8192x8192x32768 on 2 H200s: each GPU does half of the
 * ~12 ms one-GPU layer (~6 ms at the same ~730 TFLOP/s: the shard GEMMs,
 * 8192x16384x8192 and 8192x8192x16384, are still large), then the 128 MB
 * all-reduce, ~0.4-0.5 ms over NVLink, fully exposed: ~6.5 ms, 0.54x the
 * one-GPU time (a speedup of ~1.85).  With bf16 partials the sum is
 * rounded once more per rank (2^-8 of each partial), well inside
 * KB_MATH_BF16's bound.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200, sw_power_cap
 * at 1834 MHz, the one-GPU row at 1555): 6.66 ms at 8192x8192x32768, 1.83x
 * cublaslt (0.547x its time, 91% scaling efficiency).
 * Gap to the limit: the exposed all-reduce, ~7% of the time at 2 GPUs and
 * a growing share at more (compute shrinks as 1/R, the ring's traffic
 * does not); tp_overlap hides it behind the GEMMs.
 * History: docs/notes/ffn-tensor-parallel.md. */
#include "variants/ffn/tp_layer.h"

static const char *setup(const void *args, void **ctx) { return tp_setup(args, ctx, 1, 0); }

static const char *enqueue(tp_layer *L, cudaStream_t stream)
{
    const char *err = kb_ranks_fork(&L->g, stream);
    for (int r = 0; r < L->g.n && !err; ++r)
        err = tp_gemms(L, r, 0, L->g.stream[r]);
    if (!err)
        err = tp_all_reduce(L, 0, L->g.stream);
    if (!err)
        err = kb_ranks_join(&L->g, stream);
    return err;
}

static const char *launch(const void *args, void *ctx, cudaStream_t stream)
{
    tp_layer *L = (tp_layer *)ctx;
    (void)args; /* setup planned every product on the harness's tensors */
    const char *err = enqueue(L, stream);
    const char *cur = tp_cuda(cudaSetDevice(L->g.device[0])); /* the first GPU stays current */
    return err ? err : cur;
}

extern "C" const kb_variant ffn_tp_nccl[] = {
    {
        .name = "tp_nccl",
        .summary = "tensor-parallel over the run's GPUs: sharded cuBLASLt bf16 GEMMs, one NCCL all-reduce",
        .dtype = KB_BF16,
        .math = KB_MATH_BF16,
        .needs = KB_NEEDS_CUBLAS | KB_NEEDS_NCCL,
        .min_cc = 80,
        .min_devices = 2,
        .unsupported = tp_unsupported,
        .setup = setup,
        .teardown = tp_teardown,
        .launch = launch,
    },
    KB_VARIANT_END,
};
