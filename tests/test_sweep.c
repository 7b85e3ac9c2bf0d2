/* Sweep expansion: families, quick and explicit sizes, variant globs, dtype
 * filters, the baseline running first for every shape, each shape's rows
 * grouped by case, and the rows
 * --energy measures; every op's families are well formed. */
#include <string.h>
#include <stdlib.h>
#include "harness/case.h"
#include "harness/harness.h"
#include "ops/matmul.h"
#include "tests/check.h"

/* The op's variants' forms, of dtype t or (t < 0) of any. */
static int nvariants(const kb_op *op, int t)
{
    int n = 0;
    KB_FOR_EACH_VARIANT(op, v)
        n += t < 0 || v->dtype == (kb_dtype)t;
    return n;
}

static int count_shapes(const char *list)
{
    int n = 1;
    for (; *list; ++list)
        n += *list == ',';
    return n;
}

/* Shapes in the op's families, all of them or the quick ones. */
static int family_shapes(const kb_op *op, int quick_only)
{
    int n = 0;
    for (const kb_family *f = op->families; f->name; ++f)
        if (!quick_only || f->quick)
            n += count_shapes(quick_only && f->quick_sizes ? f->quick_sizes : f->sizes);
    return n;
}

/* Index of field `name` in shape_fields such as "BxHxTqxTkxD[xHkv][c]", or -1. */
static int field_index(const char *fields, const char *name)
{
    char copy[64], *rest = copy, *tok;
    snprintf(copy, sizeof copy, "%s", fields);
    for (int i = 0; (tok = strsep(&rest, "x[]")); )
        if (*tok) {
            if (!strcmp(tok, name))
                return i;
            ++i;
        }
    return -1;
}

/* A family with an axis lists its shapes by that field, strictly rising,
 * so that a plot's line runs left to right; no shape is in two families. */
static void test_families_well_formed(void)
{
    char err[256];
    for (int i = 0; kb_ops[i]; ++i) {
        const kb_op *op = kb_ops[i];
        int quick = 0;
        for (const kb_family *f = op->families; f->name; ++f) {
            kb_shape *s;
            int ns = kb_parse_shape_list(op, f->sizes, &s, err, sizeof err);
            CHECK(ns > 0);
            quick += f->quick;
            int axis = f->axis ? field_index(op->shape_fields, f->axis) : 0;
            CHECK(axis >= 0);
            for (int k = 1; k < ns && f->axis; ++k)
                CHECK(s[k].d[axis] > s[k - 1].d[axis]);
            for (int k = 0; k < ns; ++k)
                CHECK(kb_family_of(op, &s[k]) == f);
            if (ns > 0)
                free(s);
            if (f->quick_sizes) { /* a subset of the family's own shapes */
                CHECK(f->quick);
                ns = kb_parse_shape_list(op, f->quick_sizes, &s, err, sizeof err);
                CHECK(ns > 0 && ns < count_shapes(f->sizes));
                for (int k = 0; k < ns; ++k)
                    CHECK(kb_family_of(op, &s[k]) == f);
                if (ns > 0)
                    free(s);
            }
        }
        CHECK(quick > 0); /* --quick runs every op */
    }
}

static int expand(int argc, char **argv, kb_job **jobs)
{
    kb_options o;
    char err[256];
    if (kb_parse_args(argc, argv, &o, err, sizeof err) != 0)
        return -1;
    return kb_expand_sweep(&o, jobs, err, sizeof err);
}

/* --max-noise and --min-samples set the stop rule, which the CSV names;
 * without them it is the default (1%, 20 samples, the 1 s cap). */
static void test_stop_rule(void)
{
    kb_options o;
    char err[256], rule[160];
    char *set[] = {"kbench", "run", "--max-noise", "2.5", "--min-samples", "50", "--max-time", "3"};
    CHECK(kb_parse_args(8, set, &o, err, sizeof err) == 0);
    CHECK(o.max_noise == 0.025 && o.min_samples == 50 && o.row_cap_s == 3);
    kb_stop_rule stop = kb_options_stop_rule(&o);
    kb_stop_rule_text(&stop, rule, sizeof rule);
    CHECK(!strcmp(rule, "median noise (sigma from the MAD) under 2.5% from 50 samples, or 3 s, or 2000 samples"));
    char *plain[] = {"kbench", "run"};
    CHECK(kb_parse_args(2, plain, &o, err, sizeof err) == 0);
    stop = kb_options_stop_rule(&o);
    kb_stop_rule_text(&stop, rule, sizeof rule);
    CHECK(!strcmp(rule, "median noise (sigma from the MAD) under 1% from 20 samples, or 1 s, or 2000 samples"));
}

