/* swiglu_backward reference: plain C11 in double, from the stored gu and
 * dh (bf16 values widened exactly). */
#include <math.h>
#include "ops/swiglu_backward.h"

void swiglu_backward_reference(int64_t C, kb_dtype t, const void *gu, const void *dh, const int64_t *rows,
                               int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t r = rows[k];
        double *out = ref + k * 2 * C;
        for (int64_t j = 0; j < C; ++j) {
            const double g = kb_tensor_value(gu, r * 2 * C + j, t), u = kb_tensor_value(gu, r * 2 * C + C + j, t);
            const double d = kb_tensor_value(dh, r * C + j, t), s = 1 / (1 + exp(-g));
            out[j] = d * u * s * (1 + g * (1 - s));
            out[C + j] = d * g * s;
        }
    }
}
