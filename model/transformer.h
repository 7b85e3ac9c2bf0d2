/* The post-LN Transformer encoder-decoder of torch.nn.Transformer, as kbench
 * runs it.  Weights use PyTorch's layout and names, so a state_dict saved
 * with safetensors maps onto them directly:
 *
 *   encoder.layers.N.self_attn.in_proj_weight  [3d, d]  (q, k, v stacked)
 *   encoder.layers.N.self_attn.in_proj_bias    [3d]
 *   encoder.layers.N.self_attn.out_proj.weight [d, d]   (.bias [d])
 *   encoder.layers.N.linear1.weight [ff, d]  (.bias [ff])
 *   encoder.layers.N.linear2.weight [d, ff]  (.bias [d])
 *   encoder.layers.N.norm1.weight [d] (.bias), norm2
 *   decoder.layers.N.self_attn..., .multihead_attn..., linear1/2, norm1..3
 *   encoder.norm.weight/.bias, decoder.norm.weight/.bias (the final norms)
 *
 * A linear layer computes y = x W^T + b.  Layers:
 *   encoder: x = LN1(x + SelfAttn(x)); x = LN2(x + FFN(x))
 *   decoder: y = LN1(y + SelfAttn(y, causal)); y = LN2(y + CrossAttn(y, mem));
 *            y = LN3(y + FFN(y))
 * with FFN(x) = linear2(relu(linear1(x))), and the final encoder and decoder
 * norms after the stacks. */
#ifndef KBENCH_TRANSFORMER_H
#define KBENCH_TRANSFORMER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int d_model, heads, d_ff, enc_layers, dec_layers;
    float eps;        /* LayerNorm epsilon (PyTorch: 1e-5) */
    int causal;       /* the decoder's self-attention is causal */
    int enc_causal;   /* the encoder's is too: a causal LM's stack (model/stages.h's paper) */
} kb_tf_config;

typedef struct {
    const float *in_w, *in_b;    /* [3d, d], [3d] */
    const float *out_w, *out_b;  /* [d, d], [d] */
} kb_tf_attn;

typedef struct {
    const float *w, *b;          /* [d], [d] */
} kb_tf_norm;

typedef struct {
    kb_tf_attn self_attn, cross_attn;     /* cross_attn: decoder only */
    const float *w1, *b1, *w2, *b2;       /* [ff, d], [ff], [d, ff], [d] */
    kb_tf_norm norm1, norm2, norm3;       /* norm3: decoder only */
} kb_tf_layer;

typedef struct {
    kb_tf_config cfg;
    kb_tf_layer *enc, *dec;
    kb_tf_norm enc_norm, dec_norm;
    float *storage;                      /* owns every weight when random */
    void *weights_file;                  /* the open kb_st_file when loaded */
} kb_tf_model;

/* The most floats kbench puts in any one buffer it sizes from input (2^40,
 * 4 TiB): beyond any host, and low enough that the byte counts and sums of
 * a few such buffers cannot overflow int64. */
#define KB_TF_MAX_FLOATS ((int64_t)1 << 40)

/* a * b + c for sizes, -1 when an operand is negative or the result
 * overflows, so that a chain of them needs one check at its end. */
static inline int64_t kb_size_muladd(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    if (a < 0 || b < 0 || c < 0 || __builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
        return -1;
    return r;
}

/* Float count of all weights, for one allocation; -1 when it is over
 * KB_TF_MAX_FLOATS. */
int64_t kb_tf_weight_count(const kb_tf_config *c);
/* Seeded weights: matrices uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)],
 * biases small, norms gamma 1 and beta 0, as PyTorch initializes them.
 * 0 on success, -1 when out of memory or over KB_TF_MAX_FLOATS. */
int kb_tf_init_random(kb_tf_model *m, const kb_tf_config *c, uint64_t seed);
/* Load a torch.nn.Transformer state_dict saved with safetensors (PyTorch's
 * names, fp32).  d_model, d_ff and the layer counts come from the file;
 * heads (which the weights do not record) and causal come from the caller.
 * As PyTorch's strict load_state_dict, a file with a tensor the model does
 * not have is refused, and so are zero-sized dimensions and NaN or Inf.
 * 0 on success, else -1 with one line in err naming the file and tensor. */
int kb_tf_load(kb_tf_model *m, const char *path, int heads, int causal, char *err, size_t errlen);
/* The safetensors name of every weight, in the order kb_tf_init_random
 * lays them out, for writers: calls fn(name, ndim, shape, data, user). */
void kb_tf_each_weight(const kb_tf_model *m,
                       void (*fn)(const char *name, int ndim, const int64_t *shape, const float *data,
                                  void *user),
                       void *user);
/* Write the weights as .safetensors under PyTorch's names, via a temporary
 * file renamed into place.  0, or -1 with one line in err. */
int kb_tf_save(const kb_tf_model *m, const char *path, char *err, size_t errlen);
void kb_tf_free(kb_tf_model *m);

/* The index of the first NaN or Inf among x[0..n), or -1 when all are finite. */
int64_t kb_first_nonfinite(const float *x, int64_t n);

/* What a forward runs.  encoder and decoder are bare layer stacks
 * (nn.TransformerEncoder / nn.TransformerDecoder without a norm; the
 * decoder's memory is the source as given); seq2seq is nn.Transformer:
 * the encoder stack and its final norm, then the decoder stack over that
 * memory and its final norm. */
typedef enum { KB_TF_ENCODER, KB_TF_DECODER, KB_TF_SEQ2SEQ } kb_tf_mode;

/* The C reference forward of one sequence, accumulating in double.  src is
 * Ts x d, tgt is Tt x d (embedded activations; unused by the encoder); out
 * is Ts x d for the encoder, else Tt x d.  0, or -1 when out of memory for
 * its scratch. */
int kb_tf_reference_seq(const kb_tf_model *m, kb_tf_mode mode, int Ts, int Tt, const float *src,
                        const float *tgt, float *out);
/* seq2seq over a batch: src is B x Ts x d, tgt is B x Tt x d; out is B x Tt x d.
 * 0, or -1 when out of memory. */
int kb_tf_reference(const kb_tf_model *m, int B, int Ts, int Tt, const float *src, const float *tgt,
                    float *out);

#ifdef __cplusplus
}
#endif
#endif
