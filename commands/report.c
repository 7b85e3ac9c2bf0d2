/* kbench report RUN.csv [RUN.csv ...] [--readme FILE]: one markdown row per
 * (op, dtype) with kbench's best own variant at the op's representative
 * shape, its speed, % of roofline, × the op's baseline, × PyTorch and
 * GFLOP/J.  The README's results table is this output, so it is never
 * copied by hand.  docs/cli.md states the rules. */
#include "commands/report.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "harness/csv_read.h"
#include "harness/harness.h"

#define BEGIN_MARK "<!-- report:begin -->"
#define END_MARK "<!-- report:end -->"
#define ACROSS_BEGIN_MARK "<!-- report-across:begin -->"
#define ACROSS_END_MARK "<!-- report-across:end -->"
#define STAGES_BEGIN_MARK "<!-- report-stages:begin -->"
#define STAGES_END_MARK "<!-- report-stages:end -->"
#define USAGE "usage: kbench report RUN.csv [RUN.csv ...] [--across | --stages] [--readme FILE]"
#define DASH "–" /* a cell the runs have no figure for */

/* A measured row: PASS with a time, or FAIL.  rank is its file's place,
 * oldest first, so the newest measurement of a key sorts last. */
typedef struct {
    const kb_run_file *file;
    const kb_run_row *row;
    int rank, index;
    double flops, bytes;       /* of one run of the row */
    double pct_of_peak, gflop_per_j;  /* NAN when the run has none */
    int compute;               /* compute-bound, else memory-bound */
} entry;

/* One line of the table: the best own row, and what it is measured against. */
typedef struct {
    const entry *best, *baseline, *torch;
    const char *baseline_name;
} table_line;

enum { ONE_GPU, ACROSS, STAGES }; /* what the table shows */

typedef struct {
    kb_run_file *files;
    int nfiles;
    int *order; /* file indices, oldest first by `# date:` */
    int across; /* --across: the rows across GPUs ("0+1"), hot L2 or not, in place of one GPU's */
} run_set;

static const char *date_of(const kb_run_file *f)
{
    const char *d = kb_run_meta(f, "date");
    return d ? d : ""; /* undated runs count as oldest, as tools/list_runs.sh does */
}

static const run_set *sort_runs; /* qsort has no context argument */

static int by_date(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    int c = strcmp(date_of(&sort_runs->files[i]), date_of(&sort_runs->files[j]));
    return c ? c : i - j;
}

/* The baseline of the op's rows of this dtype as the newest run names it
 * (baseline_<op> for f32, baseline_<dtype>_<op> for the others), else as
 * this build does. */
static const char *baseline_of(const run_set *s, const char *op, const char *dtype)
{
    char key[160];
    if (!strcmp(dtype, "f32"))
        snprintf(key, sizeof key, "baseline_%s", op);
    else
        snprintf(key, sizeof key, "baseline_%s_%s", dtype, op);
    for (int i = s->nfiles - 1; i >= 0; --i) {
        const char *v = kb_run_meta(&s->files[s->order[i]], key);
        if (v)
            return v;
    }
    const kb_op *o = kb_find_op(op);
    kb_dtype t;
    return o && kb_parse_dtype(dtype, &t) == 0 ? kb_baseline_for(o, t) : NULL;
}

/* kbench's own kernels: not the baseline, not PyTorch, and not a vendor
 * library call (cuBLAS, cuDNN, NCCL) by this build's registry.  Variants the
 * registry does not know (the model's) are kbench's, as are those that
 * spread library calls over GPUs (tensor-parallel layers): the
 * parallelism is what they measure. */
static int own_variant(const char *op, const char *variant, const char *baseline)
{
    if (!strncmp(variant, "torch", 5) || (baseline && !strcmp(variant, baseline)))
        return 0;
    const kb_op *o = kb_find_op(op);
    const kb_variant *v = o ? kb_find_variant_named(o, variant) : NULL;
    return !v || v->min_devices > 1 || !(v->needs & (KB_NEEDS_CUBLAS | KB_NEEDS_CUDNN | KB_NEEDS_NCCL));
}

/* A numeric cell of the entry's row by column name: NAN when absent. */
static int cell(const entry *e, const char *name, double *out, char *err, size_t errlen)
{
    return kb_run_decimal(e->file, e->row, kb_run_column(e->file, name), out, err, errlen);
}

