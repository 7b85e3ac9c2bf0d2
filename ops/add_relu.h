/* add_relu contract: y = max(x + r, 0) over R x C fp32 matrices, the
 * elementwise tail of a residual branch.  Shapes are written RxC.
 * Bytes: x and r read, y written (12*R*C).  FLOPs: 2 per element.
 * Tolerance: exact in effect (a reduction of length 1).
 * Inputs: uniform in [-1, 1], so about half the sums are clamped. */
#ifndef KBENCH_ADD_RELU_H
#define KBENCH_ADD_RELU_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const float *x, *r;
    float *y;
} kb_add_relu_args;

extern const kb_op kb_op_add_relu;

#ifdef __cplusplus
}
#endif
#endif
