/* What the fp32 stages of model/stages.h (basic: model/stage_basic.cu,
 * paper: model/stage_paper.c, modern: model/stage_modern.cu) share: device memory that is counted
 * against the free memory before any of it is allocated and freed as one
 * list on every path, weights staged on the host in the layout the
 * cuBLASLt products read, the token embedding and the greedy pick (variants
 * of the embed_t and argmax ops), and the check's reduced length and error
 * measure. */
#ifndef KBENCH_MODEL_STAGE_GPU_H
#define KBENCH_MODEL_STAGE_GPU_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "model/kernel_call.h"
#include "model/stages.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The check against the C reference: the prompt's first tokens (all of a
 * shorter prompt), then decode steps teacher-forced on the GPU's picks. */
#define KB_STAGE_CHECK_PROMPT 32
#define KB_STAGE_CHECK_STEPS 8
static inline int kb_stage_check_prompt(const kb_stage_shape *sh)
{
    return sh->prompt < KB_STAGE_CHECK_PROMPT ? sh->prompt : KB_STAGE_CHECK_PROMPT;
}

/* A test hook, 0 in use: KB_STAGE_FAULT_SHORT makes every decode step see
 * one token fewer (modern: attention over the cache without the newest
 * key; paper: the recompute without the newest token), which the check
 * must catch. */
extern int kb_stage_fault;
#define KB_STAGE_FAULT_SHORT 1

#define KB_STAGE_MAX_BUFFERS 32
typedef struct {
    void *p[KB_STAGE_MAX_BUFFERS];
    int n;
} kb_stage_mem;

/* One buffer to allocate: where its pointer goes, and its size. */
typedef struct {
    void **p;
    int64_t bytes;
} kb_stage_buf;

/* Refuse when bytes (plus the cuBLASLt workspace and some slack for the
 * libraries) exceed the device's free memory, else allocate each of b[0..n)
 * into m.  NULL, or one line. */
const char *kb_stage_alloc(kb_stage_mem *m, const kb_stage_buf *b, int n, int64_t bytes);
void kb_stage_free(kb_stage_mem *m);

/* Weights laid out in 256-byte slots of one device block: a counting pass
 * (host and dev NULL) sizes it, a filling pass writes the host staging. */
typedef struct {
    float *host, *dev;
    int64_t used; /* floats */
} kb_stage_block;

/* The next slot of n floats: its device address (NULL when counting), its
 * host staging in *host (NULL when counting). */
float *kb_stage_take(kb_stage_block *b, int64_t n, float **host);
/* A PyTorch weight W [rows x cols] ([out x in]) as a product operand
 * W^T [cols x rows] at dst, whose rows are ld floats apart (ld > rows
 * when several weights share the operand side by side). */
void kb_stage_transpose(float *dst, int64_t ld, const float *W, int64_t rows, int64_t cols);
/* Count lay_out's floats, allocate the block into m, run lay_out again to
 * fill the staging and copy it up.  NULL, or one line. */
typedef void (*kb_stage_layout_fn)(void *user, kb_stage_block *b);
int64_t kb_stage_count(kb_stage_layout_fn lay_out, void *user);
const char *kb_stage_upload(kb_stage_mem *m, kb_stage_layout_fn lay_out, void *user);

/* Both ends of every fp32 stage's forward, variants of the op tables:
 * the token embedding (embed_t naive) and the greedy pick (argmax block).
 * The next token stays on the device, so a decode never waits for the host. */
typedef struct {
    kb_call embed, pick;
} kb_stage_ends;
const char *kb_stage_ends_setup(kb_stage_ends *e);
void kb_stage_ends_teardown(kb_stage_ends *e);
/* x[t] = scale * table[:, ids[t]] + pe[t] (pe may be NULL) for t < n, the
 * table stored transposed, d x vocab (the LM head's operand, so a tied
 * model keeps one copy). */
const char *kb_stage_embed(const kb_stage_ends *e, const int *ids, int n, const float *table_t, int vocab, int d,
                           float scale, const float *pe, float *x, cudaStream_t s);
/* *out = the index of the largest logit, the first on ties (greedy). */
const char *kb_stage_argmax(const kb_stage_ends *e, const float *logits, int n, int *out, cudaStream_t s);

/* ||got - ref|| / ||ref||, infinite when got has a NaN or Inf. */
double kb_stage_rel_l2(const float *got, const float *ref, int64_t n);
/* Fill r's check fields from the worst error. */
void kb_stage_checked(kb_stage_result *r, double worst);

#ifdef __cplusplus
}
#endif
#endif
