/* Command-line parsing.  Every problem becomes one line in err and exit
 * code 2 from main, before anything runs or is written. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "harness/timing.h"

void kb_print_usage(FILE *f)
{
    fputs("usage: kbench list\n"
          "       kbench run [--op OP[,OP]] [--variant NAME|GLOB[,..]] [--sizes SHAPE[,SHAPE]]\n"
          "                  [--dtype f32|bf16|f16|e4m3|e5m2[,..]] [--quick] [--check] [--hot]\n"
          "                  [--csv FILE | --out-dir DIR] [--device N] [--max-time SECONDS]\n"
          "                  [--max-noise PCT] [--min-samples N] [--format csv|md|jsonl]\n"
          "                  [--family NAME[,..]] [--test-sizes] [--ceilings] [--energy]\n"
          "                  [--devices all|I,J,.. [--replicate]] [--kernel FILE.cu]\n"
          "       kbench ceilings [--device N]\n"
          "       kbench pe --seq-len T --d-model D [--paper]\n"
          "       kbench compare BASE.csv NEW.csv [--threshold PCT]\n"
          "       kbench derive RUN.csv\n"
          "       kbench model encoder|decoder|seq2seq [...]  (see below)\n"
          "       kbench help | version\n"
          "Shapes are op-specific (matmul: MxNxK); `kbench list` shows each op's syntax.\n",
          f);
}

/* arg is untrusted (an option, a value, a list item): quoted, so the
 * message stays one line whatever it holds. */
static int fail(char *err, size_t errlen, const char *fmt, const char *arg)
{
    char q[KB_QUOTE_LEN];
    snprintf(err, errlen, fmt, kb_quote(arg, q, sizeof q));
    return -1;
}

typedef int (*item_fn)(kb_options *o, const char *item, char *err, size_t errlen);

/* Whether the items before tok in copy (NUL-separated by strsep) hold it. */
static int seen_before(const char *copy, const char *tok)
{
    for (const char *p = copy; p < tok; p += strlen(p) + 1)
        if (!strcmp(p, tok))
            return 1;
    return 0;
}

/* Call fn on each item of a comma-separated list.  Empty items ("a,,b",
 * ",") are an error, as in --sizes, so no list is silently empty; so is an
 * item given twice, which in these lists (ops, variants, families, dtypes,
 * devices) can only be a slip. */
static int each_item(kb_options *o, const char *flag, const char *list, item_fn fn, char *err,
                     size_t errlen)
{
    char *copy = strdup(list), *rest = copy, *tok, q[KB_QUOTE_LEN];
    int rc = copy ? 0 : fail(err, errlen, "out of memory parsing %s", flag);
    while (rc == 0 && (tok = strsep(&rest, ",")))
        rc = !*tok ? fail(err, errlen, "%s has an empty item in its list", flag)
             : seen_before(copy, tok) ? kb_fail(err, errlen, "%s names '%s' twice", flag, kb_quote(tok, q, sizeof q))
             : fn(o, tok, err, errlen);
    free(copy);
    return rc;
}

/* each_item lets each op in at most once, so ops[] (as long as the op list,
 * see registry.c) always has room. */
static int add_op(kb_options *o, const char *name, char *err, size_t errlen)
{
    const kb_op *op = kb_find_op(name);
    if (!op)
        return fail(err, errlen, "unknown op '%s' (see kbench list)", name);
    o->ops[o->nops++] = op;
    return 0;
}

static int parse_ops(kb_options *o, const char *list, char *err, size_t errlen)
{
    o->nops = 0;
    return each_item(o, "--op", list, add_op, err, errlen);
}

static int add_dtype(kb_options *o, const char *name, char *err, size_t errlen)
{
    kb_dtype t;
    if (kb_parse_dtype(name, &t) != 0)
        return fail(err, errlen, "unknown dtype '%s' (expected f32, bf16, f16, e4m3 or e5m2)", name);
    o->dtype_mask |= 1 << t;
    return 0;
}

int kb_variant_selected(const kb_options *o, const kb_variant *v)
{
    if (!o->variant_pattern)
        return 1;
    char *copy = strdup(o->variant_pattern), *save = NULL;
    int hit = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && !hit; tok = strtok_r(NULL, ",", &save))
        hit = fnmatch(tok, v->name, 0) == 0;
    free(copy);
    return hit;
}

/* Each name or glob in --variant must match some variant of a selected op. */
static int known_variant(kb_options *o, const char *pattern, char *err, size_t errlen)
{
    for (int i = 0; i < o->nops; ++i)
        KB_FOR_EACH_VARIANT(o->ops[i], v)
            if (fnmatch(pattern, v->name, 0) == 0)
                return 0;
    return fail(err, errlen, "unknown variant '%s' for the selected ops (see kbench list)", pattern);
}

