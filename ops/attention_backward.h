/* attention_backward contract: the gradients of attention (ops/attention.h)
 * as FlashAttention's backward takes them, from the forward's saved output
 * and row statistics:
 *     q (B, H, Tq, D), k and v (B, Hkv, Tk, D), do (B, H, Tq, D) in;
 *     o (B, H, Tq, D) and lse (B, H, Tq), fp32, in, derived from q, k and v
 *       by the forward in double (prepare): lse_i is the natural log of
 *       sum_j exp(s_ij) over the keys row i sees, s_ij = scale q_i . k_j
 *       (the statistics cuDNN and FlashAttention save); +inf for a row
 *       that sees no key (causal Tq > Tk), so that its P is zeros;
 *     dq (B, H, Tq, D), dk and dv (B, Hkv, Tk, D) out:
 *       P_ij = exp(s_ij - lse_i) on the pairs the mask keeps, 0 elsewhere;
 *       D_i = do_i . o_i;  dP_ij = do_i . v_j;  dS_ij = P_ij (dP_ij - D_i);
 *       dv_j = sum_i P_ij do_i;  dk_j = scale sum_i dS_ij q_i;
 *       dq_i = scale sum_j dS_ij k_j;
 *   where for GQA a KV head's dk and dv sum over the H / Hkv query heads
 *   that read it (query head h reads KV head h / (H / Hkv)).  Shapes,
 *   the causal mask (bottom right) and the KV heads as the forward's:
 *   BxHxTqxTkxD[xHkv][c].  bf16: every tensor but lse stored in bf16,
 *   fp32 arithmetic.
 *
 * FLOPs: 2.5 times the forward's (five matrix products, S and dP
 * recomputed, dV, dK and dQ), 10 D per kept pair.
 * Bytes: every tensor once: q, k, v, o, do and lse read, dq, dk, dv
 * written.
 * Tolerance: dq's reduction runs over the Tk keys, dk's and dv's over the
 * group * Tq query rows of their KV head; bf16 variants round P and dS to
 * bf16 before their products, an intermediate bounded by the outputs'
 * rounding.
 * Inputs: q, k, v and do uniform in [-1, 1]. */
#ifndef KBENCH_ATTENTION_BACKWARD_H
#define KBENCH_ATTENTION_BACKWARD_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int B, H, Tq, Tk, D;
    int causal;                  /* bottom-right aligned: query i sees keys j <= i + Tk - Tq */
    float scale;                 /* 1 / sqrt(D) */
    int Hkv;                     /* KV heads, dividing H */
    const void *q, *k, *v, *o, *dout; /* bf16 */
    const float *lse;            /* B * H * Tq */
    void *dq, *dk, *dv;          /* bf16 */
} kb_attention_backward_args;

enum {
    KB_ATB_Q, KB_ATB_K, KB_ATB_V, KB_ATB_O, KB_ATB_DO, KB_ATB_LSE, KB_ATB_DQ, KB_ATB_DK, KB_ATB_DV,
    KB_ATB_TENSORS
};

extern const kb_op kb_op_attention_backward;

/* The forward in double for every query row: o (stored as t) and lse. */
void attention_backward_forward(const kb_attention_backward_args *a, kb_dtype t, void *o, float *lse);

/* Reference rows of output `out` (KB_ATB_DQ: rows (b, h, i); KB_ATB_DK or
 * KB_ATB_DV: rows (b, kv head, j)) in double, from host tensors of dtype t. */
void attention_backward_reference(const kb_attention_backward_args *a, kb_dtype t, int out, const int64_t *rows,
                                  int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