/* --energy measures each op's largest default shape, or every row of --sizes. */
static void test_energy_rows(void)
{
    kb_options o;
    char err[256];
    kb_shape big = {3, {8192, 8192, 8192}, 0}, small = {3, {4096, 4096, 4096}, 0};
    char *off[] = {"kbench", "run"};
    CHECK(kb_parse_args(2, off, &o, err, sizeof err) == 0);
    CHECK(!kb_wants_energy(&o, &kb_op_matmul, &big, KB_F32));
    char *on[] = {"kbench", "run", "--energy"};
    CHECK(kb_parse_args(3, on, &o, err, sizeof err) == 0);
    CHECK(kb_wants_energy(&o, &kb_op_matmul, &big, KB_F32) && kb_wants_energy(&o, &kb_op_matmul, &big, KB_BF16));
    CHECK(!kb_wants_energy(&o, &kb_op_matmul, &small, KB_F32));
    char *sized[] = {"kbench", "run", "--energy", "--op", "matmul", "--sizes", "4096x4096x4096"};
    CHECK(kb_parse_args(7, sized, &o, err, sizeof err) == 0);
    CHECK(kb_wants_energy(&o, &kb_op_matmul, &small, KB_F32));
}

/* A row that needs more GPUs than the run has: a distributed op needs 2,
 * a variant its min_devices; one line says so, and a big enough run has no
 * reason. */
static void test_too_few_gpus(void)
{
    char why[256];
    kb_job job = {0};
    job.op = kb_find_op("allreduce");
    job.variant = job.op ? kb_find_variant(job.op, "nccl", KB_F32) : NULL;
    CHECK(job.variant != NULL);
    if (!job.variant)
        return;
    CHECK(kb_job_too_few_gpus(&job, 1, why, sizeof why) == why && strstr(why, "needs 2 or more GPUs, this run has 1"));
    CHECK(kb_job_too_few_gpus(&job, 2, why, sizeof why) == NULL);
    job.op = kb_find_op("ffn");
    job.variant = job.op ? kb_find_variant(job.op, "tp_nccl", KB_BF16) : NULL;
    if (job.variant) { /* built with NCCL */
        CHECK(job.variant->min_devices == 2 && kb_job_too_few_gpus(&job, 1, why, sizeof why) != NULL);
        CHECK(kb_job_too_few_gpus(&job, 8, why, sizeof why) == NULL);
    }
    job.variant = job.op ? kb_find_variant(job.op, "cublaslt", KB_BF16) : NULL;
    CHECK(job.variant && kb_job_too_few_gpus(&job, 1, why, sizeof why) == NULL);
}

/* In the default sweep of every op, a shape's rows of one case (dtype and
 * quirks) follow one another, so its inputs and reference are made once,
 * and each dtype's baseline leads its dtype's rows. */
static void test_rows_grouped_by_case(void)
{
    kb_job *jobs;
    char *all[] = {"kbench", "run"};
    int n = expand(2, all, &jobs);
    CHECK(n > 0);
    for (int i = 0; i < n; ++i) {
        int first_of_dtype = 1;
        for (int j = i - 1; j >= 0 && jobs[j].op == jobs[i].op &&
                            !memcmp(&jobs[j].shape, &jobs[i].shape, sizeof jobs[i].shape); --j) {
            if (jobs[j].variant->dtype == jobs[i].variant->dtype)
                first_of_dtype = 0;
            /* An earlier row of this case is the row just before, or its case's run. */
            if (kb_case_same(&jobs[j], &jobs[i]) && j < i - 1)
                CHECK(kb_case_same(&jobs[i - 1], &jobs[i]));
        }
        const char *base = kb_baseline_for(jobs[i].op, jobs[i].variant->dtype);
        if (first_of_dtype && base && kb_find_variant(jobs[i].op, base, jobs[i].variant->dtype))
            CHECK(!strcmp(jobs[i].variant->name, base));
    }
    free(jobs);
}