/* The row's figures.  FLOP and bytes are the raw work every rate here
 * comes from; a CSV without flops/bytes columns has only the rates, whose
 * product with the median gives them back.  The bound is the row's own
 * column; without one (older CSVs), a row of no FLOP is memory-bound and
 * any other compute-bound. */
static int read_entry(entry *e, char *err, size_t errlen)
{
    double gflop_s, gb_s;
    if (cell(e, "flops", &e->flops, err, errlen) || cell(e, "bytes", &e->bytes, err, errlen) ||
        cell(e, "gflop_s", &gflop_s, err, errlen) || cell(e, "gb_s", &gb_s, err, errlen) ||
        cell(e, "pct_of_peak", &e->pct_of_peak, err, errlen) || cell(e, "gflop_per_j", &e->gflop_per_j, err, errlen))
        return -1;
    const double ms = e->row->median_ms;
    e->flops = !isnan(e->flops) ? e->flops : isnan(gflop_s) ? 0 : gflop_s * ms * 1e6;
    e->bytes = !isnan(e->bytes) ? e->bytes : isnan(gb_s) ? 0 : gb_s * ms * 1e6;
    const char *bound = kb_run_cell(e->file, e->row, kb_run_column(e->file, "bound"));
    e->compute = *bound ? !strcmp(bound, "compute") : e->flops > 0;
    return 0;
}

/* Key order, then oldest first: the last entry of a key is its newest. */
static int by_key(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = strcmp(a->row->op, b->row->op);
    c = c ? c : strcmp(a->row->dtype, b->row->dtype);
    c = c ? c : strcmp(a->row->shape, b->row->shape);
    c = c ? c : strcmp(a->row->variant, b->row->variant);
    c = c ? c : a->rank - b->rank;
    return c ? c : a->index - b->index;
}

static int same_key(const entry *a, const entry *b)
{
    return !strcmp(a->row->op, b->row->op) && !strcmp(a->row->dtype, b->row->dtype) &&
           !strcmp(a->row->shape, b->row->shape) && !strcmp(a->row->variant, b->row->variant);
}

/* Every measured cold-L2 row, then per (op, variant, dtype, shape) only the
 * newest (of a --replicate run's copies, the last GPU's); a FAIL there
 * hides an older PASS, then leaves the table.  SKIP rows and untimed rows
 * (--check) measured nothing and take no part, nor do rows across GPUs
 * ("0+1"): the table is one GPU's.  With --across every measured row
 * stays, hot ones too (collectives are timed with L2 warm, as nccl-tests
 * does), and only rows across GPUs compete for a line (fastest_own), the
 * others being their baselines.  The model's stage rows have their own
 * table (--stages). */
static entry *merge_rows(const run_set *s, int *n, char *err, size_t errlen)
{
    int total = 0;
    for (int i = 0; i < s->nfiles; ++i)
        total += s->files[i].nrows;
    entry *e = kb_must(malloc(((size_t)total + 1) * sizeof *e));
    *n = 0;
    for (int rank = 0; rank < s->nfiles; ++rank) {
        const kb_run_file *f = &s->files[s->order[rank]];
        for (int i = 0; i < f->nrows; ++i) {
            const kb_run_row *r = &f->rows[i];
            int measured = !strcmp(r->status, "FAIL") || (!strcmp(r->status, "PASS") && r->median_ms > 0);
            int hot = r->l2 && !strcmp(r->l2, "hot"), across = strchr(r->devices, '+') != NULL;
            if (!measured || (!s->across && (hot || across)) || !strncmp(r->op, "stage-", 6))
                continue;
            e[*n] = (entry){f, r, rank, i, 0, 0, 0, 0, 0};
            if (read_entry(&e[(*n)++], err, errlen) != 0) {
                free(e);
                return NULL;
            }
        }
    }
    qsort(e, (size_t)*n, sizeof *e, by_key);
    int kept = 0;
    for (int i = 0; i < *n; ++i)
        if ((i + 1 == *n || !same_key(&e[i], &e[i + 1])) && strcmp(e[i].row->status, "FAIL"))
            e[kept++] = e[i];
    *n = kept;
    return e;
}

/* Whether the row's shape is one of its op's family shapes. */
static int default_shape(const kb_op *op, const char *shape)
{
    kb_shape parsed;
    char err[256];
    return op && kb_parse_shape(op, shape, &parsed, err, sizeof err) == 0 && kb_family_of(op, &parsed);
}

