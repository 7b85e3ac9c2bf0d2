/* The Llama-style model's training loss and every weight's gradient, in
 * double: the C reference a training step is checked against (issue 47).
 *
 * B sequences of T tokens each, every one causal from position 0 (no KV
 * cache): ids[b * T + t] in, targets[b * T + t] the token to predict there,
 * or KB_LLAMA_IGNORE to leave that position out.  The loss is the mean over
 * the counted positions of -log softmax(logits)[target], logits as
 * kb_llama_forward makes them (reference/llama.h has the maths).  The
 * gradients are d loss / d weight for every weight of the model, laid out
 * as the model's; a tied model's embedding collects both its uses.
 *
 * Every activation of the forward is kept (the attention probabilities
 * too: B * heads * T * T doubles a layer), which suits the small configs a
 * reference checks; tests/test_llama_train.c holds the gradients to
 * central differences of the loss.  With the optimizer step below, it is
 * the whole training step's reference. */
#ifndef KBENCH_REFERENCE_LLAMA_TRAIN_H
#define KBENCH_REFERENCE_LLAMA_TRAIN_H

#include "ops/adamw.h"
#include "reference/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_LLAMA_IGNORE (-100) /* a target left out of the loss, as PyTorch's ignore_index */

typedef struct {
    double *attn_norm, *wq, *wk, *wv, *wo, *mlp_norm, *w_gate, *w_up, *w_down;
} kb_llama_layer_grad;

typedef struct {
    kb_llama_config cfg;
    double *embed, *norm, *lm_head; /* lm_head == embed when tied */
    kb_llama_layer_grad *layers;
    double *storage; /* owns them all */
} kb_llama_grads;

/* Zeroed gradients for a model of c.  0, or -1 when out of memory. */
int kb_llama_grads_init(kb_llama_grads *g, const kb_llama_config *c);
void kb_llama_grads_free(kb_llama_grads *g);

/* The loss into *loss and its gradients added into g (zero it first for a
 * step's own).  0, or -1 when B or T is under 1, T past max_pos, an id
 * outside the vocabulary, a target neither in it nor KB_LLAMA_IGNORE, no
 * target counted, or out of memory. */
int kb_llama_loss_backward(const kb_llama_model *m, const int *ids, const int *targets, int B, int T, double *loss,
                           kb_llama_grads *g);

/* AdamW on the fp32 weights from the gradients, after clipping them to a
 * global norm, as torch.nn.utils.clip_grad_norm_ and torch.optim.AdamW
 * (one group: every weight decays) compute them, the adamw op's element
 * step (ops/adamw.h) at h's hyper-parameters, in double, each weight
 * rounded to fp32 once. */
/* The optimizer's moments, laid out as the weights, and its step count. */
typedef struct {
    double *m, *v;
    int64_t n;
    int t;
} kb_llama_adam_state;

int kb_llama_adam_init(kb_llama_adam_state *s, const kb_llama_config *c); /* 0, or -1 out of memory */
void kb_llama_adam_free(kb_llama_adam_state *s);
/* One step on m's weights (its storage) from g; returns the gradients'
 * global norm before clipping, as clip_grad_norm_ does. */
double kb_llama_adamw_step(kb_llama_model *m, const kb_llama_grads *g, kb_llama_adam_state *s,
                           const kb_adamw_hyper *h);

#ifdef __cplusplus
}
#endif
#endif
