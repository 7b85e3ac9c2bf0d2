/* The verdict on a kernel of one's own (`kbench run --kernel`), printed
 * from a sweep's rows: whether it passed every shape, and if not the first
 * that failed with its error and bound; per shape family the geometric
 * mean of its speed-up over each variant that ran beside it, on the shapes
 * both passed; its share of the roofline at the family's largest shape;
 * and, as KernelBench does, a flag on any speed-up over 10x. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "harness/harness.h"

#define SUSPECT_SPEEDUP 10.0

static int is_own(const kb_result *r, const char *own) { return !strcmp(r->variant->name, own); }

static int same_row(const kb_result *a, const kb_result *b)
{
    return a->variant->dtype == b->variant->dtype && !memcmp(&a->shape, &b->shape, sizeof a->shape);
}

static int timed_pass(const kb_result *r) { return r->timed && r->status == KB_PASS; }

static void correctness(FILE *f, const kb_result *rows, int n, const char *own)
{
    int pass = 0, fail = 0, skip = 0;
    const kb_result *first = NULL, *skipped = NULL;
    for (int i = 0; i < n; ++i) {
        const kb_result *r = &rows[i];
        if (!is_own(r, own))
            continue;
        pass += r->status == KB_PASS;
        skip += r->status == KB_SKIP;
        fail += r->status == KB_FAIL;
        if (r->status == KB_FAIL && !first)
            first = r;
        if (r->status == KB_SKIP && !skipped)
            skipped = r;
    }
    char shape[96];
    if (first) {
        kb_format_shape(first->op, &first->shape, shape, sizeof shape);
        fprintf(f, "  correct: NO, %d of %d shape(s) fail; the first, %s %s: %s", fail, pass + fail,
                kb_dtype_name(first->variant->dtype), shape, first->reason);
        if (first->check.worst_tol > 0 && isfinite(first->check.max_abs_err))
            fprintf(f, " (largest error %.3g where the bound is %.3g)", first->check.max_abs_err,
                    first->check.worst_tol);
        fputc('\n', f);
        if (first->check.nonfinite)
            fprintf(f, "  hint: outputs hold NaN before each check, so NaN comes back from an element left "
                    "unwritten or from reading an output (BLAS's beta = 0: write C, never read it)\n");
        if (first->op->conventions)
            fprintf(f, "  hint: %s's contract: %s\n", first->op->name, first->op->conventions);
    } else
        fprintf(f, "  correct: yes, at every shape it ran (%d)\n", pass);
    if (skipped) {
        kb_format_shape(skipped->op, &skipped->shape, shape, sizeof shape);
        fprintf(f, "  skipped: %d shape(s), the first %s: %s\n", skip, shape, skipped->reason);
    }
}

/* The geometric mean of other's time over own's on the rows of `family`
 * where both passed and were timed; its count in *k. */
static double geomean_speedup(const kb_result *rows, int n, const char *own, const char *other, const char *family,
                              int *k, double *worst)
{
    double log_sum = 0;
    *k = 0;
    *worst = 0;
    for (int i = 0; i < n; ++i) {
        const kb_result *r = &rows[i];
        if (!is_own(r, own) || !timed_pass(r) || (family && (!r->family || strcmp(r->family, family))))
            continue;
        for (int j = 0; j < n; ++j) {
            const kb_result *b = &rows[j];
            if (strcmp(b->variant->name, other) || !same_row(r, b) || !timed_pass(b))
                continue;
            const double x = b->time_ms.median / r->time_ms.median;
            log_sum += log(x);
            *worst = fmax(*worst, x);
            ++*k;
            break;
        }
    }
    return *k ? exp(log_sum / *k) : 0;
}

/* The names of the variants beside own, each once, in row order. */
static int others(const kb_result *rows, int n, const char *own, const char **names, int cap)
{
    int m = 0;
    for (int i = 0; i < n; ++i) {
        const char *v = rows[i].variant->name;
        int seen = is_own(&rows[i], own);
        for (int j = 0; j < m && !seen; ++j)
            seen = !strcmp(names[j], v);
        if (!seen && m < cap)
            names[m++] = v;
    }
    return m;
}

/* The family's largest timed, passing row of own (by FLOPs, then bytes). */
static const kb_result *largest(const kb_result *rows, int n, const char *own, const char *family)
{
    const kb_result *best = NULL;
    for (int i = 0; i < n; ++i) {
        const kb_result *r = &rows[i];
        if (is_own(r, own) && timed_pass(r) && (!family || (r->family && !strcmp(r->family, family))) &&
            (!best || r->flops > best->flops || (r->flops == best->flops && r->bytes > best->bytes)))
            best = r;
    }
    return best;
}

static void family_line(FILE *f, const kb_result *rows, int n, const char *own, const char *family,
                        const char *const *names, int m, int *suspect)
{
    const kb_result *top = largest(rows, n, own, family);
    if (!top)
        return;
    fprintf(f, "  %s%s:", family ? "family " : "all shapes", family ? family : "");
    for (int j = 0; j < m; ++j) {
        int k;
        double worst;
        const double g = geomean_speedup(rows, n, own, names[j], family, &k, &worst);
        if (k)
            fprintf(f, " %.2fx %s (%d shape%s);", g, names[j], k, k == 1 ? "" : "s");
        *suspect |= worst > SUSPECT_SPEEDUP;
    }
    char shape[96];
    kb_format_shape(top->op, &top->shape, shape, sizeof shape);
    if (top->pct_of_peak > 0)
        fprintf(f, " %.1f%% of the roofline at %s\n", top->pct_of_peak, shape);
    else
        fprintf(f, " no roofline at %s\n", shape);
}

void kb_own_verdict(FILE *f, const kb_result *rows, int n, const char *own, const char *path)
{
    fprintf(f, "verdict on %s (%s):\n", own, path);
    correctness(f, rows, n, own);
    const char *names[32], *families[64];
    const int m = others(rows, n, own, names, 32);
    int nf = 0, suspect = 0;
    for (int i = 0; i < n; ++i) {
        int seen = !rows[i].family || !is_own(&rows[i], own);
        for (int j = 0; j < nf && !seen; ++j)
            seen = !strcmp(families[j], rows[i].family);
        if (!seen && nf < 64)
            families[nf++] = rows[i].family;
    }
    if (!nf)
        family_line(f, rows, n, own, NULL, names, m, &suspect);
    for (int i = 0; i < nf; ++i)
        family_line(f, rows, n, own, families[i], names, m, &suspect);
    if (suspect)
        fprintf(f, "  a speed-up over %.0fx: review it before trusting it (a cached result, work left on another "
                "stream, or a broken comparison)\n", SUSPECT_SPEEDUP);
}