/* The representative shape is the largest of the op's default shapes,
 * by FLOP then bytes; an op with none of them in the runs (or one this
 * build does not know, the model's) takes the largest it has.  With
 * --across it is the largest shape run across GPUs, default or not: the
 * reference run adds the tensor-parallel FFN at a size for that table. */
typedef struct {
    int is_default;
    double flops, bytes;
} shape_size;

static int larger(shape_size a, shape_size b)
{
    if (a.is_default != b.is_default)
        return a.is_default > b.is_default;
    return a.flops != b.flops ? a.flops > b.flops : a.bytes > b.bytes;
}

/* [s, end): the rows of one shape.  The fastest own row (with --across,
 * of those across GPUs), or NULL. */
static const entry *fastest_own(const entry *s, const entry *end, const char *baseline, int across)
{
    const entry *best = NULL;
    for (const entry *e = s; e < end; ++e)
        if (own_variant(e->row->op, e->row->variant, baseline) && (!across || strchr(e->row->devices, '+')) &&
            (!best || e->row->median_ms < best->row->median_ms))
            best = e;
    return best;
}

static const entry *find_variant(const entry *s, const entry *end, const char *variant)
{
    for (const entry *e = s; e < end && variant; ++e)
        if (!strcmp(e->row->variant, variant))
            return e;
    return NULL;
}

/* PyTorch's eager row: `torch`, or, for an op it runs on several
 * backends (attention_backward's torch_cudnn and torch_flash), the fastest
 * of them; torch.compile's row is not eager PyTorch. */
static const entry *find_torch(const entry *s, const entry *end)
{
    const entry *best = find_variant(s, end, "torch");
    if (best)
        return best;
    for (const entry *e = s; e < end; ++e)
        if (!strncmp(e->row->variant, "torch_", 6) && strcmp(e->row->variant, "torch_compile") &&
            (!best || e->row->median_ms < best->row->median_ms))
            best = e;
    return best;
}

static const entry *group_end(const entry *e, const entry *end, int same_shape)
{
    const entry *g = e;
    while (g < end && !strcmp(g->row->op, e->row->op) && !strcmp(g->row->dtype, e->row->dtype) &&
           (!same_shape || !strcmp(g->row->shape, e->row->shape)))
        ++g;
    return g;
}

/* One (op, dtype) group [g, end): its line, or line->best NULL when no own
 * variant has a passing row. */
static table_line pick_line(const run_set *s, const entry *g, const entry *end)
{
    const kb_op *op = kb_find_op(g->row->op);
    const char *baseline = baseline_of(s, g->row->op, g->row->dtype);
    const entry *shape = NULL, *shape_end = NULL;
    shape_size top = {0, 0, 0};
    table_line line = {NULL, NULL, NULL, baseline};
    for (const entry *e = g, *next; e < end; e = next) {
        next = group_end(e, end, 1);
        const entry *best = fastest_own(e, next, baseline, s->across);
        if (!best)
            continue;
        shape_size size = {s->across || default_shape(op, e->row->shape), best->flops, best->bytes};
        if (!shape || larger(size, top)) {
            shape = e, shape_end = next, top = size;
            line.best = best;
        }
    }
    line.baseline = find_variant(shape, shape_end, baseline);
    line.torch = find_torch(shape, shape_end);
    return line;
}

static int by_table_order(const void *pa, const void *pb);

/* The table's lines: ops in the registry's order (others after, by name),
 * f32 before bf16. */
static table_line *pick_lines(const run_set *s, const entry *rows, int n, int *nlines)
{
    table_line *lines = kb_must(malloc(((size_t)n + 1) * sizeof *lines));
    *nlines = 0;
    for (const entry *g = rows, *next; g < rows + n; g = next) {
        next = group_end(g, rows + n, 0);
        lines[*nlines] = pick_line(s, g, next);
        *nlines += lines[*nlines].best != NULL;
    }
    qsort(lines, (size_t)*nlines, sizeof *lines, by_table_order);
    return lines;
}

static int op_rank(const char *name)
{
    int i = 0;
    while (kb_ops[i] && strcmp(kb_ops[i]->name, name))
        ++i;
    return i; /* past the registry's ops when unknown */
}

static int dtype_rank(const char *name)
{
    kb_dtype t;
    return kb_parse_dtype(name, &t) == 0 ? (int)t : KB_DTYPE_COUNT;
}

