/* The Llama decode step's products with their fused ends (the model's
 * decode GEMVs, model/llama_gpu.cu): three ops for a batch of one token,
 * bf16 only.  Each reads the fp32 residual stream x (K) and its norm's
 * weights g (K, fp32), and multiplies bf16 weight rows (nn.Linear's
 * [out, in], K long) by
 *     xn = bf16(x / sqrt(mean(x^2) + eps) * g),  eps = 1e-5
 * (the norm in fp32, rounded to bf16 as the product's input), each dot
 * product W[r] . xn accumulated in fp32, then:
 *
 * qkv_rope KxHxKVxDxP: W is (H + 2 KV) D x K, q, k and v rows stacked (D
 *   rows a head).  The token is at position P: rope's rotation (ops/rope.h)
 *   turns the q and k heads' pairs (d[i], d[i + D/2]); q (H x D) is the
 *   turned queries, row P of each KV head's cache k (KV x (P+1) x D) the
 *   turned key and of v the value; rows < P are kept.  The position is
 *   read from device memory, len = P + 1 (the decode state's cache
 *   length), so that one captured step replays at every position.  The
 *   angles come from inv_freq, as rope's.  D even.
 * gate_up FxK: W is 2F x K, the gate rows then the up rows;
 *   h (F, bf16) = silu(W[i] . xn) * (W[F + i] . xn), as swiglu's.
 * lm_head VxK: W is V x K (the LM head); logits (V, fp32) = W . xn, and the
 *   greedy pick, the first largest logit, as the step's token: with the
 *   decode state (len, step, token), out[step] = token = pick, step + 1,
 *   and len + 1 (or set_len when >= 0: a prefill's pick sets it); keep, when
 *   given, holds each step's logits (row step).  out and keep have
 *   max_tokens rows; a step past them writes neither.
 *
 * A variant's setup sizes its kernels for args.K: launches may take any K
 * up to it (the model sets each up once at its widest input).
 * Bytes: W, x and g read, the outputs written once (lm_head: its state,
 * out and keep rows too).  FLOPs: 2 per weight.
 * Tolerance: KB_MATH_BF16's bound over the reduction, K long.  The
 * reference rounds xn to bf16 as the contract does; the pick and the
 * state are compared exactly.
 * Inputs: x and g uniform in [-1, 1] (g as 1 + 0.1 u, a trained norm's),
 * W uniform scaled by 1/sqrt(K), rounded to bf16. */
#ifndef KBENCH_DECODE_H
#define KBENCH_DECODE_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_DECODE_EPS 1e-5f
/* The decode state's entries: keys in the cache after this token, the
 * generated tokens so far, the next token. */
enum { KB_DECODE_LEN, KB_DECODE_STEP, KB_DECODE_TOKEN, KB_DECODE_STATE };

typedef struct {
    int K, H, KV, D;
    int64_t ld;             /* cache rows a head has (>= P + 1) */
    float eps;
    const float *x, *gamma; /* K */
    const uint16_t *w;      /* (H + 2 KV) D x K, bf16 bit patterns */
    const float *inv_freq;  /* D/2 */
    const int *len;         /* P + 1 */
    uint16_t *q;            /* H x D */
    uint16_t *k, *v;        /* KV x ld x D */
} kb_qkv_rope_args;

typedef struct {
    int F, K;
    float eps;
    const float *x, *gamma;
    const uint16_t *w; /* 2F x K */
    uint16_t *h;       /* F */
} kb_gate_up_args;

typedef struct {
    int V, K;
    float eps;
    const float *x, *gamma;
    const uint16_t *w; /* V x K */
    float *logits;     /* V */
    int *state;        /* KB_DECODE_STATE entries */
    int *out;          /* max_tokens */
    int max_tokens;
    int set_len;       /* >= 0: the cache length after the pick; else len + 1 */
    float *keep;       /* max_tokens x V, or NULL */
} kb_lm_head_args;

extern const kb_op kb_op_qkv_rope, kb_op_gate_up, kb_op_lm_head;

/* ---- what the three contracts share (ops/decode.c) ---- */
/* xn = bf16(RMSNorm(x) g) as doubles. */
void kb_decode_norm(const float *x, const float *g, int K, double eps, double *xn);
/* W[row] . xn, W bf16 rows of K. */
double kb_decode_dot(const uint16_t *w, int64_t row, int K, const double *xn);
/* x and g of a decode op (tensors 0 and 1) and its bf16 W (tensor 2). */
kb_tensor kb_decode_input(int i, int64_t K, int64_t rows);
void kb_decode_fill(int i, int64_t K, float *x, int64_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
