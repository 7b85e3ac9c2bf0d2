/* Issue 17's stages of one language model, each measured on the GPU at one
 * shape and checked against its own C reference (`kbench model stages`):
 *
 *   basic   the 003 document taken literally: per-head W_q, W_k, a low-rank
 *           value map, column-wise softmax, each head's dE added into E,
 *           MLP W_down NonLin(W_up E + b) + b; one kernel after another;
 *           no KV cache, so a decode step recomputes the sequence (fp32)
 *   paper   the original paper's changes: 1/sqrt(d_k), fused QKV and output
 *           projections, residual + LayerNorm, sinusoidal positions, ReLU
 *           FFN; no KV cache either (fp32)
 *   modern  the Llama decoder of reference/llama.h: pre-norm RMSNorm,
 *           SwiGLU, RoPE, GQA, KV cache, from registry variants (fp32)
 *   fast    the same model at the kernel level (model/llama_gpu.h, bf16)
 *
 * Every stage is a causal language model over a token embedding with an LM
 * head, at the same sizes (basic and paper use heads for kv_heads), so the
 * table compares like with like. */
#ifndef KBENCH_MODEL_STAGES_H
#define KBENCH_MODEL_STAGES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "harness/harness.h"
#include "harness/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int layers, d_model, heads, kv_heads, d_ff, vocab;
    int tied;      /* LM head = embedding */
    int prompt;    /* tokens of the timed prefill */
    int tokens;    /* decode steps timed after the prompt */
    uint64_t seed; /* weights and prompt */
} kb_stage_shape;

/* What a stage reports.  Times in ms, medians with their spread. */
typedef struct {
    const char *dtype;     /* storage of weights and activations: "f32" or "bf16" */
    kb_timing prefill;     /* the prefill over shape.prompt tokens */
    kb_timing decode;      /* per decoded token, after the prompt */
    double prefill_flops;  /* FLOPs of the prefill as this stage computes it */
    double decode_flops;   /* per decoded token, as computed (recompute included) */
    double decode_bytes;   /* the least a decode step must read: every weight once, plus
                              the K and V of the context when the stage keeps a cache */
    double rel_l2;         /* the worst logits' rel. L2 error vs the stage's C reference */
    double tolerance;      /* the bound rel_l2 was held to (harness/tolerance.c) */
    int pass;              /* rel_l2 <= tolerance, and no NaN or Inf anywhere checked */
    int checked_tokens;    /* the tokens whose logits the check compared */
    char how[96];          /* one line on how it decodes, e.g. "recomputes the sequence" */
} kb_stage_result;

/* Each stage: seeded weights and prompt from shape->seed, the check against
 * its C reference at a reduced length (as each header says), then the
 * prefill and decode on the current CUDA device, each a row of the timing
 * engine under `timing`.  0 (check failed or not: see r->pass), or -1 with
 * one line in err when it could not run. */
int kb_stage_basic(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                   size_t errlen);
int kb_stage_paper(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                   size_t errlen);
int kb_stage_modern(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                    size_t errlen);
int kb_stage_fast(const kb_stage_shape *shape, const kb_time_opts *timing, kb_stage_result *r, char *err,
                  size_t errlen);

/* Shared by the stages (model/stages_common.c). */

/* The prompt every stage runs: n ids from seed, uniform over the vocabulary. */
void kb_stage_prompt(const kb_stage_shape *shape, int *ids, int n);

/* Times run(user, stream) on stream through the timing engine, each
 * sample divided by per_run (the tokens a decode run makes), into *out.
 * NULL, or what failed (run's message or CUDA's). */
const char *kb_stage_time(const kb_time_opts *timing, kb_launch_fn run, void *user, cudaStream_t stream, int per_run,
                          kb_timing *out);

/* `kbench model stages` (commands/stages.c); returns the exit code. */
int kb_cmd_stages(int argc, char **argv);
void kb_stages_usage(FILE *f);

#ifdef __cplusplus
}
#endif

#endif