static int by_table_order(const void *pa, const void *pb)
{
    const kb_run_row *a = ((const table_line *)pa)->best->row, *b = ((const table_line *)pb)->best->row;
    int c = op_rank(a->op) - op_rank(b->op);
    c = c ? c : strcmp(a->op, b->op);
    c = c ? c : dtype_rank(a->dtype) - dtype_rank(b->dtype);
    return c ? c : strcmp(a->dtype, b->dtype);
}

/* A cell's text with '|' escaped, so it cannot split the row.  Key cells
 * hold no control characters (csv_read.c); other text comes quoted. */
static void md_text(FILE *out, const char *s)
{
    fputs("| ", out);
    for (; *s; ++s) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
    fputc(' ', out);
}

/* "× baseline" and "× PyTorch": the other row's median over ours. */
static void speedup(FILE *out, const entry *other, const entry *ours, const char *name)
{
    char q[KB_QUOTE_LEN], text[KB_QUOTE_LEN + 32];
    if (!other) {
        md_text(out, DASH);
        return;
    }
    snprintf(text, sizeof text, "%.2f×%s%s", other->row->median_ms / ours->row->median_ms, name ? " " : "",
             name ? kb_quote(name, q, sizeof q) : "");
    md_text(out, text);
}

/* The run's file name without folder or ".csv", quoted: paths are untrusted. */
static void run_name(FILE *out, const kb_run_file *f)
{
    char q[KB_QUOTE_LEN];
    const char *base = strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path;
    size_t n = strlen(base);
    kb_quote(base, q, sizeof q);
    if (n > 4 && !strcmp(base + n - 4, ".csv") && strlen(q) == n)
        q[n - 4] = '\0';
    md_text(out, q);
}

/* A compute-bound row shows TFLOP/s, a memory-bound one GB/s. */
static void print_line(FILE *out, const table_line *l, int with_run)
{
    const entry *b = l->best;
    const double ms = b->row->median_ms;
    char text[64];
    md_text(out, b->row->op);
    md_text(out, b->row->dtype);
    md_text(out, b->row->variant);
    md_text(out, b->row->shape);
    if (b->compute)
        snprintf(text, sizeof text, "%.1f TFLOP/s", b->flops / ms * 1e-9);
    else
        snprintf(text, sizeof text, "%.0f GB/s", b->bytes / ms * 1e-6);
    md_text(out, text);
    snprintf(text, sizeof text, "%.1f%%", b->pct_of_peak);
    md_text(out, isnan(b->pct_of_peak) ? DASH : text);
    speedup(out, l->baseline, b, l->baseline_name);
    speedup(out, l->torch, b, NULL);
    snprintf(text, sizeof text, "%.1f", b->gflop_per_j);
    md_text(out, isnan(b->gflop_per_j) || b->gflop_per_j <= 0 || b->flops <= 0 ? DASH : text);
    if (with_run)
        run_name(out, b->file);
    fputs("|\n", out);
}

/* A metadata text of run f for markdown: letters, digits and . : - + only. */
static const char *meta_text(const kb_run_file *f, const char *key, char *buf, size_t len)
{
    const char *v = kb_run_meta(f, key);
    size_t n = 0;
    for (; v && *v && n + 1 < len; ++v)
        buf[n++] = (isalnum((unsigned char)*v) || strchr(".:-+", *v)) ? *v : '?';
    buf[n] = '\0';
    return n ? buf : "?";
}

/* Under the table, a line per run: what it was, and the ceilings its
 * percentages are against, so no figure in the prose is copied by hand. */
