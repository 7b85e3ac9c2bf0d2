/* gather contract: a model's token embedding as its fp32 residual stream,
 *     x[t, :] = E[ids[t], :]
 * ids is T int32 in [0, V), E is V x D row-major in the variant's dtype
 * (f32, or bf16: the Llama model's table), x is T x D fp32 whatever E's
 * type (bf16 widens exactly).  Shapes are written TxVxD.
 *
 * Bytes: ids, the T gathered rows of E and x, once each.  FLOPs: none.
 * Tolerance: exact (a copy).
 * Inputs: ids spread over [0, V), E uniform in [-1, 1]. */
#ifndef KBENCH_GATHER_H
#define KBENCH_GATHER_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int T, V, D;
    const int *ids;
    const void *table; /* V x D, f32 or bf16 bit patterns by the variant's dtype */
    float *x;          /* T x D */
} kb_gather_args;

extern const kb_op kb_op_gather;

#ifdef __cplusplus
}
#endif
#endif
