/* rmsnorm_backward contract: the gradients of rmsnorm (ops/rmsnorm.h) over
 * an R x C matrix, given the forward's input x, gamma, its saved rstd
 * (one a row) and dy:
 *     xhat   = x * rstd,   g = dy * gamma
 *     dx     = rstd * (g - xhat * mean_j(g xhat))
 *     dgamma = sum over rows of dy xhat
 * as torch.nn.RMSNorm's backward computes them.  Shapes are written RxC;
 * any R >= 1 and C >= 2.  At C = 1, dx = rstd g eps / (x^2 + eps): two
 * terms up to 1/sqrt(eps) = 316 times the result cancel, and fp32 cannot
 * give it to the tolerance's bound (measured: a relative L2 error of 3e-5,
 * naive and fused alike), so the op's shapes leave C = 1 out.
 *
 * Two forms: f32, and bf16, where x, gamma, dy, dx and dgamma are bf16 (a
 * bf16 training loop's activations, weights and gradients) and rstd stays
 * fp32; both accumulate in fp32.
 *
 * Tensors: x, gamma, dy, rstd in; dx (R rows of C, each element the end of
 * a reduction over its row: C long) and dgamma (C rows of one element, each
 * a sum over the R rows) out.  rstd is derived: the op's prepare computes
 * 1 / sqrt(mean(x^2) + eps) in double from x and stores it in fp32, as the
 * forward would save it.
 * Bytes: x, dy and dx once (12 R C in f32, 6 R C in bf16), rstd (4 R),
 * gamma and dgamma (8 C, or 4 C).
 * FLOPs: counted as 10 per element.
 * Inputs: uniform in [-1, 1], with rmsnorm's numerics rows planted in x
 * (a row scaled by 1e-3, where eps matters, and one offset by 1e4). */
#ifndef KBENCH_RMSNORM_BACKWARD_H
#define KBENCH_RMSNORM_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const void *x, *gamma, *dy; /* the form's dtype */
    const float *rstd;
    void *dx, *dgamma;
} kb_rmsnorm_backward_args;

extern const kb_op kb_op_rmsnorm_backward;

/* Tensor indices, in the op's order. */
enum { KB_RMB_X, KB_RMB_GAMMA, KB_RMB_DY, KB_RMB_RSTD, KB_RMB_DX, KB_RMB_DGAMMA, KB_RMB_TENSORS };

/* rstd of every row of x (R x C of dtype t) in double, stored in fp32. */
void rmsnorm_backward_stats(int64_t R, int64_t C, double eps, kb_dtype t, const void *x, float *rstd);
/* Reference rows of dx (rows of x) or, for KB_RMB_DGAMMA, dgamma at the
 * listed columns, in double. */
void rmsnorm_backward_reference(int64_t R, int64_t C, kb_dtype t, const void *x, const void *gamma, const void *dy,
                                const float *rstd, int which, const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
