/* Reading the CSVs kbench writes, for the commands that take runs as input
 * (compare, report).  Columns are found by name, so files from older or
 * newer kbench versions still read; every row is checked before use. */
#ifndef KBENCH_CSV_READ_H
#define KBENCH_CSV_READ_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
    char *key, *value;
} kb_meta_pair;

/* One data row.  The key cells hold no control character; status is PASS,
 * FAIL or SKIP. */
typedef struct {
    const char *op, *variant, *dtype, *shape, *status;
    const char *l2;               /* NULL when the file has no l2 column */
    /* The GPU the row ran on ("1") or those it spanned ("0+1"); "0" where
     * the file has no devices column or the cell is empty (older kbench,
     * the peer scripts' rows): such runs used one GPU, the first. */
    const char *devices;
    double median_ms, noise_pct;  /* NAN when the cell is empty */
    int first_cell;               /* the row's cells start here in kb_run_file.cells */
    int lineno;
} kb_run_row;

typedef struct {
    const char *path;
    char *text;  /* the whole file, split in place; every string points into it */
    kb_meta_pair *meta;
    int nmeta;
    char **names;  /* the header's column names */
    int ncols;
    char **cells;  /* every row's cells, ncols a row */
    kb_run_row *rows;
    int nrows;
} kb_run_file;

/* Read and check a whole run; 0, or -1 with a one-line message in err
 * (untrusted text quoted).  Free with kb_run_free either way. */
int kb_run_read(kb_run_file *f, const char *path, char *err, size_t errlen);
void kb_run_free(kb_run_file *f);
/* The value of a `# key: value` line, or NULL. */
const char *kb_run_meta(const kb_run_file *f, const char *key);
/* A metadata value as a finite number, or NAN when absent or not one. */
double kb_run_meta_number(const kb_run_file *f, const char *key);
/* A column's index, or -1 when the header lacks it. */
int kb_run_column(const kb_run_file *f, const char *name);
/* The row's cell in column col; "" when col < 0. */
const char *kb_run_cell(const kb_run_file *f, const kb_run_row *r, int col);
/* An optional numeric cell: NAN when empty or col < 0, else a finite
 * decimal >= 0; -1 with "FILE:LINE: NAME (column N) is ..." in err. */
int kb_run_decimal(const kb_run_file *f, const kb_run_row *r, int col, double *out, char *err,
                   size_t errlen);
/* "FILE:LINE: " and the message into err; returns -1. */
int kb_run_error(const kb_run_file *f, int lineno, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Replace path with the parts' text, written beside it and renamed over
 * it, so a reader never sees half a file; through a symbolic link, the file
 * it names (kb_output_target).  0, or -1 with err set. */
int kb_replace_file(const char *path, mode_t mode, const char *parts[], int nparts, char *err, size_t errlen);

/* Out of memory ends the command: there is nothing useful to fall back on. */
void *kb_must(void *p);
/* Make room for item n of an array of n items (doubling at powers of two). */
void *kb_grow(void *p, int n, size_t size);

#endif
