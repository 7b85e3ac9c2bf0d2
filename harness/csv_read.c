/* Reading kbench's CSVs: `# key: value` metadata, a header, then rows.
 * Shared by compare and report, so both refuse the same bad input with the
 * same messages. */
#include "harness/csv_read.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

#define MAX_COLUMNS 256

/* The timing cells, each empty (not measured) or a finite decimal above
 * zero; a spread of zero is possible (every sample alike), a time is not. */
typedef struct {
    const char *name;
    int zero_ok;
} timing_column;
enum { T_MEDIAN, T_NOISE, T_MIN, T_MAX, T_COUNT };
static const timing_column timing_columns[T_COUNT] = {
    {"median_ms", 0}, {"rel_stdev_pct", 1}, {"min_ms", 0}, {"max_ms", 0}};

/* Column positions in one file's header; -1 when absent. */
typedef struct {
    int op, variant, dtype, shape, status, l2, devices;
    int timing[T_COUNT];
} key_columns;

void *kb_must(void *p)
{
    if (!p) {
        fprintf(stderr, "kbench: out of memory\n");
        exit(KB_EXIT_FAIL);
    }
    return p;
}

/* Capacity is implied: the array doubles whenever n reaches a power of two. */
void *kb_grow(void *p, int n, size_t size)
{
    if (n > 0 && (n & (n - 1)) != 0)
        return p;
    return kb_must(realloc(p, (size_t)(n ? 2 * n : 1) * size));
}

/* Split one record in place.  The writer quotes fields holding a comma or a
 * quote and never spans lines, so a record is one line.  Returns the field
 * count, or -1 when there are more than max. */
static int split_fields(char *r, char **fields, int max)
{
    for (int n = 0; n < max; ++r) {
        char *w = r;
        fields[n++] = w;
        if (*r == '"') {
            for (++r; *r; ++r) {
                if (*r == '"' && *++r != '"')  /* "" stands for one quote */
                    break;
                *w++ = *r;
            }
        }
        while (*r && *r != ',')
            *w++ = *r++;
        int more = *r == ',';
        *w = '\0';
        if (!more)
            return n;
    }
    return -1;
}

int kb_run_column(const kb_run_file *f, const char *name)
{
    for (int i = 0; i < f->ncols; ++i)
        if (!strcmp(f->names[i], name))
            return i;
    return -1;
}

const char *kb_run_cell(const kb_run_file *f, const kb_run_row *r, int col)
{
    return col >= 0 ? f->cells[r->first_cell + col] : "";
}

static int read_header(kb_run_file *f, char *line, key_columns *c, char *err, size_t errlen)
{
    static const char *const required[] = {"op", "variant", "dtype", "shape",
                                           "median_ms", "rel_stdev_pct", "status"};
    char *names[MAX_COLUMNS], q[KB_QUOTE_LEN];
    f->ncols = split_fields(line, names, MAX_COLUMNS);
    if (f->ncols < 0) {
        snprintf(err, errlen, "%s is not a kbench CSV (more than %d columns)",
                 kb_quote(f->path, q, sizeof q), MAX_COLUMNS);
        return -1;
    }
    f->names = kb_must(malloc((size_t)f->ncols * sizeof *f->names));
    memcpy(f->names, names, (size_t)f->ncols * sizeof *f->names);
    int *slots[] = {&c->op, &c->variant, &c->dtype, &c->shape, &c->timing[T_MEDIAN],
                    &c->timing[T_NOISE], &c->status};
    for (size_t i = 0; i < sizeof required / sizeof *required; ++i) {
        *slots[i] = kb_run_column(f, required[i]);
        if (*slots[i] < 0) {
            snprintf(err, errlen, "%s is not a kbench CSV (no '%s' column)", kb_quote(f->path, q, sizeof q),
                     required[i]);
            return -1;
        }
    }
    c->l2 = kb_run_column(f, "l2");
    c->devices = kb_run_column(f, "devices");
    c->timing[T_MIN] = kb_run_column(f, "min_ms");
    c->timing[T_MAX] = kb_run_column(f, "max_ms");
    return 0;
}

int kb_run_error(const kb_run_file *f, int lineno, char *err, size_t errlen, const char *fmt, ...)
{
    char q[KB_QUOTE_LEN];
    int used = snprintf(err, errlen, "%s:%d: ", kb_quote(f->path, q, sizeof q), lineno);
    va_list ap;
    va_start(ap, fmt);
    if (used >= 0 && (size_t)used < errlen)
        vsnprintf(err + used, errlen - (size_t)used, fmt, ap);
    va_end(ap);
    return -1;
}

/* An empty cell is NAN; any other must be a finite decimal >= 0, or above
 * 0 unless zero_ok. */
static int decimal_cell(const kb_run_file *f, const kb_run_row *r, int col, int zero_ok, double *out,
                        char *err, size_t errlen)
{
    const char *cell = kb_run_cell(f, r, col);
    char q[KB_QUOTE_LEN];
    *out = NAN;
    if (*cell && (kb_parse_decimal(cell, out) != 0 || *out < 0 || (*out == 0 && !zero_ok)))
        return kb_run_error(f, r->lineno, err, errlen, "%s (column %d) is '%s', not a finite decimal %s",
                            f->names[col], col + 1, kb_quote(cell, q, sizeof q), zero_ok ? ">= 0" : "above 0");
    return 0;
}

