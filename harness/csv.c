/* The CSV printer.  Columns carry their units; the file opens with
 * `# key: value` metadata and is written to a temporary file that is renamed
 * into place, so a reader never sees a truncated file. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "harness/harness.h"

static const char *const columns[] = {
    "op", "variant", "dtype", "math", "shape_fields", "shape",
    "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8",
    "flops", "bytes", "median_ms", "min_ms", "max_ms", "rel_stdev_pct", "samples",
    "gflop_s", "gb_s", "speedup_x", "pct_of_ceiling", "pct_of_peak", "bound", "max_abs_err", "rel_l2_err", "tol_at_max_err",
    "rows_checked", "rows_total", "l2", "status", "reason",
    /* Added at the end, so that readers of the older columns keep working. */
    "clock_mhz", "power_w", "temp_c", "throttle", "mj_per_launch", "gflop_per_j", "gb_per_j", "clock_flag",
    "devices", "family", "axis", "workspace_mib",
};

void kb_meta_set_value(kb_meta_set *m, const char *key, const char *fmt, ...)
{
    int i = 0;
    while (i < m->n && strcmp(m->meta[i].key, key) != 0)
        ++i;
    if (i == KB_META_MAX) { /* a line dropped unseen once took the ceilings with it */
        fprintf(stderr, "kbench: the CSV's metadata is full (%d lines): raise KB_META_MAX\n", KB_META_MAX);
        abort();
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->text[i], sizeof m->text[i], fmt, ap);
    va_end(ap);
    snprintf(m->keys[i], sizeof m->keys[i], "%s", key);
    m->meta[i] = (kb_meta){m->keys[i], m->text[i]};
    if (i == m->n)
        m->n++;
}

#define NCOLS (sizeof columns / sizeof *columns)
#define CELL_LEN 224 /* the longest cell is the reason (kb_result.reason) */

/* The columns whose cells are text in every row; the rest are numbers or
 * empty, which JSON lines write as numbers or null. */
static const char *const text_columns[] = {"op", "variant", "dtype", "math", "shape_fields", "shape", "bound",
                                           "l2", "status", "reason", "throttle", "clock_flag",
                                           "devices", "family", "axis"};

/* One row as text cells, in the columns' order: what every format prints. */
typedef struct {
    char v[NCOLS][CELL_LEN];
    size_t n;
} row_cells;

static void cell(row_cells *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cell(row_cells *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->v[c->n++], CELL_LEN, fmt, ap);
    va_end(ap);
}

/* Timing and error cells stay empty where they were not measured. */
static void measured(row_cells *c, int valid, const char *fmt, double v)
{
    if (valid)
        cell(c, fmt, v);
    else
        cell(c, "%s", "");
}

/* NVML's cells: empty without NVML, and where the row was not timed. */
static void power_cells(row_cells *c, int timed, const kb_result *r)
{
    char names[160];
    int e = timed && r->mj_per_launch > 0;
    measured(c, timed && r->clock_mhz > 0, "%.0f", r->clock_mhz);
    measured(c, timed && r->power_w > 0, "%.1f", r->power_w);
    measured(c, timed && r->temp_c > 0, "%.0f", r->temp_c);
    cell(c, "%s", timed ? kb_throttle_names(r->throttle, names, sizeof names) : "");
    measured(c, e, "%.4f", r->mj_per_launch);
    measured(c, e, "%.3f", kb_per_joule(r->flops, r->mj_per_launch));
    measured(c, e, "%.3f", kb_per_joule(r->bytes, r->mj_per_launch));
    cell(c, "%s", timed && r->throttled ? "throttled" : "");
}

