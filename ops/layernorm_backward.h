/* layernorm_backward contract: the gradients of layernorm (ops/layernorm.h)
 * over an R x C matrix, given the forward's input x, gamma, its saved
 * statistics mean and rstd (one each a row), and dy:
 *     xhat   = (x - mean) * rstd
 *     dx     = rstd * (dy gamma - mean_j(dy gamma) - xhat mean_j(dy gamma xhat))
 *     dgamma = sum over rows of dy xhat,   dbeta = sum over rows of dy
 * as torch.nn.LayerNorm's backward computes them.  Shapes are written RxC;
 * any R, C >= 1.
 *
 * Two forms: f32, and bf16, where x, gamma, dy, dx, dgamma and dbeta are
 * bf16 (a bf16 training loop's activations, weights and gradients) and
 * mean and rstd stay fp32; both accumulate in fp32.
 *
 * Tensors: x, gamma, dy, mean, rstd in; dx (R rows of C, each element the
 * end of reductions over its row: C long), dgamma and dbeta (C rows of one
 * element, each a sum over the R rows) out.  mean and rstd are derived:
 * the op's prepare computes them from x in double and stores them in fp32,
 * as the forward saves them, so the kernels and the reference read the same.
 * Bytes: x, dy and dx once (12 R C in f32, 6 R C in bf16), mean and rstd
 * (8 R), gamma, dgamma and dbeta (12 C, or 6 C).  FLOPs: counted as 14 per element.
 * Inputs: uniform in [-1, 1], with layernorm's numerics rows planted in x
 * (mean 1e4 with variance 1e-2, a constant row, a row scaled by 100). */
#ifndef KBENCH_LAYERNORM_BACKWARD_H
#define KBENCH_LAYERNORM_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const void *x, *gamma, *dy; /* the form's dtype */
    const float *mean, *rstd;
    void *dx, *dgamma, *dbeta;
} kb_layernorm_backward_args;

extern const kb_op kb_op_layernorm_backward;

/* Tensor indices, in the op's order. */
enum { KB_LNB_X, KB_LNB_GAMMA, KB_LNB_DY, KB_LNB_MEAN, KB_LNB_RSTD, KB_LNB_DX, KB_LNB_DGAMMA, KB_LNB_DBETA,
       KB_LNB_TENSORS };

/* mean and rstd of every row of x (R x C of dtype t) in double, stored in
 * fp32. */
void layernorm_backward_stats(int64_t R, int64_t C, double eps, kb_dtype t, const void *x, float *mean, float *rstd);
/* Reference rows of dx (rows of x) or, with columns set, of dgamma and dbeta
 * at the listed columns (their "rows"), in double; `which` is KB_LNB_DX,
 * KB_LNB_DGAMMA or KB_LNB_DBETA. */
void layernorm_backward_reference(int64_t R, int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy,
                                  const float *mean, const float *rstd, int which, const int64_t *rows, int nrows,
                                  double *ref);

#ifdef __cplusplus
}
#endif
#endif