static void run_lines(FILE *out, const run_set *s)
{
    for (int k = 0; k < s->nfiles; ++k) {
        const kb_run_file *f = &s->files[s->order[k]];
        char commit[64], date[64], q[KB_QUOTE_LEN];
        const char *base = strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path;
        fprintf(out, "\nRun `%s`: commit %s, %s", kb_quote(base, q, sizeof q), meta_text(f, "git_commit", commit, sizeof commit),
                meta_text(f, "date", date, sizeof date));
        double mem = kb_run_meta_number(f, "ceiling_mem_gb_s"), fp32 = kb_run_meta_number(f, "ceiling_fp32_gflop_s"),
               tc = kb_run_meta_number(f, "ceiling_tc_gflop_s"), clock = kb_run_meta_number(f, "sm_clock_mhz");
        if (!isnan(mem) && !isnan(fp32) && !isnan(tc))
            fprintf(out, "; ceilings measured: %.0f GB/s of memory, %.1f TFLOP/s of fp32 FMA, %.0f TFLOP/s of bf16 tensor math",
                    mem, fp32 * 1e-3, tc * 1e-3);
        double tc_clock = kb_run_meta_number(f, "ceiling_tc_clock_mhz"),
               tc_inside = kb_run_meta_number(f, "ceiling_tc_clock_inside_mhz");
        if (!isnan(mem) && !isnan(fp32) && !isnan(tc) && !isnan(tc_clock)) {
            fprintf(out, " at %.0f MHz", tc_clock);
            if (!isnan(tc_inside))
                fprintf(out, " by NVML, %.0f inside the kernel", tc_inside);
        }
        double ds_mem = kb_run_meta_number(f, "datasheet_mem_gb_s"), ds_fp32 = kb_run_meta_number(f, "datasheet_fp32_gflop_s"),
               ds_tc = kb_run_meta_number(f, "datasheet_tc_gflop_s");
        if (!isnan(ds_mem) && !isnan(ds_fp32) && !isnan(ds_tc) && !isnan(clock))
            fprintf(out, " (datasheet at %.0f MHz: %.0f GB/s, %.1f and %.0f TFLOP/s)", clock, ds_mem, ds_fp32 * 1e-3,
                    ds_tc * 1e-3);
        fputs(".\n", out);
    }
}

/* The whole table into a malloc'd string, or NULL with err set. */
static char *render(const run_set *s, char *err, size_t errlen)
{
    int nrows, nlines;
    entry *rows = merge_rows(s, &nrows, err, errlen);
    if (!rows)
        return NULL;
    table_line *lines = pick_lines(s, rows, nrows, &nlines);
    char *text = NULL;
    size_t len = 0;
    if (nlines) {
        const int with_run = s->nfiles > 1;
        FILE *out = kb_must(open_memstream(&text, &len));
        fprintf(out, "| op | dtype | variant | shape | speed | %% of roofline | × baseline | × PyTorch | GFLOP/J |%s\n"
                     "|---|---|---|---|---|---|---|---|---|%s\n", with_run ? " run |" : "", with_run ? "---|" : "");
        for (int i = 0; i < nlines; ++i)
            print_line(out, &lines[i], with_run);
        run_lines(out, s);
        if (fclose(out) != 0)
            kb_must(NULL);
    } else
        snprintf(err, errlen, "no passing timed row of a kbench variant in the input");
    free(lines);
    free(rows);
    return text;
}

int kb_replace_file(const char *path, mode_t mode, const char *parts[], int nparts, char *err, size_t errlen)
{
    char target[4096], tmp[4096], q[KB_QUOTE_LEN];
    if (kb_output_target(path, target, sizeof target, err, errlen) != 0)
        return -1;
    int fd = -1, ok = snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", target) < (int)sizeof tmp && (fd = mkstemp(tmp)) >= 0;
    FILE *f = ok ? fdopen(fd, "w") : NULL;
    ok = f && fchmod(fd, mode & 07777) == 0;
    for (int i = 0; ok && i < nparts; ++i)
        ok = fputs(parts[i], f) >= 0;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (ok && rename(tmp, target) == 0)
        return 0;
    snprintf(err, errlen, "cannot write %s: %s", kb_quote(path, q, sizeof q), strerror(errno));
    if (fd >= 0)
        unlink(tmp);
    return -1;
}

/* Replace what lies between the markers, keeping every other byte. */
static int write_readme(const char *path, const char *table, const char *begin_mark, const char *end_mark, char *err,
                        size_t errlen)
{
    char q[KB_QUOTE_LEN];
    struct stat st;
    char *text = kb_read_text(path, KB_CSV_MAX_BYTES, err, errlen);
    if (!text)
        return -1;
    char *begin = strstr(text, begin_mark), *end = begin ? strstr(begin, end_mark) : NULL;
    int rc = -1;
    if (!end || strstr(begin + 1, begin_mark) || strstr(end + 1, end_mark))
        snprintf(err, errlen, "%s needs one '%s' line and, after it, one '%s' line", kb_quote(path, q, sizeof q),
                 begin_mark, end_mark);
    else if (stat(path, &st) != 0)
        snprintf(err, errlen, "cannot read %s: %s", kb_quote(path, q, sizeof q), strerror(errno));
    else {
        begin += strlen(begin_mark);
        const char saved = *begin;
        *begin = '\0';
        const char *parts[] = {text, "\n", table, end};
        rc = kb_replace_file(path, st.st_mode, parts, 4, err, errlen);
        *begin = saved;
    }
    free(text);
    return rc;
}

