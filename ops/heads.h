/* The head layout around attention, two ops (ops/merge_heads.c and
 * ops/split_heads.c), in f32 and in bf16 (stored in either, a copy):
 *
 * split_heads: x (B, T, P, H, D) -> P tensors (B, H, T, D).  A row of x is
 *   one token's P parts side by side (the fused q | k | v product's, or
 *   k | v for cross-attention), each H heads of D; part p lands in output
 *   p in the layout the attention op reads.  Shapes BxTxPxHxD, P from 1
 *   to 3 (exit 2 otherwise).
 * merge_heads: o (B, H, T, D) -> y (B, T, H D), attention's output as the
 *   token-major input of the output projection.  Shapes BxHxTxD.
 *
 * Bytes: every element read once and written once.  FLOPs: none.
 * Tolerance: exact (a copy).  Inputs: uniform in [-1, 1]. */
#ifndef KBENCH_HEADS_H
#define KBENCH_HEADS_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_SPLIT_MAX_PARTS 3

/* f32 or bf16 elements by the variant's dtype (bf16 bit patterns). */
typedef struct {
    int B, T, P, H, D;
    const void *x;                      /* B x T x (P H D) */
    void *out[KB_SPLIT_MAX_PARTS];      /* each B x H x T x D; out[p] for p < P */
} kb_split_heads_args;

typedef struct {
    int B, H, T, D;
    const void *o; /* B x H x T x D */
    void *y;       /* B x T x (H D) */
} kb_merge_heads_args;

extern const kb_op kb_op_split_heads, kb_op_merge_heads;

#ifdef __cplusplus
}
#endif
#endif
