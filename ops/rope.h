/* rope contract: rotary position embedding of a fused QKV product, as the
 * Llama models lay it out (HF's rotate_half pairs), with the keys and
 * values scattered into a KV cache:
 *     qkv is T x (H + 2 KV) x D: token t's H query heads, KV key heads and
 *       KV value heads of D, at position P + t;
 *     q (H, T, D)       = rot(query heads)
 *     k (KV, P + T, D)  rows P.. = rot(key heads); rows < P kept
 *     v (KV, P + T, D)  rows P.. = the value heads; rows < P kept
 *   rot turns each pair (x[i], x[i + D/2]) by the angle pos * theta^(-2i/D),
 *   theta = 10000: (a, b) -> (a cos - b sin, b cos + a sin).
 * Shapes are written TxHxKVxD[xP]: P, the positions already in the cache,
 * is 0 when left out (a prefill); a decode step is T = 1 at P.  D must be
 * even (exit 2 otherwise).  Two dtypes, as the variant's: f32, or qkv, q,
 * k and v in bf16 with fp32 arithmetic.
 *
 * The angles come two ways, as the models keep them: inv_freq, theta^(-2i/D)
 * rounded to fp32 (D/2 floats: the Llama model's, for sincosf on the GPU),
 * and cos_sin, (cos, sin) of each position's angles computed in double and
 * rounded to fp32 ((P + T) x D/2 pairs: the modern stage's table).  Both
 * are inputs the op derives from theta (prepare), the way the models make
 * them; a variant reads one.  In the models' calls the cache is longer
 * than P + T (its row stride, ld, is the model's maximum length).
 *
 * Bytes: qkv read, and q, the new rows of k and v written, once each (the
 * angle tables, at most 1/(H + 2 KV) of qkv, are not counted).  FLOPs: 6
 * per rotated pair.
 * Tolerance: the angle pos * f_i is rounded to fp32 before sincosf, an
 * error up to pos 2^-23, so q's and k's reduction length is P + T (v is a
 * copy).
 * Inputs: qkv and the kept cache rows uniform in [-1, 1]. */
#ifndef KBENCH_ROPE_H
#define KBENCH_ROPE_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_ROPE_THETA 10000.0

/* qkv, q, k, v of the variant's dtype (bf16 bit patterns for bf16). */
typedef struct {
    int T, H, KV, D;
    int p0;                  /* token t is at position p0 + t */
    int64_t ld;              /* rows a head has in k and v (>= p0 + T) */
    const void *qkv;         /* T x (H + 2 KV) x D */
    const float *inv_freq;   /* D/2 */
    const float *cos_sin;    /* position p, pair i: (cos, sin) at 2 (p D/2 + i) */
    void *q;                 /* H x T x D */
    void *k, *v;             /* KV x ld x D */
} kb_rope_args;

extern const kb_op kb_op_rope;

/* The angle of pair i of D at position pos, in double. */
double kb_rope_angle(int64_t pos, int i, int D);

#ifdef __cplusplus
}
#endif
#endif
