/* A Llama-style decoder-only language model (Hugging Face's
 * LlamaForCausalLM), its C reference forward and a KV cache: the `modern`
 * stage of kbench model (issue 17).
 *
 *   x = embed[ids]
 *   per layer:  h = RMSNorm(x) * input_layernorm
 *               q = h Wq^T, k = h Wk^T, v = h Wv^T        (no biases)
 *               q, k <- RoPE(q, k, position)
 *               o = causal softmax(q k^T / sqrt(head_dim)) v, per head;
 *                   query head j reads key/value head j / (heads / kv_heads)
 *               x = x + o Wo^T
 *               h = RMSNorm(x) * post_attention_layernorm
 *               x = x + (silu(h Wgate^T) * (h Wup^T)) Wdown^T
 *   logits = (RMSNorm(x) * norm) lm_head^T     (lm_head = embed when tied)
 *
 * RMSNorm(x) = x / sqrt(mean(x^2) + eps).  A linear layer is y = x W^T with
 * W [out, in], PyTorch's layout, so HF's weights map on directly.
 *
 * RoPE uses Hugging Face's `rotate_half` convention (not the interleaved
 * pairs of Meta's original code): with half = head_dim / 2 and
 * f_i = theta^(-2i / head_dim), for i < half,
 *   y[i]        = x[i] cos(p f_i) - x[i + half] sin(p f_i)
 *   y[i + half] = x[i + half] cos(p f_i) + x[i] sin(p f_i)
 * i.e. y = x * cos + rotate_half(x) * sin with rotate_half(x) = [-x2, x1].
 * Llama 3.1 and later scale the frequencies (rope_scaling of rope_type
 * "llama3": factor s, low and high frequency factors l and h, the original
 * context N): with wavelength w_i = 2 pi / f_i, a pair of w_i < N / h keeps
 * f_i, one of w_i > N / l takes f_i / s, and one between takes
 * (1 - a) f_i / s + a f_i with a = (N / w_i - l) / (h - l).
 * HF checkpoints permute Wq and Wk for this convention; Meta's raw weights
 * would need the interleaved one.
 *
 * Weights are fp32 in memory; the reference accumulates every activation in
 * double and keeps the KV cache in double.  Rows of each product and heads
 * of attention go to OpenMP threads, which changes nothing in the
 * arithmetic of any one value, so results do not depend on the thread count. */
#ifndef KBENCH_REFERENCE_LLAMA_H
#define KBENCH_REFERENCE_LLAMA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rope_scaling of rope_type "llama3"; factor 0 is plain RoPE. */
typedef struct {
    double factor;                  /* s >= 1, or 0 */
    double low_freq_factor;         /* l > 0 */
    double high_freq_factor;        /* h > l */
    int original_max_pos;           /* N: original_max_position_embeddings */
} kb_llama_rope_scaling;

typedef struct {
    int d_model;       /* hidden_size */
    int d_ff;          /* intermediate_size */
    int layers;        /* num_hidden_layers */
    int heads;         /* num_attention_heads */
    int kv_heads;      /* num_key_value_heads; divides heads */
    int head_dim;      /* hidden_size / heads unless config.json says otherwise; even */
    int vocab;         /* vocab_size */
    int max_pos;       /* max_position_embeddings: the longest sequence */
    int tied;          /* tie_word_embeddings: lm_head is the embedding */
    double eps;        /* rms_norm_eps */
    double rope_theta; /* rope_theta */
    kb_llama_rope_scaling rope_scaling;
} kb_llama_config;

typedef struct {
    const float *attn_norm;              /* [d] input_layernorm */
    const float *wq, *wk, *wv, *wo;      /* [H*hd, d], [KV*hd, d], [KV*hd, d], [d, H*hd] */
    const float *mlp_norm;               /* [d] post_attention_layernorm */
    const float *w_gate, *w_up, *w_down; /* [ff, d], [ff, d], [d, ff] */
} kb_llama_layer;

typedef struct {
    kb_llama_config cfg;
    const float *embed;      /* [vocab, d] */
    kb_llama_layer *layers;  /* cfg.layers of them */
    const float *norm;       /* [d] the final norm */
    const float *lm_head;    /* [vocab, d]; == embed when tied */
    float *storage;          /* owns every weight (model/llama_load.c) */
} kb_llama_model;

/* Keys (after RoPE) and values of every layer for positions 0..len-1, in
 * double: k[(layer * max_len + pos) * kv_dim + c], the same for v. */
typedef struct {
    int max_len, len, kv_dim, layers;
    double *k, *v;
} kb_llama_cache;

/* A cache for up to max_len positions (at most cfg.max_pos).  0, or -1
 * when out of memory or the size overflows. */
int kb_llama_cache_init(kb_llama_cache *c, const kb_llama_config *cfg, int max_len);
void kb_llama_cache_free(kb_llama_cache *c);

/* Run n tokens at positions c->len .. c->len + n - 1 through the model,
 * appending their keys and values to the cache (c->len grows by n): a
 * prefill over a prompt when the cache is empty, a decode step with n = 1.
 * Each token attends to every cached position and to the new ones up to
 * itself.  logits (vocab floats, may be NULL) gets the last new position's
 * logits; all_logits (n x vocab, may be NULL) every new position's.
 * 0, or -1 when ids are outside the vocabulary, the cache is full or
 * scratch cannot be allocated (the cache is then unchanged). */
int kb_llama_forward(const kb_llama_model *m, kb_llama_cache *c, const int *ids, int n, float *logits,
                     float *all_logits);

/* f_i of pair i < head_dim / 2, rope_scaling's applied: every RoPE of
 * kbench (this reference, the GPU model, the stages) takes its frequencies
 * from here. */
double kb_llama_inv_freq(const kb_llama_config *c, int i);

/* RoPE of one head's vector x (c->head_dim values, in place) at position
 * pos, in the rotate_half convention above. */
void kb_llama_rope(double *x, const kb_llama_config *c, int64_t pos);

/* The reference's two building blocks, shared with its training step
 * (reference/llama_train.c): y[n x out] = x[n x in] W^T with W [out x in];
 * y = x / sqrt(mean(x^2) + eps) * w, row by row (d wide). */
void kb_llama_linear(const double *x, int n, int in, const float *W, int out, double *y);
void kb_llama_rmsnorm(const double *x, int n, int d, const float *w, double eps, double *y);

/* The index of the largest of x[0..n), the first on ties: greedy decoding. */
int kb_llama_argmax(const float *x, int n);

#ifdef __cplusplus
}
#endif
#endif
