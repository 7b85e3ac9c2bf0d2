/* rope_backward reference: plain C11 in double, from the stored dq, dk and
 * dv (bf16 values widened exactly), each angle's cosine and sine in double
 * once per token. */
#include <math.h>
#include <stdlib.h>
#include "ops/rope.h"
#include "ops/rope_backward.h"

/* Head `head` of token tok's dqkv row into y: the source row widened, then
 * turned back unless a value head. */
static void head_row(int64_t T, int64_t H, int64_t KV, int64_t D, kb_dtype t, const void *dq, const void *dk,
                     const void *dv, int64_t tok, int64_t head, const double *cs, double *y)
{
    const int64_t half = D / 2;
    if (head < H)
        kb_widen(dq, (head * T + tok) * D, D, t, y);
    else if (head < H + KV)
        kb_widen(dk, ((head - H) * T + tok) * D, D, t, y);
    else {
        kb_widen(dv, ((head - H - KV) * T + tok) * D, D, t, y);
        return;
    }
    for (int64_t i = 0; i < half; ++i) {
        const double a = y[i], b = y[i + half], c = cs[2 * i], s = cs[2 * i + 1];
        y[i] = a * c + b * s;
        y[i + half] = b * c - a * s;
    }
}

void rope_backward_reference(int64_t T, int64_t H, int64_t KV, int64_t D, kb_dtype t, const void *dq,
                             const void *dk, const void *dv, const int64_t *rows, int nrows, double *ref)
{
    const int64_t heads = H + 2 * KV, half = D / 2;
    double *cs = malloc((size_t)D * sizeof *cs);
    if (!cs)
        abort(); /* D doubles: a shape whose tensors the host already holds */
    for (int k = 0; k < nrows; ++k) {
        const int64_t tok = rows[k];
        for (int64_t i = 0; i < half; ++i) {
            cs[2 * i] = cos(kb_rope_angle(tok, (int)i, (int)D));
            cs[2 * i + 1] = sin(kb_rope_angle(tok, (int)i, (int)D));
        }
        for (int64_t h = 0; h < heads; ++h)
            head_row(T, H, KV, D, t, dq, dk, dv, tok, h, cs, ref + (k * heads + h) * D);
    }
    free(cs);
}
