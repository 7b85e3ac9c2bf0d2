/* The Llama-style model's bf16 GPU forward (model/llama_gpu.h) against its C
 * reference, on seeded models with bf16-rounded weights: grouped-query and
 * plain multi-head attention, tied and untied, head_dim 64 and 128, an odd
 * vocabulary and a d_ff that is no multiple of the kernels' 256-element
 * steps.  For each: a prefill over an odd-length prompt, then decode steps
 * by stream launches; every step's logits within the bf16 model tolerance
 * of the reference fed the same tokens.  KV-cache decoding must equal a
 * full recompute: a fresh prefill over prompt + generated tokens gives
 * the decode step's logits.  A CUDA-graph replay of the step must give the
 * same tokens as the stream launches.  A reference whose weights are one
 * norm away from the GPU's must fail the tolerance.  Exits 77 without a GPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "model/llama_gpu.h"
#include "tests/check.h"

#define PROMPT 13
#define STEPS 6

typedef struct {
    const char *name;
    int d, layers, heads, kv, ff, vocab, tied;
} llama_case;

static const llama_case cases[] = {
    {"gqa untied, head_dim 64", 256, 2, 4, 2, 712, 1001, 0},
    {"mha tied, head_dim 128", 256, 2, 2, 2, 520, 517, 1},
    {"mqa, head_dim 64", 128, 3, 2, 1, 344, 256, 0},
};

static double rel_l2(const float *a, const float *ref, int n)
{
    double e = 0, r = 0;
    for (int i = 0; i < n; ++i) {
        if (!isfinite(a[i]))
            return INFINITY;
        e += (a[i] - (double)ref[i]) * (a[i] - (double)ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(e / r);
}

/* Prefill, then steps decode steps (stream launches, or graph replays). */
static const char *run(kb_llama_gpu *g, const int *ids, int n, int steps, cudaGraphExec_t graph, cudaStream_t s)
{
    const char *e = kb_llama_gpu_plan(g, n);
    if (!e)
        e = kb_llama_gpu_prefill(g, ids, n, s);
    for (int k = 0; !e && k < steps; ++k)
        e = graph ? (cudaGraphLaunch(graph, s) == cudaSuccess ? NULL : "graph launch failed")
                  : kb_llama_gpu_decode(g, s);
    if (!e && cudaStreamSynchronize(s) != cudaSuccess)
        e = "the stream failed";
    return e;
}

/* The reference's logits of every step, fed the given tokens; the worst rel. L2 of logits against them. */
static double worst_vs_reference(const kb_llama_model *m, const int *prompt, const int *tokens, const float *logits)
{
    const int V = m->cfg.vocab;
    kb_llama_cache c;
    float *ref = malloc(sizeof(float) * V);
    double worst = 0;
    if (!ref || kb_llama_cache_init(&c, &m->cfg, PROMPT + STEPS) != 0)
        return INFINITY;
    for (int k = 0; k <= STEPS; ++k) {
        if (k ? kb_llama_forward(m, &c, &tokens[k - 1], 1, ref, NULL) : kb_llama_forward(m, &c, prompt, PROMPT, ref, NULL))
            return INFINITY;
        const double e = rel_l2(logits + (size_t)k * V, ref, V);
        worst = e > worst ? e : worst;
    }
    kb_llama_cache_free(&c);
    free(ref);
    return worst;
}

static void one_case(const llama_case *lc, cudaStream_t s)
{
    const kb_llama_config cfg = {.d_model = lc->d, .d_ff = lc->ff, .layers = lc->layers, .heads = lc->heads,
                                 .kv_heads = lc->kv, .head_dim = lc->d / lc->heads, .vocab = lc->vocab,
                                 .max_pos = 256, .tied = lc->tied, .eps = 1e-5, .rope_theta = 10000};
    kb_llama_model m;
    kb_llama_gpu *g = NULL;
    const int V = cfg.vocab;
    int prompt[PROMPT + STEPS], tokens[STEPS + 1], again[STEPS + 1];
    float *logits = malloc(sizeof(float) * (STEPS + 1) * V), *full = malloc(sizeof(float) * (STEPS + 1) * V);
    CHECK(logits && full && kb_llama_init_random(&m, &cfg, 7) == 0);
    kb_llama_round_bf16(&m);
    for (int i = 0; i < PROMPT; ++i)
        prompt[i] = (i * 37 + 11) % V;
    const char *e = kb_llama_gpu_create(&m, PROMPT + STEPS + 1, PROMPT + STEPS, STEPS + 1, 1, &g);
    if (e) {
        fprintf(stderr, "%s: %s\n", lc->name, e);
        CHECK(!"kb_llama_gpu_create");
        return;
    }
    CHECK((e = run(g, prompt, PROMPT, STEPS, NULL, s)) == NULL);
    CHECK(kb_llama_gpu_results(g, STEPS + 1, tokens, logits) == NULL);
    const double vs_ref = worst_vs_reference(&m, prompt, tokens, logits);
    printf("%s: worst step's logits vs the reference %.2e (tolerance %.2e)\n", lc->name, vs_ref,
           kb_model_bf16_rel_l2_tolerance());
    CHECK(vs_ref <= kb_model_bf16_rel_l2_tolerance());

    /* KV cache vs recompute: prefill prompt + tokens[0..k) and compare with step k. */
    double worst_recompute = 0;
    for (int k = 1; k <= STEPS; ++k) {
        int n = PROMPT + k, t;
        prompt[n - 1] = tokens[k - 1];
        CHECK(run(g, prompt, n, 0, NULL, s) == NULL);
        CHECK(kb_llama_gpu_results(g, 1, &t, full) == NULL);
        const double r = rel_l2(full, logits + (size_t)k * V, V);
        worst_recompute = r > worst_recompute ? r : worst_recompute;
    }
    printf("%s: decode through the KV cache vs a full recompute: worst rel. L2 %.2e\n", lc->name, worst_recompute);
    CHECK(worst_recompute <= kb_model_bf16_rel_l2_tolerance() / 8);

    /* The step as a graph replays the same tokens. */
    cudaGraph_t graph;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    e = kb_llama_gpu_decode(g, s);
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess && !e);
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    CHECK(run(g, prompt, PROMPT, STEPS, exec, s) == NULL);
    CHECK(kb_llama_gpu_results(g, STEPS + 1, again, NULL) == NULL);
    CHECK(!memcmp(again, tokens, sizeof tokens));
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    /* A reference one norm weight away must fail: the check has teeth. */
    for (int c = 0; c < cfg.d_model; ++c)
        ((float *)m.layers[cfg.layers - 1].mlp_norm)[c] *= c % 2 ? 1.5f : 0.5f;
    const double off = worst_vs_reference(&m, prompt, tokens, logits);
    printf("%s: against a reference with one norm changed: %.2e\n", lc->name, off);
    CHECK(off > kb_model_bf16_rel_l2_tolerance());
    kb_llama_gpu_destroy(g);
    kb_llama_free(&m);
    free(logits);
    free(full);
}

int main(void)
{
    kb_device_info dev;
    cudaStream_t s;
    SKIP_WITHOUT_GPU("the Llama GPU forward", &dev);
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i)
        one_case(&cases[i], s);
    cudaStreamDestroy(s);
    return CHECK_DONE();
}
