/* rope_backward contract: the gradient of rope (ops/rope.h) as a training
 * step needs it, the exact adjoint of the forward's layout without the
 * cache (a prefill from position 0, P = 0):
 *     dq (H, T, D), dk (KV, T, D), dv (KV, T, D) in: the gradients of
 *       rope's q and of its k and v rows (attention's backward writes them
 *       head by head, as the forward's q and cache hold them)
 *     dqkv (T, H + 2 KV, D) out: the gradient of rope's qkv, token t's H
 *       query heads, KV key heads and KV value heads, the one matrix the
 *       fused QKV projection's backward reads
 *   each query and key pair (x[i], x[i + D/2]) of token t turned back by
 *   the forward's angle t theta^(-2i/D), theta = 10000 (the transpose of
 *   its rotation): (da, db) -> (da cos + db sin, db cos - da sin); value
 *   heads' gradients copied.
 * Shapes are written TxHxKVxD; positions run from 0 (a training sequence
 * keeps no cache, so there is no P field), D must be even (exit 2
 * otherwise).  Two dtypes, as the variant's: f32, or dq, dk, dv and dqkv
 * in bf16 with fp32 arithmetic, each gradient rounded once.
 *
 * inv_freq, theta^(-2i/D) rounded to fp32 (D/2 floats), is derived from
 * theta by prepare, as rope's: variants take each angle as sincosf of
 * t * inv_freq[i] in fp32, the forward's sincos variant's angle.
 * Bytes: dq, dk and dv read and dqkv written once, 2 T (H + 2 KV) D
 * elements (inv_freq, D/2 floats, is not counted).  FLOPs: 6 per turned
 * pair, 3 T (H + KV) D.
 * Tolerance: as rope's, the angle t f_i is rounded to fp32 before sincosf,
 * an error up to t 2^-23, so dqkv's reduction length is T.
 * Inputs: dq, dk and dv uniform in [-1, 1]. */
#ifndef KBENCH_ROPE_BACKWARD_H
#define KBENCH_ROPE_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dq, dk, dv and dqkv of the variant's dtype (bf16 bit patterns for bf16). */
typedef struct {
    int T, H, KV, D;
    const void *dq;          /* H x T x D */
    const void *dk, *dv;     /* KV x T x D */
    const float *inv_freq;   /* D/2 */
    void *dqkv;              /* T x (H + 2 KV) x D */
} kb_rope_backward_args;

extern const kb_op kb_op_rope_backward;

enum { KB_RPB_DQ, KB_RPB_DK, KB_RPB_DV, KB_RPB_INV_FREQ, KB_RPB_DQKV, KB_RPB_TENSORS };

/* Reference rows of dqkv (tokens, (H + 2 KV) D each) in double, from dq,
 * dk and dv of dtype t. */
void rope_backward_reference(int64_t T, int64_t H, int64_t KV, int64_t D, kb_dtype t, const void *dq,
                             const void *dk, const void *dv, const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
