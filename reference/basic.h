/* The `basic` stage of issue 17: the 003 document's transformer ("Optimizing
 * a Transformer", ../shared/seeds/003_*.txt) taken literally, as a causal
 * language model, and its C reference forward.
 *
 * Column-vector maths, as the document writes it: E is n x t, column i the
 * n-dim vector of token i (n = d_model).
 *
 *   E = the embedding's rows of the tokens, as columns; no positional
 *       encoding (the document has none), so only the mask tells positions
 *       apart
 *   per layer, attention:  each head h (l = v_dim = n / heads) reads the
 *       block's input E0, and its dE is added into E, starting at E = E0:
 *         Q = W_q,h E0, K = W_k,h E0                 l x t
 *         V = W_v_up,h (W_v_down,h E0)               n x t (a rank-l map)
 *         A = K^T Q                                  t x t, A[j][i] = key j . query i
 *         A_norm = colwise_softmax(mask(A) / factor) key j > query i masked
 *         E += V A_norm
 *       factor = 1: the document names "a factor" without a value, and
 *       1/sqrt(d_k) is the `paper` stage's change.  (Its "A = K^T * V" is
 *       read as K^T Q, as the issue says: the scores pair keys with queries.)
 *   per layer, MLP, with no residual (the document feeds E' on as is):
 *         E = W_down ReLU(W_up E + b_up) + b_down    ReLU is the NonLin
 *   logits = W_out E                                 vocab x t; W_out is the
 *       embedding (vocab x n) when tied
 *
 * Seeded weights (kb_basic_init_random), uniform in +-g/sqrt(fan_in) with
 * gains chosen so that 30 layers with neither residual nor normalisation
 * keep activations finite and tokens distinguishable.  At the stage shape
 * (SmolLM2-135M's sizes, 30 layers, tied) this reference gave, at 8, 35
 * and 128 tokens, logits with a standard deviation of ~12 and |max| ~55,
 * ~2% of their energy varying by position (1% at 512 tokens in a numpy
 * model of the same maths), and fp32 (GPU) logits within ~2e-6 rel. L2.
 * With every gain 1, the MLP shrinks E's second moment ~18x a layer, and
 * after 30 layers the logits no longer depend on the tokens (1e-30 of
 * their energy varies by position), so no check could see a wrong token:
 *   embedding            g = 1 over +-1 (uniform in [-1, 1]), as the Llama
 *                        model's seeded embedding
 *   W_q, W_k             g = 1
 *   W_v_down, W_v_up     g = 0.5: each head's V has ~1/144 of E's second
 *                        moment, so nine heads' averaged values perturb E
 *                        rather than swamp it (at g = 1, E's scale grows
 *                        with depth and the attention averages positions
 *                        into one)
 *   W_up                 g = sqrt(6) (He: variance-preserving through ReLU)
 *   W_down               g = sqrt(3) (variance-preserving linear)
 *   b_up, b_down, W_out  g = 1 (W_out only when untied)
 *
 * The reference computes every activation in double from the fp32
 * weights.  Rows of each product go to OpenMP threads, which leaves the
 * arithmetic of each value unchanged, so results do not depend on the
 * thread count; column i of every step depends only on tokens 0..i, so
 * the logits of a prefix do not change when later tokens do. */
#ifndef KBENCH_REFERENCE_BASIC_H
#define KBENCH_REFERENCE_BASIC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int layers, d_model, heads, d_ff, vocab; /* heads divides d_model */
    int tied;                                /* W_out is the embedding */
} kb_basic_config;

/* One layer's weights, each [rows, cols] row-major as the maths writes it;
 * a per-head weight holds every head's block, head h at h * rows * cols. */
typedef struct {
    const float *wq, *wk;        /* heads x [l, n] */
    const float *wv_down;        /* heads x [l, n] */
    const float *wv_up;          /* heads x [n, l] */
    const float *w_up, *b_up;    /* [ff, n], [ff] */
    const float *w_down, *b_down; /* [n, ff], [n] */
} kb_basic_layer;

typedef struct {
    kb_basic_config cfg;
    const float *embed;      /* [vocab, n]: row v is token v's column of E */
    const float *w_out;      /* [vocab, n]; == embed when tied */
    kb_basic_layer *layers;  /* cfg.layers of them */
    float *storage;          /* owns every weight */
} kb_basic_model;

/* Every fp32 weight of the model, the tied embedding counted once. */
int64_t kb_basic_weight_count(const kb_basic_config *c);

/* Seeded weights at the gains above.  0, or -1 when out of memory (m is
 * then empty). */
int kb_basic_init_random(kb_basic_model *m, const kb_basic_config *c, uint64_t seed);
void kb_basic_free(kb_basic_model *m);

/* logits[p * vocab + v] for every position p < t of ids[0..t).  0, or -1
 * when out of memory. */
int kb_basic_forward(const kb_basic_model *m, const int *ids, int t, double *logits);

#ifdef __cplusplus
}
#endif

#endif
