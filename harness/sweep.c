/* Expanding options into the list of rows to run.  Everything here is
 * validated before the GPU is touched, so bad input exits 2 with nothing run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

static int wanted(const kb_options *o, const kb_variant *v)
{
    return kb_variant_selected(o, v) && (!o->dtype_mask || (o->dtype_mask & (1 << v->dtype)));
}

static int push(kb_job **jobs, int *n, int *cap, const kb_op *op, const kb_variant *v, const kb_shape *s,
                const char *family, const char *axis)
{
    if (*n == *cap) {
        int bigger = *cap ? 2 * *cap : 64;
        kb_job *grown = realloc(*jobs, (size_t)bigger * sizeof **jobs);
        if (!grown)
            return -1;
        *jobs = grown;
        *cap = bigger;
    }
    /* Shapes are compared with memcmp: the padding is copied too, not left
     * to what the array held. */
    kb_job *j = &(*jobs)[(*n)++];
    memset(j, 0, sizeof *j);
    j->op = op;
    j->variant = v;
    memcpy(&j->shape, s, sizeof *s);
    j->family = family;
    j->axis = axis;
    return 0;
}

/* Shapes must parse and their byte counts must fit, for every dtype a selected variant uses. */
static int validate_shapes(const kb_options *o, const kb_op *op, const kb_shape *s, int ns,
                           char *err, size_t errlen)
{
    for (int i = 0; i < ns; ++i)
        KB_FOR_EACH_VARIANT(op, v) {
            int64_t bytes;
            if (wanted(o, v) && kb_shape_bytes(op, &s[i], v->dtype, &bytes, err, errlen) != 0)
                return -1;
        }
    return 0;
}

/* The baseline form of v's dtype, or NULL. */
static const kb_variant *baseline_of(const kb_op *op, kb_dtype t)
{
    const char *name = kb_baseline_for(op, t);
    return name ? kb_find_variant(op, name, t) : NULL;
}

/* A job's place among its shape's rows: by dtype, then the case of the
 * dtype's baseline first (cuDNN's softmax baseline has quirks of its own),
 * then by quirks. */
static unsigned case_rank(const kb_job *j)
{
    const kb_variant *v = j->variant, *lead = baseline_of(j->op, v->dtype);
    int leads = lead && lead->quirks == v->quirks;
    return (unsigned)v->dtype << 24 | (unsigned)!leads << 16 | v->quirks;
}

/* One shape's rows ordered by case, stably, so that each dtype's baseline
 * stays first: a case's rows then run one after the other, and its inputs
 * and reference are made and uploaded once, not once for every change of
 * dtype along the variant table. */
static void group_by_case(kb_job *j, int n)
{
    /* memcpy, not assignment, so the padding of the shapes, which
     * memcmp compares, moves with them. */
    for (int i = 1; i < n; ++i) {
        kb_job x;
        memcpy(&x, &j[i], sizeof x);
        int k = i;
        for (; k > 0 && case_rank(&j[k - 1]) > case_rank(&x); --k)
            memcpy(&j[k], &j[k - 1], sizeof x);
        memcpy(&j[k], &x, sizeof x);
    }
}

static int add_op_jobs(const kb_options *o, const kb_op *op, const kb_shape *s, int ns, const char *family,
                       const char *axis, kb_job **jobs, int *n, int *cap)
{
    for (int i = 0; i < ns; ++i) {
        const int first = *n;
        /* Per shape each dtype's baseline comes first, so every later row can show its speedup. */
        for (int t = 0; t < KB_DTYPE_COUNT; ++t) {
            const kb_variant *base = baseline_of(op, (kb_dtype)t);
            if (base && wanted(o, base) && push(jobs, n, cap, op, base, &s[i], family, axis) != 0)
                return -1;
        }
        KB_FOR_EACH_VARIANT(op, v)
            if (v != baseline_of(op, v->dtype) && wanted(o, v) && push(jobs, n, cap, op, v, &s[i], family, axis) != 0)
                return -1;
        if (*n > first) /* none may have been pushed, and *jobs be NULL */
            group_by_case(*jobs + first, *n - first);
    }
    return 0;
}

static int no_jobs(kb_job **jobs)
{
    free(*jobs);
    *jobs = NULL;
    return -1;
}

int kb_job_multi_device(const kb_job *job)
{
    return job->op->distributed || job->variant->min_devices > 1;
}

