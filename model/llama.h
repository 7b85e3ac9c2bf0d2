/* The Llama-style model's weights (reference/llama.h has the model):
 * sizes, seeded random weights, and Hugging Face LlamaForCausalLM
 * checkpoints, a directory of config.json and model.safetensors under HF's
 * tensor names:
 *
 *   model.embed_tokens.weight                       [vocab, d]
 *   model.layers.N.input_layernorm.weight           [d]
 *   model.layers.N.self_attn.q_proj.weight          [heads * head_dim, d]
 *   model.layers.N.self_attn.k_proj.weight          [kv_heads * head_dim, d]
 *   model.layers.N.self_attn.v_proj.weight          [kv_heads * head_dim, d]
 *   model.layers.N.self_attn.o_proj.weight          [d, heads * head_dim]
 *   model.layers.N.post_attention_layernorm.weight  [d]
 *   model.layers.N.mlp.gate_proj.weight             [ff, d]
 *   model.layers.N.mlp.up_proj.weight               [ff, d]
 *   model.layers.N.mlp.down_proj.weight             [d, ff]
 *   model.norm.weight                               [d]
 *   lm_head.weight                                  [vocab, d]  (absent when tied)
 *
 * in F32, BF16 or F16, converted to fp32 on load. */
#ifndef KBENCH_MODEL_LLAMA_H
#define KBENCH_MODEL_LLAMA_H

#include <stddef.h>
#include <stdint.h>
#include "reference/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The storage dtypes a checkpoint may use. */
typedef enum { KB_LLAMA_F32, KB_LLAMA_BF16, KB_LLAMA_F16 } kb_llama_dtype;

/* Float count of all weights (lm_head only when untied), or -1 when over
 * KB_TF_MAX_FLOATS or when a size overflows. */
int64_t kb_llama_weight_count(const kb_llama_config *c);

/* Whether c is a model kbench can run: sizes from 1 to 2^30 (layers and
 * heads to 2^16), heads a multiple of kv_heads, an even head_dim, eps in
 * (0, 1], a finite rope_theta above 0, at most 2^40 weights.  0, or -1 with
 * one line in err (prefixed by what, e.g. the config's path). */
int kb_llama_config_check(const kb_llama_config *c, const char *what, char *err, size_t errlen);

/* config.json's text into *c: hidden_size, intermediate_size,
 * num_hidden_layers, num_attention_heads and vocab_size must be present;
 * num_key_value_heads (default heads), head_dim (hidden_size / heads),
 * rms_norm_eps (1e-6), rope_theta (10000), tie_word_embeddings (false) and
 * max_position_embeddings (2048) may be.  rope_scaling (or transformers
 * 5's rope_parameters) must be null, absent, of rope_type "default" or of
 * rope_type "llama3" with its four settings; hidden_act, if given, "silu"; attention_bias and mlp_bias, if
 * given, false; model_type, if given, "llama".  Other keys are ignored.
 * Then kb_llama_config_check.  0, or -1 with one line in err. */
int kb_llama_config_parse(const char *text, size_t len, const char *what, kb_llama_config *c, char *err,
                          size_t errlen);
/* The same from a file. */
int kb_llama_config_read(const char *path, kb_llama_config *c, char *err, size_t errlen);

/* Seeded weights: the embedding uniform in [-1, 1], every matrix uniform in
 * [-1/sqrt(fan_in), 1/sqrt(fan_in)], norm weights 1 + uniform [-0.1, 0.1]
 * (not exactly 1, so that a forward that drops one is caught).  c must
 * pass kb_llama_config_check.  0, or -1 when out of memory. */
int kb_llama_init_random(kb_llama_model *m, const kb_llama_config *c, uint64_t seed);

/* Load a checkpoint directory (config.json and model.safetensors), as HF's
 * strict loading would: every tensor present with its shape, none extra
 * (lm_head.weight of a tied model only when equal to the embedding), dtype
 * F32, BF16 or F16, no zero-sized dimension, no NaN or Inf.  0, or -1 with
 * *m empty and one line in err naming the file and the tensor. */
int kb_llama_load(kb_llama_model *m, const char *dir, char *err, size_t errlen);

/* Write m as a checkpoint directory (made if missing): config.json and
 * model.safetensors with its tensors in dtype (rounded to nearest even),
 * each via a temporary file renamed into place.  0, or -1 with one line. */
int kb_llama_save(const kb_llama_model *m, const char *dir, kb_llama_dtype dtype, char *err, size_t errlen);

/* Every weight by HF name in storage order: fn(name, rows, cols (0 for a
 * vector), data, user).  lm_head only when untied. */
void kb_llama_each_weight(const kb_llama_model *m,
                          void (*fn)(const char *name, int64_t rows, int64_t cols, const float *data, void *user),
                          void *user);

void kb_llama_free(kb_llama_model *m);

/* Round every weight to bf16 in place (nearest even), so that the C
 * reference runs on the values a bf16 forward stores. */
void kb_llama_round_bf16(kb_llama_model *m);

/* fp32 <-> bf16 and f16 bits, rounding to nearest even (NaN stays NaN). */
uint16_t kb_f32_to_bf16(float x);
uint16_t kb_f32_to_f16(float x);
float kb_bf16_to_f32(uint16_t h);
float kb_f16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif
#endif
