/* attention contract: multi-head scaled dot-product attention,
 *     O = softmax(Q K^T / sqrt(D) + mask) V
 * with grouped-query attention: Q and O are (B, H, Tq, D), K and V are
 * (B, Hkv, Tk, D), all contiguous, in the variant's dtype (f32, bf16 or f16),
 * and query head h reads KV head h / (H / Hkv); Hkv divides H (Hkv = H is
 * plain multi-head attention).  Shapes are written BxHxTqxTkxD, or
 * BxHxTqxTkxDxHkv for fewer KV heads (the five-field form has Hkv = H),
 * with a trailing "c" for the causal mask, aligned to the bottom right:
 * query i sees keys j <= i + Tk - Tq (Tq = Tk: j <= i; Tq = 1: every key).
 * When Tq > Tk the first Tq - Tk query rows see no key; their output is
 * zeros, as the softmax op gives zeros for an all -inf row.  Any B, H,
 * Tq, Tk, D >= 1 and Hkv dividing H, unless a variant's `unsupported` says
 * otherwise.
 *
 * FLOPs: 4*B*H*Tq*Tk*D (two matrix products) over the pairs (i, j) the
 * mask keeps; causal counts the area under the mask's diagonal, the
 * diagonal's own pairs at half (Tq <= Tk: Tq*Tk - Tq^2/2 pairs per head,
 * so Tq = Tk gives half the square; Tq > Tk: Tk^2/2).
 * Bytes: Q, K, V and O, each once (K and V at Hkv heads).
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
    int causal;              /* bottom-right aligned: query i sees keys j <= i + Tk - Tq */
    float scale;             /* 1 / sqrt(D) */
    const void *q, *k, *v;   /* float or __nv_bfloat16, as the variant's dtype */
    void *o;
    int Hkv;                 /* KV heads, dividing H; 0 (an initializer that stops at o) means H */
    /* For a KV cache, which the sweep never sets (only flash_mma and
     * flash_decode read them): elements from one KV head's K (or V) to the
     * next, 0 meaning Tk*D; and a device int, or NULL, holding how many of
     * the Tk keys hold data for this launch, so that one captured launch
     * serves every decode step (flash_decode; the causal mask then aligns to
     * that count). */
    int64_t kv_stride;
    const int *tk_len;
} kb_attention_args;

/* Query heads per KV head: head b*H + h reads KV head (b*H + h) / group
 * = b*Hkv + h / group, since H = Hkv * group. */
static inline int kb_attention_group(const kb_attention_args *a)
{
    return a->Hkv > 0 ? a->H / a->Hkv : 1;
}

/* A shape's KV heads: its sixth field, else H. */
static inline int64_t kb_attention_shape_hkv(const kb_shape *s)
{
    return s->nd > 5 ? s->d[5] : s->d[1];
}

/* Keys query row i sees: all Tk, or under the causal mask i + Tk - Tq + 1
 * clamped to [0, Tk] (0: the row sees no key and its output is zeros). */
static inline int64_t kb_attention_keys(const kb_attention_args *a, int64_t i)
{
    if (!a->causal)
        return a->Tk;
    const int64_t n = i + a->Tk - a->Tq + 1;
    return n < 0 ? 0 : n > a->Tk ? a->Tk : n;
}

extern const kb_op kb_op_attention;

/* The forward's FLOPs of a BxHxTqxTkxD[xHkv][c] shape (the header's count). */
double kb_attention_flops(const kb_shape *s);
/* Why such a shape is invalid (Hkv not dividing H), or NULL. */
const char *kb_attention_validate(const kb_shape *s);

/* Reference rows of O in double; row r is (b, h, i) = (r / (H*Tq), r / Tq % H, r % Tq). */
void attention_reference_rows(const kb_attention_args *a, kb_dtype t, const int64_t *rows, int nrows,
                              double *o);

#ifdef __cplusplus
}
#endif
#endif
