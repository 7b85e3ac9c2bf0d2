/* Comparing a variant's output with the C reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

void kb_compare_rows(const void *out, kb_dtype t, const double *ref, int64_t n, kb_math m,
                     int64_t reduction_len, kb_check *c)
{
    double err2 = 0, ref2 = 0;
    memset(c, 0, sizeof *c);
    for (int64_t i = 0; i < n; ++i) {
        double o = kb_tensor_value(out, i, t), r = ref[i], e = fabs(o - r);
        double tol = kb_tolerance(m, reduction_len, r);
        if (!isfinite(o)) {
            c->bad_elems++;
            c->max_abs_err = INFINITY;
            c->worst_tol = tol;
            continue;
        }
        if (e > tol)
            c->bad_elems++;
        if (e > c->max_abs_err) {
            c->max_abs_err = e;
            c->worst_tol = tol;
        }
        err2 += e * e;
        ref2 += r * r;
    }
    c->rel_l2_err = c->max_abs_err == INFINITY ? INFINITY : ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    c->pass = c->bad_elems == 0 && c->rel_l2_err <= kb_rel_l2_tolerance(m, reduction_len);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* splitmix64 step, for the row sample. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int kb_pick_rows(int64_t total_rows, double row_cost, double budget, uint64_t seed, int64_t **rows)
{
    int64_t want = row_cost > 0 ? (int64_t)(budget / row_cost) : total_rows;
    if (want < 2)
        want = 2; /* the first and last rows, always */
    if (want >= total_rows) {
        *rows = malloc((size_t)total_rows * sizeof **rows);
        for (int64_t i = 0; i < total_rows; ++i)
            (*rows)[i] = i;
        return (int)total_rows;
    }
    int64_t *r = malloc((size_t)want * sizeof *r);
    int n = 0;
    r[n++] = 0;
    r[n++] = total_rows - 1;
    while (n < want) {
        int64_t cand = 1 + (int64_t)(next_random(&seed) % (uint64_t)(total_rows - 2));
        int dup = 0;
        for (int i = 0; i < n && !dup; ++i)
            dup = r[i] == cand;
        if (!dup)
            r[n++] = cand;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_i64);
    *rows = r;
    return n;
}