int kb_run_decimal(const kb_run_file *f, const kb_run_row *r, int col, double *out, char *err, size_t errlen)
{
    return decimal_cell(f, r, col, 1, out, err, errlen);
}

/* Every timing cell present; median and spread go into r. */
static int read_timing(const kb_run_file *f, kb_run_row *r, const key_columns *c, char *err, size_t errlen)
{
    double t[T_COUNT];
    for (int i = 0; i < T_COUNT; ++i)
        if (decimal_cell(f, r, c->timing[i], timing_columns[i].zero_ok, &t[i], err, errlen) != 0)
            return -1;
    r->median_ms = t[T_MEDIAN];
    r->noise_pct = t[T_NOISE];
    return 0;
}

/* The key cells are printed in reports: a control character in one would
 * break its lines or drive the terminal. */
static int check_key(const kb_run_file *f, const kb_run_row *r, const key_columns *c, char *err, size_t errlen)
{
    static const char *const names[] = {"op", "variant", "dtype", "shape", "l2", "devices"};
    const int cols[] = {c->op, c->variant, c->dtype, c->shape, c->l2, c->devices};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; ++i)
        for (const unsigned char *p = (const unsigned char *)kb_run_cell(f, r, cols[i]); *p; ++p)
            if (*p < 0x20 || *p == 0x7f)
                return kb_run_error(f, r->lineno, err, errlen, "%s (column %d) holds control character 0x%02x",
                                    names[i], cols[i] + 1, *p);
    return 0;
}

static int read_row(kb_run_file *f, char *line, int lineno, const key_columns *c, char *err, size_t errlen)
{
    char *v[MAX_COLUMNS], q[KB_QUOTE_LEN];
    int n = split_fields(line, v, MAX_COLUMNS);
    if (n < 0)
        return kb_run_error(f, lineno, err, errlen, "more than %d fields, the header has %d", MAX_COLUMNS,
                            f->ncols);
    if (n != f->ncols)
        return kb_run_error(f, lineno, err, errlen, "%d fields, the header has %d", n, f->ncols);
    const char *status = v[c->status];
    if (strcmp(status, "PASS") && strcmp(status, "FAIL") && strcmp(status, "SKIP"))
        return kb_run_error(f, lineno, err, errlen, "unknown status '%s'", kb_quote(status, q, sizeof q));
    f->cells = kb_grow(f->cells, f->nrows, (size_t)f->ncols * sizeof *f->cells);
    memcpy(f->cells + (size_t)f->nrows * f->ncols, v, (size_t)f->ncols * sizeof *v);
    const char *devices = c->devices >= 0 && *v[c->devices] ? v[c->devices] : "0";
    kb_run_row r = {v[c->op], v[c->variant], v[c->dtype], v[c->shape], status,
                    c->l2 >= 0 ? v[c->l2] : NULL, devices, NAN, NAN, f->nrows * f->ncols, lineno};
    if (check_key(f, &r, c, err, errlen) != 0 || read_timing(f, &r, c, err, errlen) != 0)
        return -1;
    f->rows = kb_grow(f->rows, f->nrows, sizeof *f->rows);
    f->rows[f->nrows++] = r;
    return 0;
}

/* A `# key: value` line; other comments are kept out of the metadata. */
static void read_meta(kb_run_file *f, char *line)
{
    char *colon = strstr(line, ": ");
    if (strncmp(line, "# ", 2) || !colon)
        return;
    *colon = '\0';
    f->meta = kb_grow(f->meta, f->nmeta, sizeof *f->meta);
    f->meta[f->nmeta++] = (kb_meta_pair){line + 2, colon + 2};
}

const char *kb_run_meta(const kb_run_file *f, const char *key)
{
    for (int i = 0; i < f->nmeta; ++i)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

double kb_run_meta_number(const kb_run_file *f, const char *key)
{
    const char *v = kb_run_meta(f, key);
    double x;
    return v && kb_parse_decimal(v, &x) == 0 ? x : NAN;
}

int kb_run_read(kb_run_file *f, const char *path, char *err, size_t errlen)
{
    f->path = path;
    f->text = kb_read_text(path, KB_CSV_MAX_BYTES, err, errlen);
    if (!f->text)
        return -1;
    char q[KB_QUOTE_LEN];
    key_columns cols;
    int have_header = 0, lineno = 0;
    /* A spreadsheet that saved the file may have put a UTF-8 byte-order mark first. */
    char *start = f->text + (strncmp(f->text, "\xEF\xBB\xBF", 3) ? 0 : 3);
    for (char *line = start, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') /* CRLF line ends */
            line[len - 1] = '\0';
        ++lineno;
        if (line[0] == '#' && !have_header)
            read_meta(f, line);
        else if (!line[0])
            continue;
        else if (!have_header) {
            if (read_header(f, line, &cols, err, errlen))
                return -1;
            have_header = 1;
        } else if (read_row(f, line, lineno, &cols, err, errlen))
            return -1;
    }
    if (!have_header)
        snprintf(err, errlen, "%s is not a kbench CSV (no header line)", kb_quote(f->path, q, sizeof q));
    return have_header ? 0 : -1;
}

void kb_run_free(kb_run_file *f)
{
    free(f->text);
    free(f->meta);
    free(f->names);
    free(f->cells);
    free(f->rows);
}
