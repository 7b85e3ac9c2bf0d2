/* The Llama-style model's training reference (reference/llama_train.h):
 * its loss is the cross-entropy of kb_llama_forward's logits; every
 * weight's gradient agrees with central differences of the loss (a GQA
 * untied model, and a tied one with Llama 3.1's RoPE scaling, whose
 * embedding's gradient has both uses); gradients add up across calls;
 * refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "model/llama.h"
#include "reference/llama_train.h"
#include "tests/check.h"

enum { B = 2, T = 5 };

static const kb_llama_config gqa = {.d_model = 12, .d_ff = 10, .layers = 2, .heads = 3, .kv_heads = 1,
                                    .head_dim = 4, .vocab = 9, .max_pos = 8, .tied = 0, .eps = 1e-5,
                                    .rope_theta = 50};

static const int ids[B * T] = {1, 4, 0, 8, 2, 7, 7, 3, 5, 6};
static const int targets[B * T] = {4, 0, 8, 2, KB_LLAMA_IGNORE, 7, 3, 5, 6, 1};

static double loss_of(const kb_llama_model *m)
{
    kb_llama_grads g;
    double loss = NAN;
    CHECK(kb_llama_grads_init(&g, &m->cfg) == 0);
    CHECK(kb_llama_loss_backward(m, ids, targets, B, T, &loss, &g) == 0);
    kb_llama_grads_free(&g);
    return loss;
}

/* The loss from kb_llama_forward's logits, sequence by sequence. */
static double forward_loss(const kb_llama_model *m)
{
    const int V = m->cfg.vocab;
    float logits[T * 16];
    double sum = 0;
    int counted = 0;
    for (int b = 0; b < B; ++b) {
        kb_llama_cache c;
        CHECK(kb_llama_cache_init(&c, &m->cfg, T) == 0);
        CHECK(kb_llama_forward(m, &c, ids + b * T, T, NULL, logits) == 0);
        kb_llama_cache_free(&c);
        for (int t = 0; t < T; ++t) {
            const int y = targets[b * T + t];
            if (y == KB_LLAMA_IGNORE)
                continue;
            double max = -INFINITY, z = 0;
            for (int v = 0; v < V; ++v)
                max = fmax(max, logits[t * V + v]);
            for (int v = 0; v < V; ++v)
                z += exp(logits[t * V + v] - max);
            sum += max + log(z) - logits[t * V + y];
            ++counted;
        }
    }
    return sum / counted;
}

/* Central differences at a few entries of every weight, against the
 * gradient at the same place of g's storage (laid out as the weights). */
typedef struct {
    kb_llama_model *m;
    const kb_llama_grads *g;
    int64_t offset;
    double worst;
} fd_walk;

static void fd_weight(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    fd_walk *w = (fd_walk *)user;
    const int64_t n = rows * (cols ? cols : 1), picks[] = {0, n / 3, n / 2, n - 1};
    const float h = 1.0f / 4096; /* w +- h is exact in fp32 for |w| < 2^11 */
    float *p = (float *)data;
    for (size_t k = 0; k < sizeof picks / sizeof *picks; ++k) {
        const int64_t i = picks[k];
        const float w0 = p[i];
        p[i] = w0 + h;
        const double up = loss_of(w->m);
        p[i] = w0 - h;
        const double down = loss_of(w->m);
        p[i] = w0;
        const double fd = (up - down) / (2.0 * h), grad = w->g->storage[w->offset + i];
        const double err = fabs(fd - grad) / (1e-6 + fabs(grad));
        w->worst = fmax(w->worst, err);
        if (fabs(fd - grad) > 1e-7 + 1e-5 * fabs(grad)) {
            fprintf(stderr, "%s[%lld]: gradient %.9g, central difference %.9g\n", name, (long long)i, grad, fd);
            CHECK(0);
        }
    }
    w->offset += n;
}

static void check_model(const kb_llama_config *cfg, uint64_t seed)
{
    kb_llama_model m;
    kb_llama_grads g;
    double loss = NAN;
    CHECK(kb_llama_init_random(&m, cfg, seed) == 0);
    CHECK(kb_llama_grads_init(&g, cfg) == 0);
    CHECK(kb_llama_loss_backward(&m, ids, targets, B, T, &loss, &g) == 0);
    CHECK_NEAR(loss, forward_loss(&m), 1e-6 * loss);
    CHECK(loss > 0 && isfinite(loss));
    fd_walk w = {&m, &g, 0, 0};
    kb_llama_each_weight(&m, fd_weight, &w);
    CHECK(w.offset == kb_llama_weight_count(cfg));
    printf("tied %d, llama3 scaling %d: loss %.6f, worst relative gradient error %.2e\n", cfg->tied,
           cfg->rope_scaling.factor != 0, loss, w.worst);
    /* A second call adds its gradients to the first's. */
    const double first = g.layers[0].wq[5];
    CHECK(kb_llama_loss_backward(&m, ids, targets, B, T, &loss, &g) == 0);
    CHECK_NEAR(g.layers[0].wq[5], 2 * first, 1e-12 * fabs(first) + 1e-300);
    kb_llama_grads_free(&g);
    kb_llama_free(&m);
}

