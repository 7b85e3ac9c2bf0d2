/* The paper and modern stages (model/stages.h) on the GPU at small shapes
 * that the kernels' tiles do not divide: odd d and head_dim (paper),
 * head_dim 10 and 136 (flash's scalar and row-per-warp paths), d not a
 * multiple of 4, prompts of 1, 7 and 33 tokens (33: the check runs 32,
 * then the timed prefill replans), vocabulary 1000 and 517, grouped-query,
 * multi-query and multi-head attention, tied and untied heads.  Each must
 * pass its check against its C reference and report every field.  Then
 * the planted fault (every decode step sees one token fewer) must fail
 * both stages' checks, and shapes a stage cannot run must be refused with
 * one line.  Every timed row must stop at the stop rule's min_samples.
 * Exits 77 without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "model/stage_gpu.h"
#include "model/stages.h"
#include "tests/check.h"

typedef int (*stage_fn)(const kb_stage_shape *, const kb_time_opts *, kb_stage_result *, char *, size_t);

/* Any noise accepted and time to spare: every row must stop at exactly
 * min_samples (the engine's rule), flushed by a buffer made in main. */
#define SAMPLES 7
static kb_time_opts timing = {.rule = {.cap_s = 60, .max_noise = 1, .min_samples = SAMPLES}};

typedef struct {
    const char *name;
    kb_stage_shape shape;
    int modern; /* a legal Llama shape too (even head_dim) */
} stage_case;

/* layers, d, heads, kv_heads, d_ff, vocab, tied, prompt, tokens, seed */
static const stage_case cases[] = {
    {"mha tied, prompt 33", {2, 64, 4, 4, 96, 1000, 1, 33, 5, 1}, 1},
    {"gqa untied, prompt 7", {2, 96, 6, 2, 200, 1000, 0, 7, 3, 2}, 1},
    {"mqa, prompt 1", {1, 64, 2, 1, 130, 517, 0, 1, 4, 3}, 1},
    {"head_dim 10, d_ff 171", {2, 60, 6, 3, 171, 1000, 1, 33, 4, 4}, 1},
    {"d 30, not a multiple of 4", {2, 30, 3, 1, 50, 1000, 0, 7, 3, 5}, 1},
    {"head_dim 136", {1, 136, 1, 1, 64, 1000, 1, 7, 2, 6}, 1},
    {"odd d 45, head_dim 9", {2, 45, 5, 5, 77, 1000, 0, 33, 3, 7}, 0},
};

static void run_stage(const char *stage, stage_fn fn, const stage_case *c)
{
    kb_stage_result r;
    char err[256] = "";
    const int rc = fn(&c->shape, &timing, &r, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "%s, %s: %s\n", stage, c->name, err);
        CHECK(!"the stage ran");
        return;
    }
    printf("%s, %s: rel L2 %.2e (tolerance %.0e), prefill %.3f ms, decode %.3f ms/token, %s\n", stage, c->name,
           r.rel_l2, r.tolerance, r.prefill.ms.median, r.decode.ms.median, r.how);
    CHECK(r.pass && r.rel_l2 <= r.tolerance && r.tolerance == kb_model_rel_l2_tolerance());
    CHECK(r.dtype && !strcmp(r.dtype, "f32") && r.how[0]);
    CHECK(r.prefill.ms.median > 0 && r.decode.ms.median > 0);
    CHECK(r.prefill.ms.n == SAMPLES && r.decode.ms.n == SAMPLES);
    CHECK(r.prefill_flops > 0 && r.decode_flops > 0 && r.decode_bytes > 0);
}

/* The planted fault: the check must fail, and the stage still report. */
static void faulted(const char *stage, stage_fn fn, const kb_stage_shape *shape)
{
    kb_stage_result r;
    char err[256] = "";
    kb_stage_fault = KB_STAGE_FAULT_SHORT;
    const int rc = fn(shape, &timing, &r, err, sizeof err);
    kb_stage_fault = 0;
    printf("%s with decode steps one token short: rc %d, rel L2 %.2e, pass %d %s\n", stage, rc, r.rel_l2, r.pass, err);
    CHECK(rc == 0 && !r.pass && r.rel_l2 > r.tolerance);
}

static void refused(const char *stage, stage_fn fn, kb_stage_shape shape)
{
    kb_stage_result r;
    char err[256] = "";
    const int rc = fn(&shape, &timing, &r, err, sizeof err);
    printf("%s refuses: %s\n", stage, err);
    CHECK(rc == -1 && err[0] && !strchr(err, '\n'));
}

int main(void)
{
    kb_device_info dev;
    SKIP_WITHOUT_GPU("the paper and modern stages", &dev);
    CHECK((timing.flush = kb_alloc_flush(&dev, &timing.flush_bytes)) != NULL);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        run_stage("paper", kb_stage_paper, &cases[i]);
        if (cases[i].modern)
            run_stage("modern", kb_stage_modern, &cases[i]);
    }
    faulted("paper", kb_stage_paper, &cases[0].shape);
    faulted("modern", kb_stage_modern, &cases[1].shape);
    const kb_stage_shape odd_head = cases[6].shape, heads_not_dividing = {1, 64, 5, 5, 64, 100, 1, 4, 2, 1};
    kb_stage_shape groups_not_dividing = cases[0].shape, no_tokens = cases[0].shape;
    groups_not_dividing.kv_heads = 3;
    no_tokens.tokens = 0;
    refused("modern (odd head_dim)", kb_stage_modern, odd_head);
    refused("modern (kv_heads not dividing heads)", kb_stage_modern, groups_not_dividing);
    refused("paper (heads not dividing d)", kb_stage_paper, heads_not_dividing);
    refused("paper (no tokens)", kb_stage_paper, no_tokens);
    kb_stage_shape huge = cases[0].shape;
    huge.vocab = 1 << 30; /* 256 GiB of embedding: more than any one GPU holds */
    refused("modern (too big)", kb_stage_modern, huge);
    return CHECK_DONE();
}
