/* Seeded inputs.  Every (op, shape, tensor) gets its own seed, so a row's
 * inputs are fresh but reproducible, whatever else the sweep runs. */
#include <string.h>
#include "harness/harness.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

uint64_t kb_seed_for(const char *op, const kb_shape *s, int tensor)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = op; *p; ++p)
        h = mix(h, (unsigned char)*p);
    for (int i = 0; i < s->nd; ++i)
        h = mix(h, (uint64_t)s->d[i]);
    h = mix(h, s->flags);
    return mix(h, (uint64_t)tensor);
}

/* Counter-based (kb_uniform_at), so the fill splits across threads and
 * element i is the same however it is computed. */
void kb_fill_uniform(float *x, int64_t n, uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
        x[i] = kb_uniform_at(seed, i);
}

float kb_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; NaN stays NaN. */
uint16_t kb_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

double kb_tensor_value(const void *x, int64_t i, kb_dtype t)
{
    if (t == KB_BF16)
        return kb_bf16_to_float(((const uint16_t *)x)[i]);
    if (t == KB_I32)
        return ((const int32_t *)x)[i];
    return ((const float *)x)[i];
}
