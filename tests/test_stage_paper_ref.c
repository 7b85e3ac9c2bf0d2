/* The paper stage's C reference (reference/stage_paper.h), on small seeded
 * models:
 *   - no layers: the logits are (sqrt(d) E[id_t] + PE(t)) . head, with PE
 *     written out here from the paper's formula, untied and tied;
 *   - causal: one forward over n tokens gives, at every position, the
 *     logits of a forward that stops there (so the stage's teacher-forced
 *     check equals a recompute per step), and a later token changes no
 *     earlier logit;
 *   - without the encoder's causal mask, a later token does change them
 *     (the flag is what makes the stack causal). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kbench.h"
#include "reference/stage_paper.h"
#include "tests/check.h"

#define D 12
#define V 37
#define N 9

static double max_abs_diff(const float *a, const float *b, int n)
{
    double m = 0;
    for (int i = 0; i < n; ++i)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void no_layers(const float *E, const float *head, const int *ids)
{
    kb_tf_model m;
    const kb_tf_config c = {D, 3, 8, 0, 0, 1e-5f, 0, 1};
    float got[N * V], want[N * V];
    CHECK(kb_tf_init_random(&m, &c, 3) == 0);
    CHECK(kb_paper_reference(&m, E, head, V, ids, N, 0, got) == 0);
    for (int t = 0; t < N; ++t)
        for (int v = 0; v < V; ++v) {
            double acc = 0;
            for (int j = 0; j < D; ++j) {
                const double w = t / pow(10000.0, (j / 2 * 2) / (double)D);
                const double pe = j % 2 ? cos(w) : sin(w);
                acc += (sqrt(D) * E[ids[t] * D + j] + pe) * head[v * D + j];
            }
            want[t * V + v] = (float)acc;
        }
    printf("no layers: max |diff| %.2e\n", max_abs_diff(got, want, N * V));
    CHECK(max_abs_diff(got, want, N * V) <= 1e-5);
    kb_tf_free(&m);
}

/* Logits of every position from one forward, and from forwards that stop
 * at each; then with the last token changed. */
static void causality(const float *E, int *ids, int causal)
{
    kb_tf_model m;
    const kb_tf_config c = {D, 3, 20, 2, 0, 1e-5f, 0, causal};
    float all[N * V], alone[V], changed[N * V];
    CHECK(kb_tf_init_random(&m, &c, 5) == 0);
    CHECK(kb_paper_reference(&m, E, E, V, ids, N, 0, all) == 0);
    double prefix = 0;
    for (int t = 0; t < N; ++t) {
        CHECK(kb_paper_reference(&m, E, E, V, ids, t + 1, t, alone) == 0);
        prefix = fmax(prefix, max_abs_diff(alone, all + t * V, V));
    }
    const int last = ids[N - 1];
    ids[N - 1] = (last + 1) % V;
    CHECK(kb_paper_reference(&m, E, E, V, ids, N, 0, changed) == 0);
    ids[N - 1] = last;
    const double earlier = max_abs_diff(changed, all, (N - 1) * V);
    printf("causal %d: prefix forwards vs one forward %.2e; earlier logits moved by a later token %.2e\n", causal,
           prefix, earlier);
    if (causal)
        CHECK(prefix == 0 && earlier == 0);
    else
        CHECK(earlier > 1e-3);
    kb_tf_free(&m);
}

int main(void)
{
    float *E = malloc(sizeof(float) * 2 * V * D), *head = E + V * D;
    int ids[N];
    CHECK(E != NULL);
    kb_fill_uniform(E, 2 * V * D, 11);
    for (int t = 0; t < N; ++t)
        ids[t] = (t * 13 + 5) % V;
    no_layers(E, head, ids);
    no_layers(E, E, ids);
    causality(E, ids, 1);
    causality(E, ids, 0);
    free(E);
    return CHECK_DONE();
}
