/* The add op: an elementwise sum. */
#include "ops/add.h"

extern const kb_variant *const add_variants[];

static double flops(const kb_shape *s) { return (double)s->d[0]; }
static int ntensors(const kb_shape *s) { (void)s; return 3; }

/* One row, the whole vector, as copy's. */
static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    static const char *const names[] = {"x", "r", "y"};
    return kb_tensor_of(names[i], s->d[0], t, i < 2 ? KB_IN : KB_OUT, 1, s->d[0], 1, 2.0 * s->d[0]);
}

static void bind(const kb_shape *s, void *const *dev, void *args)
{
    *(kb_add_args *)args = (kb_add_args){s->d[0], dev[0], dev[1], dev[2]};
}

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out, (void)rows, (void)nrows;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s->d[0]; ++i)
        ref[i] = kb_tensor_value(in[0], i, t) + kb_tensor_value(in[1], i, t);
}

const kb_op kb_op_add = {
    .name = "add",
    .summary = "y = x + r, fp32 (the basic stage's residual sums)",
    .shape_fields = "N",
    .nd = 1,
    /* the basic stage's 512 x 576 activations, then 4 and 64 M elements */
    .families = (const kb_family[]){{"size", "N", "294912,4194304,67108864", 1},
                                    {"hostile", NULL, "1,3,1000003"},
                                    {NULL}},
    .test_sizes = "1,3,31,1000,4097,65537,294912,1048579",
    .baseline = {[KB_F32] = "naive"},
    .variants = add_variants,
    KB_OP_CONTRACT(kb_add_args),
};
