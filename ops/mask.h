/* mask contract: the causal mask on attention scores, in place,
 *     s[i][j] = value   for j > i + C - R   (a key after the query)
 * over an R x C fp32 score matrix, query i's row over C keys, aligned to
 * the bottom right as the attention op's mask is (R = C: j > i); the rest
 * of s is left as it is.  The models pass value = -inf, which the softmax
 * that follows turns into 0; the harness, whose check refuses any
 * non-finite output, binds -1e30 in its place (the kernel writes `value`
 * either way).  Shapes are written RxC.
 *
 * Bytes: the masked entries written (nothing is read).  FLOPs: none.
 * Tolerance: exact.  Inputs: uniform in [-1, 1]. */
#ifndef KBENCH_MASK_H
#define KBENCH_MASK_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_MASK_CHECKED_VALUE (-1e30f)

typedef struct {
    int R, C;
    float value;
    float *s; /* R x C, in place */
} kb_mask_args;

extern const kb_op kb_op_mask;

#ifdef __cplusplus
}
#endif
#endif
