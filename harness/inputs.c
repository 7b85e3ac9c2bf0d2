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
