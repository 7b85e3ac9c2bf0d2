/* add contract: y = x + r over N fp32 elements (a residual sum; a model
 * may pass y = x, in place).  Shapes are written N.
 * Bytes: x and r read, y written (12*N).  FLOPs: 1 per element.
 * Tolerance: one rounding an element.  Inputs: uniform in [-1, 1]. */
#ifndef KBENCH_ADD_H
#define KBENCH_ADD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t n;
    const float *x, *r;
    float *y;
} kb_add_args;

extern const kb_op kb_op_add;

#ifdef __cplusplus
}
#endif
#endif