static void fill_cells(const kb_result *r, row_cells *c)
{
    char shape[128];
    c->n = 0;
    kb_format_shape(r->op, &r->shape, shape, sizeof shape);
    cell(c, "%s", r->op->name);
    cell(c, "%s", r->variant->name);
    cell(c, "%s", kb_dtype_name(r->variant->dtype));
    cell(c, "%s", kb_math_name(r->variant->math));
    cell(c, "%s", r->op->shape_fields);
    cell(c, "%s", shape);
    for (int i = 0; i < KB_MAX_DIMS; ++i)
        measured(c, i < r->shape.nd, "%.0f", i < r->shape.nd ? (double)r->shape.d[i] : 0);
    cell(c, "%.0f", r->flops);
    cell(c, "%.0f", r->bytes);
    int t = r->timed && r->status == KB_PASS;
    double sec = r->time_ms.median * 1e-3;
    measured(c, t, "%.6f", r->time_ms.median);
    measured(c, t, "%.6f", r->time_ms.min);
    measured(c, t, "%.6f", r->time_ms.max);
    measured(c, t, "%.3f", 100.0 * r->time_ms.rel_stdev);
    measured(c, t, "%.0f", r->time_ms.n);
    measured(c, t, "%.3f", t ? r->flops / sec * 1e-9 : 0);
    measured(c, t, "%.3f", t ? r->bytes / sec * 1e-9 : 0);
    measured(c, t && r->speedup > 0, "%.4f", r->speedup);
    measured(c, t && r->pct_of_ceiling > 0, "%.1f", r->pct_of_ceiling);
    measured(c, t && r->pct_of_peak > 0, "%.1f", r->pct_of_peak);
    cell(c, "%s", !t ? "" : r->memory_bound ? "memory" : "compute");
    int k = r->rows_checked > 0;
    measured(c, k, "%.3e", r->check.max_abs_err);
    measured(c, k, "%.3e", r->check.rel_l2_err);
    measured(c, k, "%.3e", r->check.worst_tol);
    measured(c, k, "%.0f", (double)r->rows_checked);
    measured(c, k, "%.0f", (double)r->rows_total);
    cell(c, "%s", r->hot ? "hot" : "cold");
    cell(c, "%s", kb_status_name(r->status));
    cell(c, "%s", r->reason);
    power_cells(c, t, r);
    cell(c, "%s", r->devices);
    cell(c, "%s", r->family ? r->family : "");
    cell(c, "%s", r->axis ? r->axis : "");
    measured(c, r->workspace_gauged, "%.1f", r->workspace_mib);
}

void kb_csv_header(FILE *f)
{
    for (size_t i = 0; i < NCOLS; ++i)
        fprintf(f, "%s%s", i ? "," : "", columns[i]);
    fputc('\n', f);
}

void kb_csv_put_text(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; ++s) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

void kb_csv_row(FILE *f, const kb_result *r)
{
    row_cells c;
    fill_cells(r, &c);
    for (size_t i = 0; i < NCOLS; ++i) {
        if (i)
            fputc(',', f);
        kb_csv_put_text(f, c.v[i]);
    }
    fputc('\n', f);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static int is_text_column(size_t i)
{
    for (size_t k = 0; k < sizeof text_columns / sizeof *text_columns; ++k)
        if (!strcmp(columns[i], text_columns[k]))
            return 1;
    return 0;
}

/* One JSON object a row, keyed by column; an unmeasured number is null. */
static void jsonl_row(FILE *f, const kb_result *r)
{
    row_cells c;
    fill_cells(r, &c);
    fputc('{', f);
    for (size_t i = 0; i < NCOLS; ++i) {
        fprintf(f, "%s\"%s\":", i ? "," : "", columns[i]);
        if (is_text_column(i))
            put_json_string(f, c.v[i]);
        else
            fputs(c.v[i][0] ? c.v[i] : "null", f);
    }
    fputs("}\n", f);
}

static void jsonl_meta(FILE *f, const kb_meta *meta, int nmeta)
{
    fputs("{\"meta\":{", f);
    for (int i = 0; i < nmeta; ++i) {
        if (i)
            fputc(',', f);
        put_json_string(f, meta[i].key);
        fputc(':', f);
        put_json_string(f, meta[i].value);
    }
    fputs("}}\n", f);
}

/* A markdown cell: '|' would end it and a newline the row. */
static void put_md_cell(FILE *f, const char *s)
{
    fputs("| ", f);
    for (; *s; ++s)
        fputs(*s == '|' ? "\\|" : *s == '\n' ? " " : (char[2]){*s, 0}, f);
    fputc(' ', f);
}

static void md_meta(FILE *f, const kb_meta *meta, int nmeta)
{
    for (int i = 0; i < nmeta; ++i)
        fprintf(f, "- %s: %s\n", meta[i].key, meta[i].value);
    fputc('\n', f);
    for (size_t i = 0; i < NCOLS; ++i)
        put_md_cell(f, columns[i]);
    fputs("|\n", f);
    for (size_t i = 0; i < NCOLS; ++i)
        fputs("|---", f);
    fputs("|\n", f);
}

static void md_row(FILE *f, const kb_result *r)
{
    row_cells c;
    fill_cells(r, &c);
    for (size_t i = 0; i < NCOLS; ++i)
        put_md_cell(f, c.v[i]);
    fputs("|\n", f);
}

int kb_parse_format(const char *s, kb_format *out)
{
    static const char *const names[] = {[KB_FORMAT_CSV] = "csv", [KB_FORMAT_MD] = "md", [KB_FORMAT_JSONL] = "jsonl"};
    for (int i = 0; i < 3; ++i)
        if (!strcmp(s, names[i])) {
            *out = (kb_format)i;
            return 0;
        }
    return -1;
}

static int cannot_write(const char *path, int e, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    snprintf(err, errlen, "cannot write %s: %s", kb_quote(path, q, sizeof q), strerror(e));
    return -1;
}

/* The file that writing path replaces (path, or the one its symbolic link
 * names) and its temporary twin, in its folder so that the rename is atomic. */
static int output_names(const char *path, char *target, char *tmp, size_t len, char *err, size_t errlen)
{
    if (kb_output_target(path, target, len, err, errlen) != 0)
        return -1;
    int n = snprintf(tmp, len, "%s.tmp.%ld", target, (long)getpid());
    return n < 0 || (size_t)n >= len ? cannot_write(path, ENAMETOOLONG, err, errlen) : 0;
}

int kb_csv_check_output(const char *path, char *err, size_t errlen)
{
    char target[4096], tmp[4096];
    /* The rename would replace whatever is there: a device such as
     * /dev/null, or a folder, is no place for a CSV (kb_output_target). */
    if (output_names(path, target, tmp, sizeof tmp, err, errlen) != 0)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return cannot_write(path, errno, err, errlen);
    close(fd);
    unlink(tmp);
    return 0;
}

/* The file as prefix (a whole CSV: metadata, header, rows) or as metadata
 * and header, then rows; through a temporary file and a rename. */
static int write_file(const char *path, kb_format format, const char *prefix, const kb_meta *meta, int nmeta,
                      const kb_result *rows, int nrows, char *err, size_t errlen)
{
    char target[4096], tmp[4096];
    if (output_names(path, target, tmp, sizeof tmp, err, errlen) != 0)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cannot_write(tmp, errno, err, errlen);
    void (*row)(FILE *, const kb_result *) = format == KB_FORMAT_MD      ? md_row
                                             : format == KB_FORMAT_JSONL ? jsonl_row
                                                                         : kb_csv_row;
    if (prefix)
        fputs(prefix, f);
    else if (format == KB_FORMAT_MD)
        md_meta(f, meta, nmeta);
    else if (format == KB_FORMAT_JSONL)
        jsonl_meta(f, meta, nmeta);
    else {
        for (int i = 0; i < nmeta; ++i)
            fprintf(f, "# %s: %s\n", meta[i].key, meta[i].value);
        kb_csv_header(f);
    }
    for (int i = 0; i < nrows; ++i)
        row(f, &rows[i]);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, target) != 0) {
        int e = errno;
        unlink(tmp);
        return cannot_write(path, e, err, errlen);
    }
    return 0;
}

