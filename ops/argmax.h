/* argmax contract: the greedy pick, y[r] = the index of the largest of
 * x[r, 0..C), the first on ties, for R rows of C fp32 logits; y is int32.
 * Shapes are written RxC.  (Variants that order the floats by their bits
 * count +0 above -0; the inputs hold neither as a row's largest.)
 *
 * Bytes: x read once, y written (4*R*C + 4*R).  FLOPs: one compare per
 * element.  The check compares indices exactly.
 * Inputs: uniform in [-1, 1]; when R >= 2 and C >= 2, row 0 is one value
 * throughout (index 0 by the ties rule) and row 1 holds its largest value
 * twice, at C/2 and at C - 1 (index C/2). */
#ifndef KBENCH_ARGMAX_H
#define KBENCH_ARGMAX_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const float *x; /* R x C */
    int *y;         /* R */
} kb_argmax_args;

extern const kb_op kb_op_argmax;

#ifdef __cplusplus
}
#endif
#endif
