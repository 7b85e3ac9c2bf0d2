/* adamw contract: one fused AdamW step of a mixed-precision training loop
 * over N parameters in one flat buffer, with the gradient clipped to a
 * global norm first, as torch.nn.utils.clip_grad_norm_ and then
 * torch.optim.AdamW compute them:
 *     norm  = sqrt(sum over the N elements of grad^2)
 *     c     = min(1, max_norm / (norm + 1e-6))      (clip_grad_norm_'s)
 *     g     = c grad
 *     m'    = beta1 m + (1 - beta1) g
 *     v'    = beta2 v + (1 - beta2) g^2
 *     master' = master (1 - lr wd) - lr / (1 - beta1^t) m'
 *               / (sqrt(v') / sqrt(1 - beta2^t) + eps)
 *     param = master' rounded to bf16
 * with the hyper-parameters fixed: lr 1e-3, beta1 0.9, beta2 0.95, eps
 * 1e-8, weight decay 0.1, max_norm 1.0, and step t = 10 (this is the
 * tenth step), so that both bias corrections matter (0.651 and 0.401).
 * Shapes are written N (at most 2^31 - 1).  Two dtypes, the gradient's:
 * f32, or bf16 (the backward's); master, m and v are fp32 and param bf16
 * in both, and the arithmetic is fp32 in both (math f32: the bf16
 * gradient widens exactly, param is checked at one bf16 rounding, the
 * fp32 outputs at fp32's).
 *
 * Tensors: grad in; master, m and v inout (the harness restores them
 * before every launch); param out; norm out, one fp32 element, the global
 * norm before clipping, as clip_grad_norm_ returns it for the log.  Every
 * output is one row, the reference computing all of it.  Variants compute
 * the norm themselves, a reduction over all of grad before any update:
 * two passes over grad.
 * Bytes: each tensor once, an inout twice: 26 + 2 (bf16 gradients) or
 * 4 (f32) per element, norm's 4 once; the norm pass's second read of grad
 * is not counted (the step needs the norm before its first update), so a
 * variant that streams everything once tops out at 28/30 (bf16) or 30/34
 * (f32) of the memory ceiling.  FLOPs: counted as 18 per element.
 * Tolerance: param, master, m and v at reduction length 1: each depends
 * on the norm only through c, which enters as c grad; norm at N.
 * Inputs: grad and master uniform in [-1, 1]; m uniform in [-s, s] and v
 * the square of another uniform in [-s, s], s = min(1, max_norm /
 * sqrt(N / 3)) the clipped gradient's expected size, so that m' and v'
 * depend on g as much as on m and v and the step's ratio is of order 1
 * (at large N v is below the fp32 bound's absolute term, 1.2e-6, so its
 * stores are checked by the smaller sizes and through master').  When
 * N >= 2 element 0 has grad and v zero: its denominator is eps alone. */
#ifndef KBENCH_ADAMW_H
#define KBENCH_ADAMW_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_ADAMW_LR 1e-3
#define KB_ADAMW_BETA1 0.9
#define KB_ADAMW_BETA2 0.95
#define KB_ADAMW_EPS 1e-8
#define KB_ADAMW_WEIGHT_DECAY 0.1
#define KB_ADAMW_STEP 10
#define KB_ADAMW_MAX_NORM 1.0
#define KB_ADAMW_CLIP_EPS 1e-6 /* clip_grad_norm_'s, added to the norm */

/* grad of the variant's dtype (bf16 bit patterns for bf16); param bf16. */
typedef struct {
    int64_t n;
    const void *grad;
    float *master, *m, *v;
    void *param;
    float *norm;
} kb_adamw_args;

extern const kb_op kb_op_adamw;

enum { KB_ADW_GRAD, KB_ADW_MASTER, KB_ADW_M, KB_ADW_V, KB_ADW_PARAM, KB_ADW_NORM, KB_ADW_TENSORS };

/* The sum of grad's squares (n elements of dtype t) in double. */
double adamw_grad_sumsq(int64_t n, kb_dtype t, const void *grad);
/* clip_grad_norm_'s factor for that sum, at the op's max_norm. */
double adamw_clip_scale(double sumsq);

/* The step's hyper-parameters: the op's are the KB_ADAMW_ constants; the
 * model's training reference (reference/llama_train.h) passes its own. */
typedef struct {
    double lr, beta1, beta2, eps, weight_decay, max_norm;
} kb_adamw_hyper;
/* clip_grad_norm_'s factor for a sum of squares under h->max_norm. */
double adamw_clip_for(const kb_adamw_hyper *h, double sumsq);
/* One element's step in double from its clipped gradient g, with the bias
 * corrections bc1 = 1 - beta1^t and bc2 = 1 - beta2^t: m and v updated in
 * place, the new master returned. */
double adamw_element_step(const kb_adamw_hyper *h, double g, double master, double *m, double *v, double bc1,
                          double bc2);
/* Output `which` (KB_ADW_MASTER, M, V or PARAM: all n elements; NORM: one)
 * of the step in double from the inputs as they stand before it. */
void adamw_reference(int64_t n, kb_dtype t, const void *grad, const float *master, const float *m, const float *v,
                     int which, double *ref);

#ifdef __cplusplus
}
#endif
#endif
