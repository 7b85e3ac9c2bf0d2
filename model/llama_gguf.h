/* The Llama-style model (model/llama.h) from a GGUF file written by
 * llama.cpp's converter: its hyperparameters from the llama.* keys, its
 * weights under llama.cpp's names, dequantized to fp32 in the layout the
 * safetensors loader gives:
 *
 *   token_embd.weight          model.embed_tokens.weight
 *   blk.N.attn_norm.weight     model.layers.N.input_layernorm.weight
 *   blk.N.attn_q.weight        model.layers.N.self_attn.q_proj.weight  (rows un-permuted)
 *   blk.N.attn_k.weight        model.layers.N.self_attn.k_proj.weight  (rows un-permuted)
 *   blk.N.attn_v.weight        model.layers.N.self_attn.v_proj.weight
 *   blk.N.attn_output.weight   model.layers.N.self_attn.o_proj.weight
 *   blk.N.ffn_norm.weight      model.layers.N.post_attention_layernorm.weight
 *   blk.N.ffn_gate/up/down     model.layers.N.mlp.gate/up/down_proj.weight
 *   output_norm.weight         model.norm.weight
 *   output.weight              lm_head.weight (absent: tied to the embedding)
 *
 * llama.cpp's converter reorders each head's rows of Wq and Wk so that
 * RoPE's pairs are adjacent (interleaved, Meta's convention): HF row
 * s * head_dim/2 + i of a head is GGUF row 2i + s.  kbench rotates HF's
 * rotate_half pairs (reference/llama.h), so the load reverses that. */
#ifndef KBENCH_MODEL_LLAMA_GGUF_H
#define KBENCH_MODEL_LLAMA_GGUF_H

#include <stddef.h>
#include "formats/gguf.h"
#include "model/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

/* general.architecture must be "llama"; llama.block_count,
 * embedding_length, feed_forward_length, attention.head_count,
 * attention.layer_norm_rms_epsilon and context_length are required;
 * attention.head_count_kv (default: heads), rope.freq_base (10000),
 * attention.key_length / value_length (equal; d / heads) and
 * rope.dimension_count (head_dim) may be given; rope scaling must be absent
 * or "none".  The vocabulary is tokenizer.ggml.tokens' count, else
 * llama.vocab_size.  Every tensor present with its shape and a type
 * kb_gguf_dequantize converts, none extra, no NaN or Inf.  0, or -1 with *m
 * empty and one line in err. */
int kb_llama_from_gguf(kb_llama_model *m, const kb_gguf_file *f, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
