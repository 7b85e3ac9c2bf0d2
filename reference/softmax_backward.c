/* softmax_backward reference: plain C11 in double from the stored y and
 * dy (fp32, or bf16 widened exactly), and the forward's probabilities that
 * make y. */
#include <math.h>
#include "ops/softmax_backward.h"

void softmax_backward_reference(int64_t C, kb_dtype t, const void *y, const void *dy, const int64_t *rows, int nrows,
                                double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        const int64_t base = rows[k] * C;
        double dot = 0;
        for (int64_t j = 0; j < C; ++j)
            dot += kb_tensor_value(dy, base + j, t) * kb_tensor_value(y, base + j, t);
        for (int64_t j = 0; j < C; ++j)
            ref[k * C + j] = kb_tensor_value(y, base + j, t) * (kb_tensor_value(dy, base + j, t) - dot);
    }
}

void softmax_backward_probabilities(int64_t R, int64_t C, float *y)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < R; ++r) {
        float *row = y + r * C;
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < C; ++j)
            max = fmax(max, row[j]);
        for (int64_t j = 0; j < C; ++j)
            sum += max == -INFINITY ? 0.0 : exp(row[j] - max);
        for (int64_t j = 0; j < C; ++j)
            row[j] = sum > 0 ? (float)(exp(row[j] - max) / sum) : 0.0f;
    }
}
