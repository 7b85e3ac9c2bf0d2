/* softmax_backward contract: the gradient of softmax (ops/softmax.h) over
 * the rows of an R x C matrix, from the forward's output y and dy:
 *     dx = y * (dy - sum_j dy_j y_j)
 * as torch's softmax backward computes it (from y, not x).  Shapes are
 * written RxC; any R, C >= 1.
 *
 * Two forms: f32, and bf16 (y, dy and dx bf16, the arithmetic fp32).
 *
 * Tensors: y and dy in; dx out (R rows of C, each element the end of a
 * reduction over its row: C long).  y is the forward's output: the op fills
 * it with the softmax, in double and stored in fp32, of logits uniform in
 * [-4, 4] (rounded to bf16 for that form), so the backward sees real
 * probability rows.  When R >= 4 and
 * C >= 2, rows 0-2 are the forward's numerics rows: row 0 nearly one-hot
 * (logits shifted by 1000 at column 0: y is 1 there and 0 elsewhere, up
 * to fp32), row 1 with every third entry masked (y = 0), row 2 all masked
 * (y = 0, so dx = 0).  dy is uniform in [-1, 1].
 * Bytes: y, dy read and dx written once (12 R C in f32, 6 R C in bf16).  FLOPs: counted as 4 per
 * element (multiply-add into the sum, subtract, multiply). */
#ifndef KBENCH_SOFTMAX_BACKWARD_H
#define KBENCH_SOFTMAX_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const void *y, *dy; /* the form's dtype */
    void *dx;
} kb_softmax_backward_args;

extern const kb_op kb_op_softmax_backward;

enum { KB_SMB_Y, KB_SMB_DY, KB_SMB_DX, KB_SMB_TENSORS };

/* Reference rows of dx in double from the stored y and dy (of dtype t). */
void softmax_backward_reference(int64_t C, kb_dtype t, const void *y, const void *dy, const int64_t *rows, int nrows,
                                double *ref);
/* Rows of y as the op makes them: softmax in double of the logits already
 * in y (R x C, fp32), stored back in fp32. */
void softmax_backward_probabilities(int64_t R, int64_t C, float *y);

#ifdef __cplusplus
}
#endif
#endif