/* A case is checked against the machine before any of it is made: the
 * issue's oversized shapes are refused with what they need and what there
 * is, a normal one passes, and a small host refuses on its own figure. */
static void test_case_room(void)
{
    char why[192];
    const double gib = 1073741824.0, h200_host = 125 * gib, h200_gpu = 139.8 * gib;
    kb_job job = {kb_find_op("attention"), NULL, {0}};
    job.variant = kb_find_variant(job.op, "cudnn", KB_BF16);
    char err[256];
    CHECK(job.variant && kb_parse_shape(job.op, "64x64x32768x32768x128", &job.shape, err, sizeof err) == 0);
    if (!job.variant)
        return;
    const char *no = kb_case_room(&job, h200_host, h200_gpu, why, sizeof why);
    CHECK(no && strstr(no, "GiB of device memory") && strstr(no, "the GPU has 139.8 GiB"));
    printf("64x64x32768x32768x128 bf16: %s\n", no ? no : "fits");
    CHECK(kb_parse_shape(job.op, "1x1x128x128x64", &job.shape, err, sizeof err) == 0);
    CHECK(kb_case_room(&job, h200_host, h200_gpu, why, sizeof why) == NULL);
    CHECK((no = kb_case_room(&job, 1e5, h200_gpu, why, sizeof why)) && strstr(no, "GiB available"));
    /* softmax 400000x65536: 105 GB of input on the host, more than the GPU can hold with its copy */
    job.op = kb_find_op("softmax");
    job.variant = kb_find_variant(job.op, "vectorized", KB_F32);
    CHECK(kb_parse_shape(job.op, "400000x65536", &job.shape, err, sizeof err) == 0);
    CHECK((no = kb_case_room(&job, h200_host, h200_gpu, why, sizeof why)) && strstr(no, "device memory"));
    CHECK((no = kb_case_room(&job, h200_host, 0, why, sizeof why)) == NULL || strstr(no, "host memory"));
    CHECK(kb_host_available() > 0);
}

