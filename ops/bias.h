/* bias contract: y (R x C, in place) += b along each row, then ReLU with
 * the `r` suffix: a linear layer's bias and activation after its product
 * (the basic stage's: the document's B added "to each column", its
 * columns being our rows).  fp32.  Shapes are written RxC, or RxCr.
 * Bytes: y read and written, b read (8*R*C + 4*C).  FLOPs: 1 per element,
 * 2 with the ReLU.
 * Tolerance: one rounding an element.  Inputs: uniform in [-1, 1], so
 * about half the sums are clamped. */
#ifndef KBENCH_BIAS_H
#define KBENCH_BIAS_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    int relu;
    const float *b; /* C */
    float *y;       /* R x C */
} kb_bias_args;

extern const kb_op kb_op_bias;

#ifdef __cplusplus
}
#endif
#endif
