/* Comparing a variant's output with the C reference.  kbench run compares
 * on the device (device_scan.cu); this host form is the one tests call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

static void compare_range(const void *out, kb_dtype t, const double *ref, int64_t lo, int64_t hi, kb_math m,
                          int64_t reduction_len, kb_check_part *p)
{
    double abs_tol, rel_tol;
    kb_tolerance_terms_for(m, t, reduction_len, &abs_tol, &rel_tol);
    memset(p, 0, sizeof *p);
    for (int64_t i = lo; i < hi; ++i) {
        double o = kb_tensor_value(out, i, t), r = ref[i], e = fabs(o - r);
        double tol = abs_tol + rel_tol * fabs(r);
        if (!isfinite(o)) {
            p->bad_elems++;
            p->max_abs_err = INFINITY;
            p->worst_tol = tol;
            continue;
        }
        if (e > tol)
            p->bad_elems++;
        if (e > p->max_abs_err) {
            p->max_abs_err = e;
            p->worst_tol = tol;
        }
        p->err2 += e * e;
        p->ref2 += r * r;
    }
}

void kb_check_merge(const kb_check_part *parts, int64_t nparts, kb_math m, kb_dtype t, int64_t reduction_len,
                    kb_check *c)
{
    kb_check_part all = {0};
    for (int64_t k = 0; k < nparts; ++k) {
        const kb_check_part *p = &parts[k];
        all.bad_elems += p->bad_elems;
        /* A chunk with a NaN or Inf sets the error to Inf, with its tolerance. */
        if (p->max_abs_err == INFINITY || p->max_abs_err > all.max_abs_err) {
            all.max_abs_err = p->max_abs_err;
            all.worst_tol = p->worst_tol;
        }
        all.err2 += p->err2;
        all.ref2 += p->ref2;
    }
    memset(c, 0, sizeof *c);
    c->bad_elems = all.bad_elems;
    c->max_abs_err = all.max_abs_err;
    c->worst_tol = all.worst_tol;
    c->rel_l2_err = c->max_abs_err == INFINITY ? INFINITY : all.ref2 > 0 ? sqrt(all.err2 / all.ref2) : sqrt(all.err2);
    c->pass = c->bad_elems == 0 && c->rel_l2_err <= kb_rel_l2_tolerance_for(m, t, reduction_len);
}

/* Fixed chunks compared on every core, merged in order: the result does not
 * depend on the thread count. */
#define COMPARE_CHUNK 65536

void kb_compare_rows(const void *out, kb_dtype t, const double *ref, int64_t n, kb_math m,
                     int64_t reduction_len, kb_check *c)
{
    const int64_t nchunks = (n + COMPARE_CHUNK - 1) / COMPARE_CHUNK;
    kb_check_part *parts = malloc((size_t)(nchunks ? nchunks : 1) * sizeof *parts);
#pragma omp parallel for schedule(dynamic) if (nchunks > 1)
    for (int64_t k = 0; k < nchunks; ++k)
        compare_range(out, t, ref, k * COMPARE_CHUNK, k + 1 < nchunks ? (k + 1) * COMPARE_CHUNK : n, m,
                      reduction_len, &parts[k]);
    kb_check_merge(parts, nchunks, m, t, reduction_len, c);
    free(parts);
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
