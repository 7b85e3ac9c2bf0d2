/* transpose contract: y (C x R) = x (R x C)^T, fp32, row-major.  Shapes
 * are written RxC; any R, C >= 1.
 * Bytes: x read and y written once (8*R*C).  FLOPs: none.
 * Tolerance: exact (a copy).  Inputs: uniform in [-1, 1]. */
#ifndef KBENCH_TRANSPOSE_H
#define KBENCH_TRANSPOSE_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int R, C;
    const float *x; /* R x C */
    float *y;       /* C x R */
} kb_transpose_args;

extern const kb_op kb_op_transpose;

#ifdef __cplusplus
}
#endif
#endif
