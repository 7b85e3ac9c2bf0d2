/* The paper stage's C reference (reference/stage_paper.h): the input and
 * the LM head around reference/transformer.c's encoder stack. */
#include <math.h>
#include <stdlib.h>
#include "ops/posenc.h"
#include "reference/stage_paper.h"

/* x_t = sqrt(d) E[ids_t] + PE(t), rounded once to the fp32 the stack takes. */
static int embed(const float *E, int d, const int *ids, int n, float *x)
{
    double *pe = malloc(sizeof(double) * (size_t)n * d);
    int64_t *rows = calloc((size_t)n, sizeof(int64_t));
    if (!pe || !rows) {
        free(pe);
        free(rows);
        return -1;
    }
    for (int t = 0; t < n; ++t)
        rows[t] = t;
    posenc_reference_rows(d, KB_POSENC_PAPER_SCALE, rows, n, pe);
    for (int t = 0; t < n; ++t)
        for (int c = 0; c < d; ++c)
            x[(int64_t)t * d + c] = (float)(sqrt((double)d) * E[(int64_t)ids[t] * d + c] + pe[(int64_t)t * d + c]);
    free(pe);
    free(rows);
    return 0;
}

/* logits[v] = x . head[v], in double; vocabulary rows over OpenMP threads,
 * which changes nothing in any one logit's arithmetic. */
static void lm_head(const float *x, const float *head, int vocab, int d, float *logits)
{
#pragma omp parallel for schedule(static)
    for (int v = 0; v < vocab; ++v) {
        double acc = 0;
        for (int c = 0; c < d; ++c)
            acc += (double)x[c] * head[(int64_t)v * d + c];
        logits[v] = (float)acc;
    }
}

int kb_paper_reference(const kb_tf_model *m, const float *embed_w, const float *head, int vocab, const int *ids,
                       int n, int first, float *logits)
{
    const int d = m->cfg.d_model;
    float *x = malloc(sizeof(float) * 2 * (size_t)n * d), *y = x + (size_t)n * d;
    int err = !x || embed(embed_w, d, ids, n, x) || kb_tf_reference_seq(m, KB_TF_ENCODER, n, 0, x, NULL, y);
    for (int t = first; !err && t < n; ++t)
        lm_head(y + (int64_t)t * d, head, vocab, d, logits + (int64_t)(t - first) * vocab);
    free(x);
    return err ? -1 : 0;
}
