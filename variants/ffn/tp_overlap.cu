/* ffn tp_overlap: tp_nccl with its all-reduce hidden behind the GEMMs.  The
 * M tokens go in 4 chunks; for chunk c each GPU enqueues the chunk's two
 * shard products on its compute stream and records an event, and a second,
 * communication stream per GPU (highest priority, so NCCL's blocks get the
 * first free SMs) waits on that event and all-reduces chunk c of the
 * partial y.  Chunk c's all-reduce thus runs while chunk c+1's GEMMs do;
 * only the last chunk's is exposed.  Both streams are joined back into the
 * timed one.  Rows are independent in both products, so chunking changes
 * no result.
 *
 * Builds on tp_nccl: the same shards, plans per chunk, the same sum.
 * What should move, at 8192x8192x32768 on 2 H200s: tp_nccl's ~0.4-0.5 ms
 * of exposed all-reduce (128 MB of bf16 partial y) drops to the last
 * chunk's ~0.12 ms (32 MB), the rest overlapping the ~1.5 ms GEMMs of the
 * next chunk; against that, chunks of 2048 tokens make slightly smaller
 * GEMMs, and the all-reduce's blocks take some SMs from them while they
 * overlap.  Prediction: ~6.2 ms, <= 0.55x the one-GPU cublaslt
 * (~12 ms at ~730 TFLOP/s), a speedup of ~1.9-1.95 against tp_nccl's ~1.85.
 * Measured (results/h200-x2/kbench-20261123-233258.csv, 2 H200, sw_power_cap
 * at 1578 MHz, the one-GPU row at 1555): 6.71 ms, 1.82x cublaslt
 * (0.550x, 91% scaling efficiency), level with tp_nccl (6.66 ms at 1834
 * MHz): at these clocks the overlap bought nothing measurable; the earlier
 * run (kbench-20261123-202045.csv) had it 0.12 ms ahead.
 * The risk: cuBLASLt's Hopper GEMMs are persistent, one block per SM, and
 * if one leaves no room on an SM, NCCL's blocks only start between
 * kernels and then delay the next GEMM's; the overlap is partial and the
 * row lands nearer tp_nccl.  The knob then is CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET
 * (GEMMs on fewer SMs, the rest left to NCCL) or NCCL_MAX_NCHANNELS.
 * Gap to the limit (half the one-GPU time, 0.50x): the last chunk's
 * all-reduce and the SMs NCCL holds during the overlap; more chunks shrink
 * the first and cost GEMM efficiency.
 * History: docs/notes/ffn-tensor-parallel.md. */
#include "variants/ffn/tp_layer.h"

enum { CHUNKS = 4 };

static const char *setup(const void *args, void **ctx) { return tp_setup(args, ctx, CHUNKS, 1); }

/* Chunk c on every GPU: its GEMMs on the compute stream, its all-reduce on
 * the communication stream once they are done. */
static const char *chunk(tp_layer *L, int c)
{
    const char *err = NULL;
    for (int r = 0; r < L->g.n && !err; ++r) {
        err = tp_gemms(L, r, c, L->g.stream[r]);
        if (!err)
            err = tp_cuda(cudaEventRecord(L->rank[r].computed[c], L->g.stream[r]));
        if (!err)
            err = tp_cuda(cudaStreamWaitEvent(L->comm[r], L->rank[r].computed[c], 0));
    }
    return err ? err : tp_all_reduce(L, c, L->comm);
}

/* Each compute stream waits for its GPU's last all-reduce, so joining the
 * compute streams joins both. */
static const char *join_comm(tp_layer *L)
{
    const char *err = NULL;
    for (int r = 0; r < L->g.n && !err; ++r) {
        err = tp_cuda(cudaSetDevice(L->g.device[r]));
        if (!err)
            err = tp_cuda(cudaEventRecord(L->rank[r].reduced, L->comm[r]));
        if (!err)
            err = tp_cuda(cudaStreamWaitEvent(L->g.stream[r], L->rank[r].reduced, 0));
    }
    return err;
}

static const char *enqueue(tp_layer *L, cudaStream_t stream)
{
    const char *err = kb_ranks_fork(&L->g, stream);
    for (int c = 0; c < L->chunks && !err; ++c)
        err = chunk(L, c);
    if (!err)
        err = join_comm(L);
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

extern "C" const kb_variant ffn_tp_overlap[] = {
    {
        .name = "tp_overlap",
        .summary = "tp_nccl in 4 token chunks, each chunk's all-reduce on a second stream under the next one's GEMMs",
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