/* Each name in --family must name a family of some selected op. */
static int known_family(kb_options *o, const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < o->nops; ++i)
        for (const kb_family *f = o->ops[i]->families; f->name; ++f)
            if (!strcmp(f->name, name))
                return 0;
    return fail(err, errlen, "unknown family '%s' for the selected ops (see kbench list)", name);
}

/* One --devices index: a plain integer, each at most once, at most
 * KB_MAX_RANKS of them.  Whether the machine has it is found later, by
 * the run (exit 1, not bad input). */
static int add_device(kb_options *o, const char *item, char *err, size_t errlen)
{
    uint64_t v;
    if (kb_parse_count(item, 1024, &v) != 0)
        return fail(err, errlen, "--devices needs 'all' or device indices from 0 to 1024, got '%s'", item);
    for (int i = 0; i < o->ndevices; ++i)
        if (o->devices[i] == (int)v)
            return fail(err, errlen, "--devices names device %s twice", item);
    if (o->ndevices == KB_MAX_RANKS) {
        char most[16];
        snprintf(most, sizeof most, "%d", KB_MAX_RANKS);
        return fail(err, errlen, "--devices names more than %s devices", most);
    }
    o->devices[o->ndevices++] = (int)v;
    return 0;
}

static int parse_devices(kb_options *o, const char *list, char *err, size_t errlen)
{
    if (o->ndevices)
        return fail(err, errlen, "%s is given twice", "--devices");
    if (!strcmp(list, "all")) {
        o->ndevices = -1;
        return 0;
    }
    return each_item(o, "--devices", list, add_device, err, errlen);
}

/* kbench run keeps the stop rule as three of its options (workers.c's
 * estimate of a row's cost reads row_cap_s). */
static int parse_stop_flag(kb_options *o, const char *flag, const char *val, char *err, size_t errlen)
{
    kb_stop_rule rule = kb_options_stop_rule(o);
    if (kb_parse_stop_flag(flag, val, &rule, err, errlen) != 0)
        return -1;
    o->row_cap_s = rule.cap_s;
    o->max_noise = rule.max_noise;
    o->min_samples = rule.min_samples;
    return 0;
}

static const char *value_of(int argc, char **argv, int *i)
{
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static int parse_run_flag(int argc, char **argv, int *i, kb_options *o, char *err, size_t errlen)
{
    const char *a = argv[*i];
    uint64_t v;
    if (!strcmp(a, "--quick")) o->quick = 1;
    else if (!strcmp(a, "--check")) o->check_only = 1;
    else if (!strcmp(a, "--hot")) o->hot = 1;
    else if (!strcmp(a, "--ceilings")) o->ceilings = 1;
    else if (!strcmp(a, "--energy")) o->energy = 1;
    else if (!strcmp(a, "--test-sizes")) o->test_sizes = 1;
    else if (!strcmp(a, "--replicate")) o->replicate = 1;
    else if (!strcmp(a, "--op") || !strcmp(a, "--variant") || !strcmp(a, "--sizes") ||
             !strcmp(a, "--dtype") || !strcmp(a, "--csv") || !strcmp(a, "--device") ||
             !strcmp(a, "--out-dir") || kb_is_stop_flag(a) || !strcmp(a, "--format") || !strcmp(a, "--devices") ||
             !strcmp(a, "--family") || !strcmp(a, "--kernel")) {
        const char *val = value_of(argc, argv, i);
        if (!val || !*val)
            return fail(err, errlen, "%s needs a value", a);
        if (!strcmp(a, "--op")) return parse_ops(o, val, err, errlen);
        if (!strcmp(a, "--variant")) o->variant_pattern = val;
        else if (!strcmp(a, "--sizes")) o->sizes = val;
        else if (!strcmp(a, "--family")) o->families = val;
        else if (!strcmp(a, "--kernel")) o->kernel_path = val;
        else if (!strcmp(a, "--dtype")) return each_item(o, a, val, add_dtype, err, errlen);
        else if (!strcmp(a, "--csv")) o->csv_path = val;
        else if (!strcmp(a, "--out-dir")) o->out_dir = val;
        else if (!strcmp(a, "--devices")) return parse_devices(o, val, err, errlen);
        else if (kb_is_stop_flag(a)) return parse_stop_flag(o, a, val, err, errlen);
        else if (!strcmp(a, "--device")) {
            if (kb_int_flag(a, val, 0, 1024, &v, err, errlen) != 0)
                return -1;
            o->device = (int)v;
            o->device_given = 1;
        } else if (kb_parse_format(val, &o->format) != 0) /* --format, the last */
            return fail(err, errlen, "--format needs csv, md or jsonl, got '%s'", val);
    } else
        return fail(err, errlen, "unknown option '%s' (see kbench help)", a);
    return 0;
}

/* kbench pe --seq-len T --d-model D [--paper] */
static int parse_pe(int argc, char **argv, kb_options *o, char *err, size_t errlen)
{
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i];
        uint64_t v;
        if (!strcmp(a, "--paper")) {
            o->paper = 1;
            continue;
        }
        int *dst = !strcmp(a, "--seq-len") ? &o->seq_len : !strcmp(a, "--d-model") ? &o->d_model : NULL;
        if (!dst)
            return fail(err, errlen, "pe takes --seq-len T, --d-model D and --paper, not '%s'", a);
        const char *val = value_of(argc, argv, &i);
        if (!val)
            return fail(err, errlen, "%s needs a value", a);
        if (kb_int_flag(a, val, 1, 65536, &v, err, errlen) != 0)
            return -1;
        *dst = (int)v;
    }
    if (!o->seq_len || !o->d_model)
        return fail(err, errlen, "pe needs --seq-len T and --d-model D%s", "");
    return 0;
}

