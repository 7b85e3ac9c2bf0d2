/* attention contract: multi-head scaled dot-product attention,
 *     O = softmax(Q K^T / sqrt(D) + mask) V
 * Q is (B, H, Tq, D), K and V are (B, H, Tk, D), O is (B, H, Tq, D), all
 * contiguous, in the variant's dtype (f32 or bf16).  Shapes are written
 * BxHxTqxTkxD, with a trailing "c" for the causal mask (query i sees keys
 * j <= i), which needs Tq = Tk.  Any B, H, Tq, Tk, D >= 1, unless a
 * variant's `unsupported` says otherwise.
 *
 * FLOPs: 4*B*H*Tq*Tk*D (two matrix products), halved for causal.
 * Bytes: Q, K, V and O, each once.
 * Tolerance: the reduction length is D (the score dot products); the
 * probability-weighted sum over keys is an average, whose error does not
 * grow with Tk.  bf16 variants are checked against the reference computed
 * from the same bf16-rounded inputs, with bf16's output rounding.
 * Inputs: uniform in [-1, 1]. */
#ifndef KBENCH_ATTENTION_H
#define KBENCH_ATTENTION_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int B, H, Tq, Tk, D;
    int causal;
    float scale;             /* 1 / sqrt(D) */
    const void *q, *k, *v;   /* float or __nv_bfloat16, as the variant's dtype */
    void *o;
} kb_attention_args;

extern const kb_op kb_op_attention;

/* Reference rows of O in double; row r is (b, h, i) = (r / (H*Tq), r / Tq % H, r % Tq). */
void attention_reference_rows(const kb_attention_args *a, kb_dtype t, const int64_t *rows, int nrows,
                              double *o);

#ifdef __cplusplus
}
#endif
#endif
