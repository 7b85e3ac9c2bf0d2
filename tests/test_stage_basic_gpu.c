/* The `basic` stage on the GPU (model/stage_basic.cu): at small shapes,
 * tile-hostile ones among them (odd d_model and head size, one-token and
 * 7- and 33-token prompts, a prompt past the check's 32 tokens, vocabulary
 * 1000, tied and untied), the stage's own check against reference/basic.c
 * passes and its times, FLOPs and bytes are filled in.  Shapes it cannot
 * run are refused with one line.  Exits 77 without a GPU. */
#include <math.h>
#include <string.h>
#include "harness/harness.h"
#include "model/stages.h"
#include "reference/basic.h"
#include "tests/check.h"

static const kb_stage_shape shapes[] = {
    /* layers, d_model, heads, kv_heads, d_ff, vocab, tied, prompt, tokens, seed */
    {2, 63, 7, 7, 97, 1000, 1, 7, 3, 1},
    {1, 33, 3, 3, 50, 1000, 0, 1, 2, 2},
    {3, 64, 4, 4, 256, 1000, 1, 33, 4, 3},
    {2, 35, 5, 5, 70, 1000, 0, 40, 2, 4},
    {4, 96, 3, 3, 128, 517, 1, 12, 5, 5},
};

/* The default stop rule, hot (no flush buffer). */
static const kb_time_opts timing = {{0}};

static void runs(const kb_stage_shape *s)
{
    kb_stage_result r;
    char err[256] = "";
    const int rc = kb_stage_basic(s, &timing, &r, err, sizeof err);
    printf("d %d heads %d prompt %d: rc %d rel_l2 %.3g pass %d prefill %.3f ms decode %.3f ms/token %s\n",
           s->d_model, s->heads, s->prompt, rc, r.rel_l2, r.pass, r.prefill.ms.median, r.decode.ms.median, err);
    CHECK(rc == 0);
    CHECK(r.pass);
    CHECK(r.rel_l2 <= r.tolerance);
    CHECK(r.tolerance == kb_model_rel_l2_tolerance());
    CHECK(r.prefill.ms.median > 0 && r.decode.ms.median > 0);
    CHECK(r.prefill.ms.n >= KB_MIN_SAMPLES && r.decode.ms.n >= KB_MIN_SAMPLES);
    CHECK(r.prefill_flops > 0 && r.decode_flops > r.prefill_flops); /* a longer recompute */
    const kb_basic_config c = {s->layers, s->d_model, s->heads, s->d_ff, s->vocab, s->tied};
    CHECK(r.decode_bytes == 4.0 * (double)kb_basic_weight_count(&c));
    CHECK(strcmp(r.dtype, "f32") == 0);
    CHECK(strcmp(r.how, "recomputes the sequence") == 0);
}

/* -1 and one line naming the reason. */
static void refused(const kb_stage_shape *s, const char *why)
{
    kb_stage_result r;
    char err[256] = "";
    CHECK(kb_stage_basic(s, &timing, &r, err, sizeof err) == -1);
    CHECK(strstr(err, why) != NULL);
    CHECK(strchr(err, '\n') == NULL);
    printf("refused: %s\n", err);
}

int main(void)
{
    kb_device_info dev;
    SKIP_WITHOUT_GPU("the basic stage", &dev);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        runs(&shapes[i]);
    const kb_stage_shape uneven = {2, 64, 6, 6, 128, 1000, 1, 8, 2, 1};
    refused(&uneven, "multiple of heads");
    /* 200 layers at d 4096, ff 16384: ~160 GB of fp32 weights. */
    const kb_stage_shape huge = {200, 4096, 32, 32, 16384, 256000, 1, 8, 2, 1};
    refused(&huge, "device memory");
    return CHECK_DONE();
}