int main(void)
{
    test_case_room();
    test_stop_rule();
    test_energy_rows();
    test_families_well_formed();
    test_too_few_gpus();
    test_rows_grouped_by_case();
    const kb_op *mm = &kb_op_matmul;
    kb_job *jobs;
    int nv = nvariants(mm, -1);

    char *all[] = {"kbench", "run", "--op", "matmul"};
    int n = expand(4, all, &jobs);
    CHECK(n == family_shapes(mm, 0) * nv);
    /* The f32 baseline leads each shape's group (when it is registered). */
    if (kb_find_variant(mm, mm->baseline[KB_F32], KB_F32))
        for (int i = 0; i < n; i += nv)
            CHECK(strcmp(jobs[i].variant->name, mm->baseline[KB_F32]) == 0 && jobs[i].variant->dtype == KB_F32);
    for (int i = 0; i < n; ++i)
        CHECK(jobs[i].shape.nd == 3 && jobs[i].family && kb_family_of(mm, &jobs[i].shape) &&
              !strcmp(kb_family_of(mm, &jobs[i].shape)->name, jobs[i].family));
    free(jobs);

    /* --family takes only the named families, with their axis. */
    char *square[] = {"kbench", "run", "--op", "matmul", "--family", "square"};
    n = expand(6, square, &jobs);
    CHECK(n == count_shapes(mm->families[0].sizes) * nv && !strcmp(mm->families[0].name, "square"));
    for (int i = 0; i < n; ++i)
        CHECK(!strcmp(jobs[i].family, "square") && !strcmp(jobs[i].axis, "N") &&
              jobs[i].shape.d[0] == jobs[i].shape.d[1]);
    if (n > 0)
        free(jobs);
    kb_options fo;
    char ferr[256];
    char *unknown[] = {"kbench", "run", "--op", "matmul", "--family", "square,d64"};
    CHECK(kb_parse_args(6, unknown, &fo, ferr, sizeof ferr) != 0 && strstr(ferr, "unknown family 'd64'"));
    char *both[] = {"kbench", "run", "--family", "square", "--quick"};
    CHECK(kb_parse_args(5, both, &fo, ferr, sizeof ferr) != 0 && strstr(ferr, "give one"));
    /* Across ops, a family name takes each op's family of that name. */
    char *hostile[] = {"kbench", "run", "--family", "hostile"};
    n = expand(4, hostile, &jobs);
    CHECK(n > 0);
    for (int i = 0; i < n; ++i)
        CHECK(!strcmp(jobs[i].family, "hostile") && jobs[i].axis == NULL);
    if (n > 0)
        free(jobs);

    char *quick[] = {"kbench", "run", "--op", "matmul", "--quick"};
    n = expand(5, quick, &jobs);
    CHECK(n == family_shapes(mm, 1) * nv);
    CHECK(family_shapes(mm, 1) < family_shapes(mm, 0));
    free(jobs);
    /* A family's quick_sizes stand for its shapes in --quick: the
     * collectives' quick sweep stops at 4M elements. */
    const kb_op *ar = kb_find_op("allreduce");
    char *quick_ar[] = {"kbench", "run", "--op", "allreduce", "--variant", "nccl", "--dtype", "f32", "--quick"};
    n = expand(9, quick_ar, &jobs);
    CHECK(ar && ar->families[0].quick_sizes && n == count_shapes(ar->families[0].quick_sizes));
    for (int i = 0; i < n; ++i)
        CHECK(jobs[i].shape.d[0] <= 4194304 && !strcmp(jobs[i].family, "size"));
    if (n > 0)
        free(jobs);

    char *sized[] = {"kbench", "run", "--op", "matmul", "--sizes", "35x79x19,1x1x1", "--variant", "naive"};
    n = expand(8, sized, &jobs);
    CHECK(n == 2);
    CHECK(jobs[0].shape.d[0] == 35 && jobs[0].shape.d[1] == 79 && jobs[0].shape.d[2] == 19);
    CHECK(jobs[1].shape.d[0] == 1 && strcmp(jobs[1].variant->name, "naive") == 0);
    /* A --sizes shape that a family lists takes its name; others are custom. */
    CHECK(!strcmp(jobs[0].family, "hostile") && jobs[0].axis == NULL);
    free(jobs);
    char *custom[] = {"kbench", "run", "--op", "matmul", "--sizes", "8x8x8,4096x4096x4096", "--variant", "naive"};
    CHECK(expand(8, custom, &jobs) == 2);
    CHECK(!strcmp(jobs[0].family, "custom") && !strcmp(jobs[1].family, "square") && !strcmp(jobs[1].axis, "N"));
    free(jobs);
    char *test[] = {"kbench", "run", "--op", "matmul", "--test-sizes", "--variant", "naive"};
    CHECK(expand(7, test, &jobs) == count_shapes(mm->test_sizes) && !strcmp(jobs[0].family, "test"));
    free(jobs);

    char *glob[] = {"kbench", "run", "--op", "matmul", "--sizes", "8x8x8", "--variant", "na*"};
    CHECK(expand(8, glob, &jobs) == 1);
    free(jobs);

    /* --dtype bf16 keeps matmul's bf16 variants, each at every default shape. */
    char *bf16[] = {"kbench", "run", "--op", "matmul", "--dtype", "bf16"};
    int nbf16 = nvariants(mm, KB_BF16);
    n = expand(6, bf16, &jobs);
    CHECK(nbf16 > 0 && n == family_shapes(mm, 0) * nbf16);
    for (int i = 0; i < n; ++i)
        CHECK(jobs[i].variant->dtype == KB_BF16);
    /* Each shape starts with the bf16 baseline, so the rows after it get their speedup. */
    for (int i = 0; i < n; i += nbf16)
        CHECK(!strcmp(jobs[i].variant->name, kb_baseline_for(mm, KB_BF16)));
    CHECK(!strcmp(kb_baseline_for(mm, KB_BF16), "cublas") && !strcmp(kb_baseline_for(mm, KB_F32), "cublas"));
    if (n > 0)
        free(jobs);
    /* No softmax variant stores bf16, so a bf16-only sweep has nothing to run. */
    char *no_bf16[] = {"kbench", "run", "--op", "softmax", "--dtype", "bf16"};
    CHECK(expand(6, no_bf16, &jobs) == -1);

    /* All ops by default: every op contributes rows, copy (the ceiling) first. */
    char *every[] = {"kbench", "run", "--quick"};
    n = expand(3, every, &jobs);
    CHECK(n > 0 && strcmp(jobs[0].op->name, "copy") == 0);
    if (n > 0)
        free(jobs);

    /* A flag suffix parses into flags and prints back. */
    kb_shape causal;
    char err[256], text[64];
    CHECK(kb_parse_shape(kb_find_op("attention"), "2x3x16x16x8c", &causal, err, sizeof err) == 0);
    CHECK(causal.flags == 1 && causal.nd == 5 && causal.d[4] == 8);
    kb_format_shape(kb_find_op("attention"), &causal, text, sizeof text);
    CHECK(strcmp(text, "2x3x16x16x8c") == 0);
    CHECK(kb_parse_shape(mm, "2x3x4c", &causal, err, sizeof err) != 0);

    /* Dimensions of any length are "too large" without overflow; a long
     * text is refused whole, never parsed as a cut prefix. */
    const char *huge[] = {"16x16x9999999999999999999", "16x16x99999999999999999999", "2147483648x1x1"};
    for (int i = 0; i < 3; ++i) {
        CHECK(kb_parse_shape(mm, huge[i], &causal, err, sizeof err) != 0);
        CHECK(strstr(err, "between 1 and 2147483647") != NULL);
    }
    char long_shape[400];
    snprintf(long_shape, sizeof long_shape, "1x1x%0300dx", 1);
    CHECK(kb_parse_shape(mm, long_shape, &causal, err, sizeof err) != 0 && strstr(err, "malformed"));
    CHECK(kb_parse_shape(mm, "2147483647x1x1", &causal, err, sizeof err) == 0);

    /* Numbers are finite decimals. */
    double v;
    CHECK(kb_parse_decimal("1.5e2", &v) == 0 && v == 150);
    CHECK(kb_parse_decimal("-2", &v) == 0 && v == -2);
    CHECK(kb_parse_decimal("0.0009", &v) == 0 && v == 0.0009);
    CHECK(kb_parse_decimal("1E-300", &v) == 0 && v == 1e-300);
    /* One grammar: no sign but '-', no space or newline, digits on both sides of a point. */
    const char *not_decimal[] = {"", "nan", "inf", "-inf", "0x10", " 1", "1 ", "\n1", "+1", "1e999", "1e-999",
                                 "1,5", ".5", "5.", "1e", "1e+", "-", "1.5.2", "1e5e3"};
    for (size_t i = 0; i < sizeof not_decimal / sizeof *not_decimal; ++i)
        CHECK(kb_parse_decimal(not_decimal[i], &v) != 0);
    /* Integers are digits only, range-checked without wrapping. */
    uint64_t u;
    CHECK(kb_parse_count("18446744073709551615", UINT64_MAX, &u) == 0 && u == UINT64_MAX);
    CHECK(kb_parse_count("0008", 8, &u) == 0 && u == 8);
    const char *not_count[] = {"", " 8", "\n8", "+8", "-0", "8 ", "1e3", "3.0", "0x8", "18446744073709551616"};
    for (size_t i = 0; i < sizeof not_count / sizeof *not_count; ++i)
        CHECK(kb_parse_count(not_count[i], UINT64_MAX, &u) != 0);
    CHECK(kb_parse_count("9", 8, &u) != 0);

    /* Every op once is accepted; an op twice or an empty item is not. */
    char names[512] = "", *argv_all[] = {"kbench", "run", "--op", names};
    kb_options o;
    int nops = 0;
    for (; kb_ops[nops]; ++nops)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", nops ? "," : "", kb_ops[nops]->name);
    CHECK(kb_parse_args(4, argv_all, &o, err, sizeof err) == 0 && o.nops == nops);
    char *twice[] = {"kbench", "run", "--op", "softmax,copy,softmax"};
    CHECK(kb_parse_args(4, twice, &o, err, sizeof err) != 0 && strstr(err, "--op names 'softmax' twice"));
    char *no_dtype[] = {"kbench", "run", "--dtype", ","};
    CHECK(kb_parse_args(4, no_dtype, &o, err, sizeof err) != 0 && strstr(err, "--dtype has an empty item"));

    /* Every op's test sizes parse (the families' are checked above). */
    for (int i = 0; kb_ops[i]; ++i) {
        kb_shape *s;
        int ns = kb_parse_shape_list(kb_ops[i], kb_ops[i]->test_sizes, &s, err, sizeof err);
        CHECK(ns > 0);
        if (ns > 0)
            free(s);
    }
    return CHECK_DONE();
}
