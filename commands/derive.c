/* kbench derive RUN.csv: the derived columns of every timed row (gflop_s,
 * gb_s, speedup_x, pct_of_ceiling, pct_of_peak, bound, gflop_per_j,
 * gb_per_j) computed again from its raw ones (flops, bytes, median_ms,
 * math, mj_per_launch) and the run's metadata (ceilings, baselines), by the
 * same functions as the sweep.  Peer scripts (peers/) write raw timings
 * only and call it, so every figure in a CSV comes from one place, in C. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "harness/csv_read.h"
#include "harness/harness.h"
#include "commands/report.h"

#define USAGE "usage: kbench derive RUN.csv"

enum { C_FLOPS, C_BYTES, C_MEDIAN, C_MATH, C_GFLOP_S, C_GB_S, C_SPEEDUP, C_PCT_CEIL, C_PCT_PEAK, C_BOUND, C_MJ,
       C_GFLOP_J, C_GB_J, C_COUNT };
static const char *const col_names[C_COUNT] = {"flops", "bytes", "median_ms", "math", "gflop_s", "gb_s",
                                                "speedup_x", "pct_of_ceiling", "pct_of_peak", "bound",
                                                "mj_per_launch", "gflop_per_j", "gb_per_j"};
/* A run needs these to derive anything; the rest are filled where present. */
#define C_REQUIRED 6

typedef struct {
    kb_run_file f;
    int col[C_COUNT];
    char **derived; /* per row, per column: a new cell or NULL to keep the old */
    kb_ceilings ceil;
} run;

/* A ceiling from the metadata; 0 (unknown) when absent or not positive. */
static double meta_ceiling(const kb_run_file *f, const char *key)
{
    double x = kb_run_meta_number(f, key);
    return x > 0 ? x : 0;
}

static void ceilings_of(run *r)
{
    const kb_run_file *f = &r->f;
    r->ceil = (kb_ceilings){meta_ceiling(f, "ceiling_mem_gb_s"),       meta_ceiling(f, "ceiling_l2_gb_s"),
                            meta_ceiling(f, "ceiling_fp32_gflop_s"),   meta_ceiling(f, "ceiling_tc_gflop_s"),
                            meta_ceiling(f, "datasheet_mem_gb_s"),     meta_ceiling(f, "datasheet_fp32_gflop_s"),
                            meta_ceiling(f, "datasheet_tc_gflop_s")};
    r->ceil.fp8_gflop_s = meta_ceiling(f, "ceiling_fp8_gflop_s");
    r->ceil.read_gb_s = meta_ceiling(f, "ceiling_read_gb_s");
    r->ceil.write_gb_s = meta_ceiling(f, "ceiling_write_gb_s");
}

/* One "; NAME VALUE" field of a device_<k> line, or 0 when absent or not
 * a number above 0. */
static double device_field(const char *line, const char *name)
{
    char pattern[64], *end;
    snprintf(pattern, sizeof pattern, "; %s ", name);
    const char *at = strstr(line, pattern);
    double x = at ? strtod(at + strlen(pattern), &end) : 0;
    return at && end != at + strlen(pattern) && isfinite(x) && x > 0 ? x : 0;
}

/* A --devices run measured each GPU against its own ceilings, which its
 * device_<k> line holds; a row across GPUs, and every row of a run on one
 * GPU, against the run's ceiling lines. */
static const kb_ceilings *ceilings_for(const run *r, const kb_run_row *row, kb_ceilings *own)
{
    char key[160];
    snprintf(key, sizeof key, "device_%s", row->devices);
    const char *line = strchr(row->devices, '+') ? NULL : kb_run_meta(&r->f, key);
    if (!line)
        return &r->ceil;
    *own = (kb_ceilings){device_field(line, "ceiling_mem_gb_s"),     device_field(line, "ceiling_l2_gb_s"),
                         device_field(line, "ceiling_fp32_gflop_s"), device_field(line, "ceiling_tc_gflop_s"),
                         device_field(line, "datasheet_mem_gb_s"),   device_field(line, "datasheet_fp32_gflop_s"),
                         device_field(line, "datasheet_tc_gflop_s")};
    own->fp8_gflop_s = device_field(line, "ceiling_fp8_gflop_s");
    own->read_gb_s = device_field(line, "ceiling_read_gb_s");
    own->write_gb_s = device_field(line, "ceiling_write_gb_s");
    return own;
}

static void set(run *r, int row, int c, const char *fmt, double v)
{
    if (r->col[c] < 0)
        return;
    char text[64];
    snprintf(text, sizeof text, fmt, v);
    r->derived[(size_t)row * C_COUNT + c] = kb_must(strdup(text));
}

