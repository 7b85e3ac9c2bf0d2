/* embed_t contract: the fp32 stages' input layer (model/stage_gpu.h),
 *     x[t, c] = scale * Et[c, ids[t]] + pe[t, c]
 * from the embedding stored transposed, Et = E^T (D x V: the LM head's
 * operand, so a tied model keeps one copy).  ids is T int32 in [0, V), pe
 * a T x D positional table, x T x D, all fp32.  A model passes pe NULL to
 * add none (the basic and modern stages; the paper stage adds its table
 * and scales by sqrt(D)); the harness checks the paper's form, scale
 * sqrt(D) with pe.  Shapes are written TxVxD.
 *
 * Bytes: ids, the gathered column of Et, pe and x, once each (each
 * element of the column is its own 32-byte sector, V floats apart, which
 * the count leaves out).  FLOPs: 2 per element.
 * Tolerance: one fused multiply-add an element (a reduction of length 1).
 * Inputs: ids spread over [0, V), Et and pe uniform in [-1, 1]. */
#ifndef KBENCH_EMBED_T_H
#define KBENCH_EMBED_T_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int T, V, D;
    float scale;
    const int *ids;
    const float *table_t; /* D x V */
    const float *pe;      /* T x D, or NULL */
    float *x;             /* T x D */
} kb_embed_t_args;

extern const kb_op kb_op_embed_t;

#ifdef __cplusplus
}
#endif
#endif
