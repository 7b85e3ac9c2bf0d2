/* One query row's attention in double, shared by the model references
 * (reference/transformer.c, reference/llama.c). */
#ifndef KBENCH_REFERENCE_ATTEND_ROW_H
#define KBENCH_REFERENCE_ATTEND_ROW_H

#include <math.h>
#include <stdint.h>

/* softmax(q K^T * scale) V over keys 0..keys-1 into o (dh values): q holds
 * one head's dh values; K's and V's rows are `stride` apart, this head's
 * slice at K and V (heads interleaved, or a KV cache's rows).  p is
 * scratch for `keys` scores. */
static inline void kb_ref_attend_row(const double *q, const double *K, const double *V, int keys, int stride,
                                     int dh, double scale, double *p, double *o)
{
    double max = -INFINITY, sum = 0;
    for (int j = 0; j < keys; ++j) {
        double s = 0;
        for (int c = 0; c < dh; ++c)
            s += q[c] * K[(int64_t)j * stride + c];
        p[j] = s * scale;
        max = fmax(max, p[j]);
    }
    for (int j = 0; j < keys; ++j)
        sum += p[j] = exp(p[j] - max);
    for (int c = 0; c < dh; ++c) {
        double acc = 0;
        for (int j = 0; j < keys; ++j)
            acc += p[j] * V[(int64_t)j * stride + c];
        o[c] = acc / sum;
    }
}

#endif