void kb_report_usage(FILE *f)
{
    fputs(USAGE "\n", f);
}

static void print_help(void)
{
    puts(USAGE "\n"
         "A markdown table of kbench's best own variant per op and dtype at the op's largest\n"
         "default shape in the runs: its speed (TFLOP/s compute-bound, GB/s memory-bound),\n"
         "% of roofline, x the op's baseline, x PyTorch and GFLOP/J.  Several runs merge: per\n"
         "(op, variant, dtype, shape) the newest run (by `# date:`) that measured the row wins.\n"
         "FAIL, SKIP and hot-L2 rows never appear, nor rows across GPUs.\n"
         "--across: the rows across GPUs instead (collectives, tensor-parallel layers).\n"
         "--stages: the model's stage table instead (`kbench model stages` rows of the newest run).\n"
         "--readme FILE: replace the text between FILE's '" BEGIN_MARK "' and\n"
         "'" END_MARK "' lines (with --across, '" ACROSS_BEGIN_MARK "' and\n"
         "'" ACROSS_END_MARK "'; with --stages, '" STAGES_BEGIN_MARK "' and\n"
         "'" STAGES_END_MARK "') instead of printing.  Exit 0, or 2 on bad input.");
}

static int parse_args(int argc, char **argv, const char **paths, int *npaths, const char **readme, int *kind,
                      char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    *npaths = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--across") || !strcmp(argv[i], "--stages")) {
            if (*kind) {
                snprintf(err, errlen, "report takes one of --across and --stages");
                return -1;
            }
            *kind = argv[i][2] == 'a' ? ACROSS : STAGES;
        }
        else if (!strcmp(argv[i], "--readme")) {
            if (++i == argc) {
                snprintf(err, errlen, "--readme needs a file");
                return -1;
            }
            *readme = argv[i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            snprintf(err, errlen, "unknown option '%s' for report", kb_quote(argv[i], q, sizeof q));
            return -1;
        } else
            paths[(*npaths)++] = argv[i];
    }
    if (!*npaths)
        snprintf(err, errlen, USAGE);
    return *npaths ? 0 : -1;
}

static int report(const char **paths, int npaths, const char *readme, int kind, char *err, size_t errlen)
{
    run_set s = {kb_must(calloc((size_t)npaths, sizeof *s.files)), npaths,
                 kb_must(malloc((size_t)npaths * sizeof *s.order)), kind == ACROSS};
    char *table = NULL;
    int rc = -1, read = 0;
    while (read < npaths && kb_run_read(&s.files[read], paths[read], err, errlen) == 0)
        s.order[read] = read, ++read;
    if (read == npaths) {
        sort_runs = &s;
        qsort(s.order, (size_t)npaths, sizeof *s.order, by_date);
        table = kind == STAGES ? kb_report_stages(&s.files[s.order[npaths - 1]], err, errlen)
                                 : render(&s, err, errlen);
    }
    static const char *const marks[][2] = {{BEGIN_MARK, END_MARK}, {ACROSS_BEGIN_MARK, ACROSS_END_MARK},
                                           {STAGES_BEGIN_MARK, STAGES_END_MARK}};
    if (table && readme)
        rc = write_readme(readme, table, marks[kind][0], marks[kind][1], err, errlen);
    else if (table) {
        fputs(table, stdout);
        rc = 0;
    }
    free(table);
    for (int i = 0; i < npaths; ++i)
        kb_run_free(&s.files[i]);
    free(s.files);
    free(s.order);
    return rc;
}

int kb_cmd_report(int argc, char **argv)
{
    const char **paths = kb_must(malloc((size_t)argc * sizeof *paths)), *readme = NULL;
    char err[512];
    int npaths, kind = ONE_GPU, rc = 0;
    if (kb_asks_help(argc, argv))
        print_help();
    else if (parse_args(argc, argv, paths, &npaths, &readme, &kind, err, sizeof err) != 0 ||
             report(paths, npaths, readme, kind, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        rc = KB_EXIT_USAGE;
    }
    free(paths);
    return rc;
}
