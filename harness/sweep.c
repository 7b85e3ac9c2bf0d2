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

static int push(kb_job **jobs, int *n, int *cap, const kb_op *op, const kb_variant *v, const kb_shape *s)
{
    if (*n == *cap) {
        int bigger = *cap ? 2 * *cap : 64;
        kb_job *grown = realloc(*jobs, (size_t)bigger * sizeof **jobs);
        if (!grown)
            return -1;
        *jobs = grown;
        *cap = bigger;
    }
    (*jobs)[(*n)++] = (kb_job){op, v, *s};
    return 0;
}

/* Shapes must parse and their byte counts must fit, for every dtype a selected variant uses. */
static int validate_shapes(const kb_options *o, const kb_op *op, const kb_shape *s, int ns,
                           char *err, size_t errlen)
{
    for (int i = 0; i < ns; ++i)
        for (int j = 0; op->variants[j]; ++j) {
            int64_t bytes;
            if (wanted(o, op->variants[j]) &&
                kb_shape_bytes(op, &s[i], op->variants[j]->dtype, &bytes, err, errlen) != 0)
                return -1;
        }
    return 0;
}

static int add_op_jobs(const kb_options *o, const kb_op *op, const kb_shape *s, int ns,
                       kb_job **jobs, int *n, int *cap)
{
    /* Per shape the baselines come first, so every later row can show its speedup. */
    const kb_variant *base[2] = {kb_find_variant(op, op->baseline),
                                 op->baseline_bf16 ? kb_find_variant(op, op->baseline_bf16) : NULL};
    for (int i = 0; i < ns; ++i) {
        for (int b = 0; b < 2; ++b)
            if (base[b] && wanted(o, base[b]) && push(jobs, n, cap, op, base[b], &s[i]) != 0)
                return -1;
        for (int j = 0; op->variants[j]; ++j)
            if (op->variants[j] != base[0] && op->variants[j] != base[1] && wanted(o, op->variants[j]) &&
                push(jobs, n, cap, op, op->variants[j], &s[i]) != 0)
                return -1;
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

int kb_expand_sweep(const kb_options *o, kb_job **jobs, char *err, size_t errlen)
{
    int n = 0, cap = 0;
    *jobs = NULL;
    for (int k = 0; k < o->nops; ++k) {
        const kb_op *op = o->ops[k];
        const char *sizes = o->sizes        ? o->sizes
                            : o->quick      ? op->quick_sizes
                            : o->test_sizes ? op->test_sizes
                                            : op->default_sizes;
        kb_shape *shapes;
        int ns = kb_parse_shape_list(op, sizes, &shapes, err, errlen);
        if (ns < 0)
            return no_jobs(jobs);
        for (int i = 0; i < ns && op->distributed; ++i)
            shapes[i].ranks = o->ndevices > 0 ? o->ndevices : 1;
        int rc = validate_shapes(o, op, shapes, ns, err, errlen);
        if (rc == 0 && (rc = add_op_jobs(o, op, shapes, ns, jobs, &n, &cap)) != 0)
            snprintf(err, errlen, "out of memory for the rows of the sweep");
        free(shapes);
        if (rc != 0)
            return no_jobs(jobs);
    }
    if (n == 0) {
        snprintf(err, errlen, "no variant matches the selected ops, variants and dtypes");
        return no_jobs(jobs);
    }
    return n;
}