/* --help (or -h) anywhere after a command asks for the usage, exit 0. */
int kb_asks_help(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

int kb_parse_args(int argc, char **argv, kb_options *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->row_cap_s = KB_STOP_CAP_S;
    if (argc < 2)
        return fail(err, errlen, "missing command: list, run, ceilings, compare, pe, model, help or version%s", "");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "list")) o->cmd = KB_CMD_LIST;
    else if (!strcmp(cmd, "run")) o->cmd = KB_CMD_RUN;
    else if (!strcmp(cmd, "ceilings")) o->cmd = KB_CMD_CEILINGS;
    else if (!strcmp(cmd, "pe")) o->cmd = KB_CMD_PE;
    else if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) o->cmd = KB_CMD_HELP;
    else if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) o->cmd = KB_CMD_VERSION;
    else return fail(err, errlen, "unknown command '%s' (expected list, run, ceilings, compare, pe, model, help or version)", cmd);
    if (kb_asks_help(argc - 1, argv + 1)) {
        o->cmd = KB_CMD_HELP;
        return 0;
    }
    if (o->cmd == KB_CMD_CEILINGS) {
        for (int i = 2; i < argc; ++i) {
            if (strcmp(argv[i], "--device") != 0)
                return fail(err, errlen, "ceilings takes only --device N, not '%s'", argv[i]);
            if (parse_run_flag(argc, argv, &i, o, err, errlen) != 0)
                return -1;
        }
        return 0;
    }
    if (o->cmd == KB_CMD_PE)
        return parse_pe(argc, argv, o, err, errlen);
    if (o->cmd != KB_CMD_RUN) {
        if (argc > 2)
            return fail(err, errlen, "'%s' takes no arguments", cmd);
        return 0;
    }
    for (int i = 2; i < argc; ++i)
        if (parse_run_flag(argc, argv, &i, o, err, errlen) != 0)
            return -1;
    /* A file of one's own brings its op (and the variants beside it) once
     * it has compiled and loaded: before the checks of --variant. */
    if (o->kernel_path && o->nops > 1)
        return fail(err, errlen, "--kernel runs its file's op alone: give one --op at most%s", "");
    if (o->kernel_path && kb_own_kernel_load(o, err, errlen) != 0)
        return -1;
    if (o->nops == 0)
        for (int i = 0; kb_ops[i]; ++i)
            o->ops[o->nops++] = kb_ops[i];
    if (o->sizes && o->nops != 1)
        return fail(err, errlen, "--sizes needs exactly one --op, since shapes are op-specific%s", "");
    if (!!o->sizes + o->quick + o->test_sizes + !!o->families > 1)
        return fail(err, errlen, "--sizes, --family, --quick and --test-sizes each choose the sizes; give one%s", "");
    if (o->device_given && o->ndevices)
        return fail(err, errlen, "--device and --devices both choose the GPUs; give one%s", "");
    if (o->replicate && !o->ndevices)
        return fail(err, errlen, "--replicate needs --devices%s", "");
    if (o->csv_path && o->out_dir)
        return fail(err, errlen, "--csv and --out-dir both name the output; give one%s", "");
    if (o->variant_pattern && each_item(o, "--variant", o->variant_pattern, known_variant, err, errlen) != 0)
        return -1;
    if (o->families && each_item(o, "--family", o->families, known_family, err, errlen) != 0)
        return -1;
    return 0;
}
