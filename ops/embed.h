/* embed contract: the transformer's input layer,
 *     y[b, t, :] = table[ids[b, t], :] + PE(t, :)
 * ids is (B, T) int32 in [0, V), table is (V, D) fp32, y is (B, T, D) fp32,
 * PE is ops/posenc.h's table (the seeds' convention).  Shapes are
 * written BxTxVxD.
 *
 * Bytes: ids and the gathered table rows read once, y written once
 * (4*B*T + 8*B*T*D).  FLOPs: B*T*D adds.
 * Tolerance: PE's angle rounding, as posenc: the reduction length is T^2.
 * Inputs: ids uniform over [0, V), the table uniform in [-1, 1]. */
#ifndef KBENCH_EMBED_H
#define KBENCH_EMBED_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int B, T, V, D;
    const int *ids;
    const float *table;
    float *y;
} kb_embed_args;

extern const kb_op kb_op_embed;

/* Token ids spread over [0, V), as integral floats, from a seeded draw:
 * the ids input of embed, gather and embed_t. */
void kb_fill_ids(float *x, int64_t n, int64_t V, uint64_t seed);
/* The fill of those ops: tensor 0 their ids, the others uniform. */
void kb_fill_embedding(int i, int64_t V, float *x, int64_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
