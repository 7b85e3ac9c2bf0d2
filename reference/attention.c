/* attention reference: plain C11 in double, one query row at a time:
 * scores, a max-subtracted softmax, then the weighted sum of V rows.
 * Query head b*H + h reads KV head (b*H + h) / group = b*Hkv + h / group;
 * under the causal mask, row i sees keys 0 .. i + Tk - Tq (bottom-right
 * aligned), and a row that sees none is zeros. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/attention.h"

/* kb_tensor_value, inlined for the types attention stores (f32, bf16,
 * f16): the reference of a decode shape reads some 4e9 K and V values, and
 * the call was most of its time. */
static inline double value(const void *x, int64_t i, kb_dtype t)
{
    if (t == KB_BF16) {
        uint32_t u = (uint32_t)((const uint16_t *)x)[i] << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    if (t == KB_F16)
        return kb_f16_bits_to_float(((const uint16_t *)x)[i]);
    return t == KB_F32 ? ((const float *)x)[i] : kb_tensor_value(x, i, t);
}

void attention_reference_rows(const kb_attention_args *a, kb_dtype t, const int64_t *rows, int nrows,
                              double *o)
{
    const int D = a->D, Tk = a->Tk, group = kb_attention_group(a);
    double *p = malloc((size_t)Tk * sizeof *p), *qd = malloc((size_t)D * sizeof *qd);
    for (int r = 0; r < nrows; ++r) {
        int64_t bh = rows[r] / a->Tq, i = rows[r] % a->Tq;
        int64_t q0 = rows[r] * D, kv0 = bh / group * Tk * (int64_t)D;
        int64_t keys = kb_attention_keys(a, i);
        double max = -INFINITY, sum = 0;
        for (int d = 0; d < D; ++d)
            qd[d] = value(a->q, q0 + d, t);
        for (int64_t j = 0; j < keys; ++j) {
            double s = 0;
            for (int d = 0; d < D; ++d)
                s += qd[d] * value(a->k, kv0 + j * D + d, t);
            p[j] = s * (1.0 / sqrt((double)D));
            max = fmax(max, p[j]);
        }
        for (int64_t j = 0; j < keys; ++j)
            sum += p[j] = exp(p[j] - max);
        double *out = o + (int64_t)r * D;
        for (int d = 0; d < D; ++d)
            out[d] = 0;
        for (int64_t j = 0; j < keys; ++j) /* keys = 0: the row stays zeros */
            for (int d = 0; d < D; ++d)
                out[d] += p[j] / sum * value(a->v, kv0 + j * D + d, t);
    }
    free(qd);
    free(p);
}