/* The baseline's median at this row's op, shape and GPU, or 0: the
 * metadata's baseline_<op> for f32 rows, baseline_<dtype>_<op> for the
 * others. */
static double baseline_ms(const run *r, const kb_run_row *row)
{
    char key[160];
    if (!strcmp(row->dtype, "f32"))
        snprintf(key, sizeof key, "baseline_%s", row->op);
    else
        snprintf(key, sizeof key, "baseline_%s_%s", row->dtype, row->op);
    const char *base = kb_run_meta(&r->f, key);
    for (int i = 0; base && i < r->f.nrows; ++i) {
        const kb_run_row *b = &r->f.rows[i];
        if (!strcmp(b->op, row->op) && !strcmp(b->dtype, row->dtype) && !strcmp(b->shape, row->shape) &&
            !strcmp(b->variant, base) &&
            kb_baseline_gpus(b->devices, row->devices) && !strcmp(b->status, "PASS") && b->median_ms > 0)
            return b->median_ms;
    }
    return 0;
}

/* The row's share of written bytes from its op's tensors at its shape
 * and dtype; -1 (the copy's ceiling) where any of them is unknown. */
static double write_share(const kb_op *op, const kb_run_row *row)
{
    kb_shape s;
    kb_dtype t;
    char err[256];
    if (!op || kb_parse_dtype(row->dtype, &t) != 0 || kb_parse_shape(op, row->shape, &s, err, sizeof err) != 0)
        return -1;
    return kb_op_write_share(op, &s, t);
}

static int derive_row(run *r, int i, char *err, size_t errlen)
{
    const kb_run_row *row = &r->f.rows[i];
    double flops, bytes, mj;
    kb_math math = KB_MATH_F32;
    if (strcmp(row->status, "PASS") || isnan(row->median_ms) || row->median_ms <= 0)
        return 0;
    if (kb_run_decimal(&r->f, row, r->col[C_FLOPS], &flops, err, errlen) != 0 ||
        kb_run_decimal(&r->f, row, r->col[C_BYTES], &bytes, err, errlen) != 0 ||
        kb_run_decimal(&r->f, row, r->col[C_MJ], &mj, err, errlen) != 0)
        return -1;
    if (isnan(flops) || isnan(bytes))
        return kb_run_error(&r->f, row->lineno, err, errlen, "a timed row needs flops and bytes");
    if (r->col[C_MATH] >= 0 && kb_parse_math(kb_run_cell(&r->f, row, r->col[C_MATH]), &math) != 0)
        return kb_run_error(&r->f, row->lineno, err, errlen, "unknown math");
    double ms = row->median_ms, base = baseline_ms(r, row);
    set(r, i, C_GFLOP_S, "%.3f", flops / ms * 1e-6);
    set(r, i, C_GB_S, "%.3f", bytes / ms * 1e-6);
    if (base > 0)
        set(r, i, C_SPEEDUP, "%.4f", base / ms);
    double pct_ceiling, pct_peak;
    int memory_bound;
    kb_ceilings own;
    const kb_ceilings *ceil = ceilings_for(r, row, &own);
    const kb_op *op = kb_find_op(row->op);
    if (op && op->distributed) {
        /* Bus bandwidth over links no ceiling of one GPU bounds (ceilings.c). */
        if (r->col[C_BOUND] >= 0)
            r->derived[(size_t)i * C_COUNT + C_BOUND] = kb_must(strdup("memory"));
    } else if (bytes > 0 && (ceil->mem_gb_s > 0 || ceil->ds_mem_gb_s > 0)) {
        /* A row across N GPUs is placed under N times one GPU's ceilings:
         * as one GPU taking N times as long. */
        kb_place_on_roofline(ceil, math, flops, bytes, write_share(op, row), ms * kb_devices_spanned(row->devices),
                             &pct_ceiling, &pct_peak, &memory_bound);
        if (pct_ceiling > 0)
            set(r, i, C_PCT_CEIL, "%.1f", pct_ceiling);
        if (pct_peak > 0)
            set(r, i, C_PCT_PEAK, "%.1f", pct_peak);
        if (r->col[C_BOUND] >= 0)
            r->derived[(size_t)i * C_COUNT + C_BOUND] = kb_must(strdup(memory_bound ? "memory" : "compute"));
    }
    if (mj > 0) {
        set(r, i, C_GFLOP_J, "%.3f", kb_per_joule(flops, mj));
        set(r, i, C_GB_J, "%.3f", kb_per_joule(bytes, mj));
    }
    return 0;
}