int kb_results_write(const char *path, kb_format format, const kb_meta *meta, int nmeta, const kb_result *rows,
                     int nrows, char *err, size_t errlen)
{
    return write_file(path, format, NULL, meta, nmeta, rows, nrows, err, errlen);
}

int kb_csv_write(const char *path, const kb_meta *meta, int nmeta,
                 const kb_result *rows, int nrows, char *err, size_t errlen)
{
    return write_file(path, KB_FORMAT_CSV, NULL, meta, nmeta, rows, nrows, err, errlen);
}

int kb_csv_write_after(const char *path, const char *prefix, const kb_result *rows, int nrows, char *err,
                       size_t errlen)
{
    return write_file(path, KB_FORMAT_CSV, prefix, NULL, 0, rows, nrows, err, errlen);
}

/* A NUL would end the text early and silently: name where it is. */
static int refuse_nul(const char *name, const char *text, size_t len, char *err, size_t errlen)
{
    const char *nul = memchr(text, '\0', len), *line = text;
    if (!nul)
        return 0;
    long lineno = 1;
    for (const char *p = text; (p = memchr(p, '\n', (size_t)(nul - p))); line = ++p)
        ++lineno;
    snprintf(err, errlen, "%s:%ld: a NUL byte at column %ld; a CSV is text", name, lineno,
             (long)(nul - line) + 1);
    return -1;
}

char *kb_read_text(const char *path, size_t max, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN], name[KB_QUOTE_LEN + 16];
    const char *shown = kb_quote(path, q, sizeof q);
    snprintf(name, sizeof name, "cannot read %s", shown);
    size_t len;
    char *text = kb_input_read(path, name, max, &len, err, errlen);
    if (text && refuse_nul(shown, text, len, err, errlen) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *kb_csv_read_for_append(const char *path, char *err, size_t errlen)
{
    char *text = kb_read_text(path, KB_CSV_MAX_BYTES, err, errlen), q[KB_QUOTE_LEN];
    if (!text)
        return NULL;
    size_t len = strlen(text);
    /* The header is the first line that is not metadata; it must be ours. */
    char header[1024];
    FILE *h = fmemopen(header, sizeof header, "w");
    kb_csv_header(h);
    fclose(h);
    const char *line = text;
    while (*line == '#' && strchr(line, '\n'))
        line = strchr(line, '\n') + 1;
    if (strncmp(line, header, strlen(header)) != 0 || (len && text[len - 1] != '\n')) {
        snprintf(err, errlen, "%s is not a kbench CSV of this version (its columns differ)",
                 kb_quote(path, q, sizeof q));
        free(text);
        return NULL;
    }
    return text;
}
