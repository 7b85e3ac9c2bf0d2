/* The Llama-style model on the GPU in bf16 (issue 17's `fast` stage): the
 * forward of reference/llama.h with bf16 weights, activations and KV
 * cache, fp32 accumulation and an fp32 residual stream.
 *
 * Prefill (n prompt tokens): cuBLASLt products for the linear layers (the
 * residual added in their epilogue), flash_wgmma (flash_mma off Hopper)
 * for causal attention over the cache, small kernels for RMSNorm, RoPE and
 * SwiGLU.  Decode (one token): one fused kernel per linear layer, each a
 * matrix-vector product that reads its weights once (RMSNorm of its input
 * fused in front; RoPE and the cache write, SwiGLU, or the residual add
 * fused behind), and flash_decode over the cache.  A decode step reads its token and position
 * from device memory and leaves the next ones there, so the whole step is
 * one CUDA graph replayed for every token.  The attention kernels come from
 * the op table by name, as a sweep runs them. */
#ifndef KBENCH_MODEL_LLAMA_GPU_H
#define KBENCH_MODEL_LLAMA_GPU_H

#include <cuda_runtime_api.h>
#include "model/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kb_llama_gpu kb_llama_gpu;

/* Why this model cannot run on the GPU path (head_dim a multiple of 16 up
 * to 128, d_model and d_ff multiples of 8), without a GPU: NULL or one line. */
const char *kb_llama_gpu_unfit(const kb_llama_config *c);

/* Upload m's weights rounded to bf16, allocate a KV cache of max_len
 * positions, activations for prefills of up to max_prefill tokens and room
 * for max_tokens generated tokens (and their logits when keep_logits), and
 * set up the kernels.  NULL, or one line (out of device memory, a library
 * error); *out is then NULL. */
const char *kb_llama_gpu_create(const kb_llama_model *m, int max_len, int max_prefill, int max_tokens,
                                int keep_logits, kb_llama_gpu **out);
void kb_llama_gpu_destroy(kb_llama_gpu *g);

/* Plan the products for an n-token prefill (host work, kept for the next
 * prefills of n tokens).  NULL or one line. */
const char *kb_llama_gpu_plan(kb_llama_gpu *g, int n);
/* Enqueue a prefill of ids[0..n) at positions 0..n-1 (planned for n),
 * overwriting the cache, and the greedy pick of generated token 0 from the
 * last position's logits.  ids are copied before this returns. */
const char *kb_llama_gpu_prefill(kb_llama_gpu *g, const int *ids, int n, cudaStream_t s);
/* Enqueue one decode step: the last generated token through the model at
 * the next position, and the greedy pick of the next token.  Nothing in it
 * depends on the host, so a captured step replays as the next one. */
const char *kb_llama_gpu_decode(kb_llama_gpu *g, cudaStream_t s);
/* After the stream is done: the first n generated tokens, and their logits
 * (n x vocab, when kept and logits is not NULL).  NULL or one line. */
const char *kb_llama_gpu_results(kb_llama_gpu *g, int n, int *tokens, float *logits);
/* Whether the launches enqueued from now on keep each step's logits (only
 * when created with keep_logits): a timed run leaves them out. */
void kb_llama_gpu_keep_logits(kb_llama_gpu *g, int on);
/* Whether every logit of the last pick is finite. */
int kb_llama_gpu_logits_finite(kb_llama_gpu *g);

#ifdef __cplusplus
}
#endif
#endif