/* The whole file again: metadata, header, rows with the derived cells. */
static char *render(const run *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = kb_must(open_memstream(&text, &len));
    for (int i = 0; i < r->f.nmeta; ++i)
        fprintf(out, "# %s: %s\n", r->f.meta[i].key, r->f.meta[i].value);
    for (int c = 0; c < r->f.ncols; ++c) {
        if (c)
            fputc(',', out);
        kb_csv_put_text(out, r->f.names[c]);
    }
    fputc('\n', out);
    for (int i = 0; i < r->f.nrows; ++i) {
        for (int c = 0; c < r->f.ncols; ++c) {
            const char *cell = kb_run_cell(&r->f, &r->f.rows[i], c);
            for (int k = 0; k < C_COUNT; ++k)
                if (r->col[k] == c && r->derived[(size_t)i * C_COUNT + k])
                    cell = r->derived[(size_t)i * C_COUNT + k];
            if (c)
                fputc(',', out);
            kb_csv_put_text(out, cell);
        }
        fputc('\n', out);
    }
    if (fclose(out) != 0)
        kb_must(NULL);
    return text;
}

static int has_control(const char *s)
{
    for (; *s; ++s)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

/* derive writes back what it read; a control character (a CR inside a
 * line, say, or CRs before a line's end, of which a read strips one)
 * would not read back the same, and kbench never writes one. */
static int refuse_controls(const run *r, char *err, size_t errlen)
{
    for (int c = 0; c < r->f.ncols; ++c)
        if (has_control(r->f.names[c])) {
            char q[KB_QUOTE_LEN];
            snprintf(err, errlen, "%s: the header's column %d holds a control character",
                     kb_quote(r->f.path, q, sizeof q), c + 1);
            return -1;
        }
    for (int i = 0; i < r->f.nmeta; ++i)
        if (has_control(r->f.meta[i].key) || has_control(r->f.meta[i].value)) {
            char q[KB_QUOTE_LEN], k[KB_QUOTE_LEN];
            snprintf(err, errlen, "%s: the metadata line %s holds a control character",
                     kb_quote(r->f.path, q, sizeof q), kb_quote(r->f.meta[i].key, k, sizeof k));
            return -1;
        }
    for (int i = 0; i < r->f.nrows; ++i)
        for (int c = 0; c < r->f.ncols; ++c)
            if (has_control(kb_run_cell(&r->f, &r->f.rows[i], c)))
                return kb_run_error(&r->f, r->f.rows[i].lineno, err, errlen, "column %d holds a control character",
                                    c + 1);
    return 0;
}

static int derive(const char *path, char *err, size_t errlen)
{
    run r = {0};
    int rc = kb_run_read(&r.f, path, err, errlen);
    for (int c = 0; rc == 0 && c < C_COUNT; ++c)
        if ((r.col[c] = kb_run_column(&r.f, col_names[c])) < 0 && c < C_REQUIRED) {
            char q[KB_QUOTE_LEN];
            snprintf(err, errlen, "%s has no '%s' column: not a kbench run", kb_quote(path, q, sizeof q), col_names[c]);
            rc = -1;
        }
    if (rc == 0)
        rc = refuse_controls(&r, err, errlen);
    if (rc == 0) {
        ceilings_of(&r);
        r.derived = kb_must(calloc((size_t)(r.f.nrows ? r.f.nrows : 1) * C_COUNT, sizeof *r.derived));
        for (int i = 0; rc == 0 && i < r.f.nrows; ++i)
            rc = derive_row(&r, i, err, errlen);
    }
    struct stat st;
    if (rc == 0 && stat(path, &st) != 0) {
        char q[KB_QUOTE_LEN];
        snprintf(err, errlen, "cannot read %s: %s", kb_quote(path, q, sizeof q), strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        char *text = render(&r);
        const char *parts[] = {text};
        rc = kb_replace_file(path, st.st_mode, parts, 1, err, errlen);
        free(text);
    }
    for (size_t k = 0; r.derived && k < (size_t)r.f.nrows * C_COUNT; ++k)
        free(r.derived[k]);
    free(r.derived);
    kb_run_free(&r.f);
    return rc;
}

int kb_cmd_derive(int argc, char **argv)
{
    char err[512];
    if (kb_asks_help(argc, argv)) {
        puts(USAGE "\n"
             "Compute every timed PASS row's derived columns again (gflop_s, gb_s, speedup_x,\n"
             "pct_of_ceiling, pct_of_peak, bound, gflop_per_j, gb_per_j) from its flops, bytes,\n"
             "median_ms, math and mj_per_launch and the run's ceilings and baselines, as the sweep\n"
             "does, and rewrite the file in place (through a temporary file).  The peer scripts\n"
             "write raw timings and call this.  Exit 0, or 2 on bad input.");
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "kbench: %s\n", USAGE);
        return KB_EXIT_USAGE;
    }
    if (derive(argv[1], err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_USAGE;
    }
    return 0;
}
