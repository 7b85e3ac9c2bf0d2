/* The paper stage's causal language model (model/stages.h), as the
 * original Transformer paper builds one from its decoder-side pieces:
 *
 *   x_t      = sqrt(d) E[ids_t] + PE(t)        PE(t, 2i) = sin(t / 10000^(2i/d)),
 *                                              PE(t, 2i+1) = cos(...)
 *   per layer (post-LN, nn.TransformerEncoderLayer with a causal mask):
 *              x = LN1(x + SelfAttn(x, causal));  x = LN2(x + FFN(x))
 *   logits_t = x_t head^T                      (head = E when tied; no bias)
 *
 * with E [vocab, d], the stack of an encoder-only kb_tf_model whose
 * cfg.enc_causal is set, and every activation in double (the stack is
 * reference/transformer.c's). */
#ifndef KBENCH_REFERENCE_STAGE_PAPER_H
#define KBENCH_REFERENCE_STAGE_PAPER_H

#include "model/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The logits of positions first..n-1 of ids[0..n) into logits
 * ((n - first) x vocab).  0, or -1 when out of memory. */
int kb_paper_reference(const kb_tf_model *m, const float *embed, const float *head, int vocab, const int *ids, int n,
                       int first, float *logits);

#ifdef __cplusplus
}
#endif
#endif