const char *kb_job_too_few_gpus(const kb_job *job, int ngpus, char *why, size_t len)
{
    int need = job->op->distributed ? 2 : job->variant->min_devices;
    if (need <= ngpus)
        return NULL;
    snprintf(why, len, "needs %d or more GPUs, this run has %d (kbench run --devices)", need, ngpus);
    return why;
}

static int same_shape(const kb_shape *a, const kb_shape *b)
{
    if (a->nd != b->nd || a->flags != b->flags)
        return 0;
    for (int i = 0; i < a->nd; ++i)
        if (a->d[i] != b->d[i])
            return 0;
    return 1;
}

const kb_family *kb_family_of(const kb_op *op, const kb_shape *s)
{
    char err[256];
    for (const kb_family *f = op->families; f->name; ++f) {
        kb_shape *shapes;
        int n = kb_parse_shape_list(op, f->sizes, &shapes, err, sizeof err), hit = 0;
        for (int i = 0; i < n && !hit; ++i)
            hit = same_shape(&shapes[i], s);
        if (n >= 0)
            free(shapes);
        if (hit)
            return f;
    }
    return NULL;
}

int kb_default_shapes(const kb_op *op, kb_shape **shapes, char *err, size_t errlen)
{
    int total = 0;
    *shapes = NULL;
    for (const kb_family *f = op->families; f->name; ++f) {
        kb_shape *some, *all;
        int n = kb_parse_shape_list(op, f->sizes, &some, err, errlen);
        if (n < 0 || !(all = realloc(*shapes, (size_t)(total + n) * sizeof *all))) {
            if (n >= 0) {
                free(some);
                snprintf(err, errlen, "out of memory for the %s sizes", op->name);
            }
            free(*shapes);
            *shapes = NULL;
            return -1;
        }
        memcpy(all + total, some, (size_t)n * sizeof *some);
        free(some);
        *shapes = all;
        total += n;
    }
    return total;
}

/* Whether --family (or --quick, or neither) takes this family. */
static int family_wanted(const kb_options *o, const kb_family *f)
{
    if (o->quick)
        return f->quick;
    return !o->families || kb_in_list(o->families, f->name);
}

/* Rows of one list of shapes, validated; 0, or -1 with err set. */
static int add_list(const kb_options *o, const kb_op *op, const char *sizes, const kb_family *family,
                    kb_job **jobs, int *n, int *cap, char *err, size_t errlen)
{
    kb_shape *shapes;
    int ns = kb_parse_shape_list(op, sizes, &shapes, err, errlen);
    if (ns < 0)
        return -1;
    for (int i = 0; i < ns && op->distributed; ++i)
        shapes[i].ranks = o->ndevices > 0 ? o->ndevices : 1;
    int rc = validate_shapes(o, op, shapes, ns, err, errlen);
    for (int i = 0; i < ns && rc == 0; ++i) {
        /* A --sizes shape takes the name of the family that lists it. */
        const kb_family *f = family ? family : o->sizes ? kb_family_of(op, &shapes[i]) : NULL;
        const char *name = f ? f->name : o->test_sizes ? "test" : "custom";
        if ((rc = add_op_jobs(o, op, &shapes[i], 1, name, f ? f->axis : NULL, jobs, n, cap)) != 0)
            snprintf(err, errlen, "out of memory for the rows of the sweep");
    }
    free(shapes);
    return rc;
}

int kb_expand_sweep(const kb_options *o, kb_job **jobs, char *err, size_t errlen)
{
    int n = 0, cap = 0;
    *jobs = NULL;
    for (int k = 0; k < o->nops; ++k) {
        const kb_op *op = o->ops[k];
        int rc = 0;
        if (o->sizes || o->test_sizes)
            rc = add_list(o, op, o->sizes ? o->sizes : op->test_sizes, NULL, jobs, &n, &cap, err, errlen);
        for (const kb_family *f = op->families; rc == 0 && !o->sizes && !o->test_sizes && f->name; ++f)
            if (family_wanted(o, f))
                rc = add_list(o, op, o->quick && f->quick_sizes ? f->quick_sizes : f->sizes, f, jobs, &n, &cap, err,
                              errlen);
        if (rc != 0)
            return no_jobs(jobs);
    }
    if (n == 0) {
        snprintf(err, errlen, "no variant matches the selected ops, variants and dtypes");
        return no_jobs(jobs);
    }
    return n;
}
