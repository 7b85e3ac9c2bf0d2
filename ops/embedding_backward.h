/* embedding_backward contract: the gradient of a token embedding (gather,
 * ops/gather.h) with respect to its table,
 *     dE[v, :] = sum over the tokens t with ids[t] = v of dx[t, :]
 * a scatter-add of T rows of dx (T x D, fp32) into the V x D table
 * gradient (fp32).  Every row of dE is written: rows no token names are
 * zeros.  Shapes are written TxVxD, as gather's.
 *
 * Tensors: ids (T, i32) and dx in; dE out (V rows of D, each a sum of as
 * many dx rows as tokens name it: up to T).  Bytes: ids and dx read, dE
 * written once.  FLOPs: T D adds.
 * Inputs: ids spread over [0, V), dx uniform in [-1, 1]; when T >= 8,
 * every fourth token is id 0 (a frequent token: one row of dE sums a
 * quarter of dx, where atomics contend).  The order of the sum is a
 * variant's choice; the deterministic ones state theirs. */
#ifndef KBENCH_EMBEDDING_BACKWARD_H
#define KBENCH_EMBEDDING_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int T, V, D;
    const int *ids;
    const float *dx; /* T x D */
    float *dE;       /* V x D */
} kb_embedding_backward_args;

extern const kb_op kb_op_embedding_backward;

enum { KB_EMB_IDS, KB_EMB_DX, KB_EMB_DE, KB_EMB_TENSORS };

/* Reference rows of dE in double. */
void embedding_backward_reference(int64_t T, int64_t D, const int *ids, const float *dx, const int64_t *rows,
                                  int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
