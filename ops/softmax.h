/* softmax contract: y[r, :] = softmax(x[r, :]) over the last dim of an R x C
 * matrix, row-major, in the variant's dtype (f32 or f16; fp32 math).
 * Shapes are written RxC; any R, C >= 1.
 *
 * Bytes: x read once, y written once (8*R*C).  FLOPs: counted as 5 per
 * element (max, subtract, exp, sum, scale); the measure is GB/s against the
 * copy ceiling.
 * Numerics, which every variant must honour:
 *   - it is shift-invariant: [1000, 1001] gives [0.269, 0.731];
 *   - a -inf entry (a masked position) gives 0;
 *   - a row that is entirely -inf gives an all-zero row (a convention: there
 *     is no distribution over no positions, and zeros keep a masked
 *     attention row from poisoning what follows with NaN).
 * Inputs: uniform in [-1, 1]; when R >= 4 and C >= 2, rows 0-2 are numerics
 * rows (row 0 shifted by +1000, row 1 with every third entry -inf, row 2
 * all -inf), so every run also checks them.  Row 2 is left random for a
 * variant with KB_QUIRK_NAN_ON_MASKED_ROW (cuDNN). */
#ifndef KBENCH_SOFTMAX_H
#define KBENCH_SOFTMAX_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const float *x;
    float *y;
} kb_softmax_args;

extern const kb_op kb_op_softmax;

/* Reference rows in double, with the conventions above, from x of dtype t. */
void softmax_reference_rows(int C, kb_dtype t, const void *x, const int64_t *rows, int nrows, double *y);

#ifdef __cplusplus
}
#endif
#endif
