/* linear_cross_entropy chunked: the logits never all in memory (Liger's
 * and llm.c's classifier_fused idea): the tokens go through in chunks
 * whose bf16 logits fit 512 MiB, each chunk's logits made, turned into dz
 * in place, and spent on its rows of dh and its terms of dW (accumulated
 * by the GEMM's beta = 1) before the next chunk reuses the room.
 * Workspace: 2048 rows of 128256 logits, 0.5 GiB, at 8192x128256x2048.
 *
 * Builds on cublas: the same steps a chunk at a time.
 * Prediction: at 2048 rows a chunk the GEMMs keep their speed (each is
 * still 1 TFLOP); dW's three extra reads and writes of its 0.5 GB cost
 * ~0.8 ms, about what the smaller logits save in the cross-entropy pass
 * (L2 holds none of them either way): within 5% of cublas, at a quarter
 * of its memory.
 * Measured (results/h200/kbench-20261204-183254.csv, H200, cold L2): 20.48
 * ms, 630 TFLOP/s at 8192x128256x2048, 65.6% of the run's 961 TFLOP/s bf16
 * tensor ceiling, with 566 MiB of workspace, at 1661 MHz under the power
 * cap (cublas 20.09 with 2068, 0.98x; torch.compile 23.22 with 5479): 1.13x
 * torch.compile.
 * Gap to the limit: 34.4 points: dW's accumulation traffic and the
 * cross-entropy pass, which a GEMM epilogue could absorb. */
#include "variants/linear_cross_entropy/chunks.cuh"

#define LOGIT_BYTES (512u << 20)

/* As many rows as fit the room, in 128s when more than 128 fit. */
static int chunk_rows(int N, int V)
{
    int64_t rows = LOGIT_BYTES / (2 * (int64_t)kb_lce_vp(V));
    if (rows > 128)
        rows -= rows % 128;
    return rows < 1 ? 1 : rows > N ? N : (int)rows;
}

static const char *setup(const void *args, void **ctx)
{
    const kb_linear_cross_entropy_args *a = (const kb_linear_cross_entropy_args *)args;
    return kb_lce_chunks_setup(a, chunk_rows(a->N, a->V), ctx);
}

extern "C" const kb_variant linear_cross_entropy_chunked[] = {
    {
        .name = "chunked",
        .summary = "the tokens in chunks of 512 MiB of logits: cuBLAS GEMMs, cross-entropy in place, dW += a chunk's",
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
