/* What the decode ops' contracts share (ops/decode.h): their inputs, fill
 * and the normalized input of the reference. */
#include <math.h>
#include <stdlib.h>
#include "ops/decode.h"

void kb_decode_norm(const float *x, const float *g, int K, double eps, double *xn)
{
    double ss = 0;
    for (int k = 0; k < K; ++k)
        ss += (double)x[k] * x[k];
    const double r = 1 / sqrt(ss / K + eps);
    float *f = malloc((size_t)K * sizeof *f + 1);
    uint16_t *b = malloc((size_t)K * sizeof *b + 1);
    for (int k = 0; k < K; ++k)
        f[k] = (float)(x[k] * r * g[k]);
    kb_store_floats(KB_BF16, f, b, K);
    kb_widen(b, 0, K, KB_BF16, xn);
    free(f);
    free(b);
}

double kb_decode_dot(const uint16_t *w, int64_t row, int K, const double *xn)
{
    double s = 0;
    for (int k = 0; k < K; ++k)
        s += kb_tensor_value(w, row * K + k, KB_BF16) * xn[k];
    return s;
}

kb_tensor kb_decode_input(int i, int64_t K, int64_t rows)
{
    switch (i) {
    case 0: return kb_tensor_of("x", K, KB_F32, KB_IN, 1, K, 0, 0);
    case 1: return kb_tensor_of("gamma", K, KB_F32, KB_IN, 1, K, 0, 0);
    default: return kb_tensor_of("w", kb_mul_dims(rows, K), KB_BF16, KB_IN, rows, K, 0, 0);
    }
}

/* x uniform, g = 1 + 0.1 u (a trained norm's), W uniform / sqrt(K). */
void kb_decode_fill(int i, int64_t K, float *x, int64_t n, uint64_t seed)
{
    kb_fill_uniform(x, n, seed);
    const float scale = i == 1 ? 0.1f : i == 2 ? 1.0f / sqrtf((float)K) : 1.0f;
    for (int64_t k = 0; k < n; ++k)
        x[k] = i == 1 ? 1.0f + scale * x[k] : scale * x[k];
}