static void test_refusals(void)
{
    kb_llama_model m;
    kb_llama_grads g;
    double loss;
    int bad[B * T], none[B * T];
    CHECK(kb_llama_init_random(&m, &gqa, 3) == 0);
    CHECK(kb_llama_grads_init(&g, &gqa) == 0);
    memcpy(bad, ids, sizeof bad);
    bad[7] = gqa.vocab;
    for (int i = 0; i < B * T; ++i)
        none[i] = KB_LLAMA_IGNORE;
    CHECK(kb_llama_loss_backward(&m, bad, targets, B, T, &loss, &g) == -1);
    CHECK(kb_llama_loss_backward(&m, ids, bad, B, T, &loss, &g) == -1);
    CHECK(kb_llama_loss_backward(&m, ids, none, B, T, &loss, &g) == -1);
    CHECK(kb_llama_loss_backward(&m, ids, targets, 1, gqa.max_pos + 1, &loss, &g) == -1);
    CHECK(kb_llama_loss_backward(&m, ids, targets, 0, T, &loss, &g) == -1);
    kb_llama_grads_free(&g);
    kb_llama_free(&m);
}

/* The first AdamW step moves every weight by lr g / (|g| + eps) (the
 * bias-corrected moments are g and g^2) after its decay; the walk's
 * weights and the gradients' storage line up. */
typedef struct {
    const double *grad;
    const float *before;
    int64_t offset;
    double lr, wd, eps;
} step_walk;

static void check_step(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    step_walk *w = (step_walk *)user;
    const int64_t n = rows * (cols ? cols : 1);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double g = w->grad[w->offset + i], w0 = w->before[w->offset + i];
        const double want = w0 * (1 - w->lr * w->wd) - w->lr * g / (fabs(g) + w->eps);
        bad += fabs(data[i] - want) > 1e-6 * fabs(want) + 1e-9;
    }
    if (bad)
        fprintf(stderr, "%s: %d weights off AdamW's first step\n", name, bad);
    CHECK(bad == 0);
    w->offset += n;
}

static void test_adamw(void)
{
    kb_llama_model m;
    kb_llama_grads g;
    kb_llama_adam_state st;
    double first = NAN, loss = NAN;
    CHECK(kb_llama_init_random(&m, &gqa, 5) == 0);
    CHECK(kb_llama_grads_init(&g, &gqa) == 0 && kb_llama_adam_init(&st, &gqa) == 0);
    const int64_t n = kb_llama_weight_count(&gqa);
    float *before = malloc(sizeof(float) * (size_t)n);
    memcpy(before, m.storage, sizeof(float) * (size_t)n);
    CHECK(kb_llama_loss_backward(&m, ids, targets, B, T, &first, &g) == 0);
    double sumsq = 0;
    for (int64_t i = 0; i < n; ++i)
        sumsq += g.storage[i] * g.storage[i];
    const kb_adamw_hyper h = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1,
                              .max_norm = 1e9};
    CHECK_NEAR(kb_llama_adamw_step(&m, &g, &st, &h), sqrt(sumsq), 1e-12 * sqrt(sumsq));
    step_walk w = {g.storage, before, 0, h.lr, h.weight_decay, h.eps};
    kb_llama_each_weight(&m, check_step, &w);
    /* Forty steps on the same batch, clipped to norm 1: the model learns it. */
    const kb_adamw_hyper fast = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1,
                                 .max_norm = 1};
    for (int step = 0; step < 40; ++step) {
        memset(g.storage, 0, sizeof(double) * (size_t)n);
        CHECK(kb_llama_loss_backward(&m, ids, targets, B, T, &loss, &g) == 0);
        kb_llama_adamw_step(&m, &g, &st, &fast);
    }
    printf("AdamW on one batch: loss %.4f, after 40 steps %.4f\n", first, loss);
    CHECK(loss < 0.5 * first);
    free(before);
    kb_llama_adam_free(&st);
    kb_llama_grads_free(&g);
    kb_llama_free(&m);
}

int main(void)
{
    check_model(&gqa, 11);
    kb_llama_config tied = gqa;
    tied.tied = 1;
    tied.rope_scaling = (kb_llama_rope_scaling){4, 1, 4, 8};
    check_model(&tied, 12);
    test_refusals();
    test_adamw();
    return CHECK_DONE();
}
