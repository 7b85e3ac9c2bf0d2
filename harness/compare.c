/* kbench compare BASE.csv NEW.csv [--threshold PCT]: match the rows of two
 * runs and say which got faster, slower or broke.  Columns are found by name,
 * so files from older or newer kbench versions still compare. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"

#define DEFAULT_THRESHOLD_PCT 2.0
/* rel_stdev_pct is the spread of single samples, and the two files' spreads
 * add in quadrature.  A change inside twice that combined spread (about 95%
 * of pure noise, were it normal) is not called a change. */
#define NOISE_FACTOR 2.0
#define MAX_COLUMNS 256

typedef struct {
    char *key, *value;
} meta_pair;

typedef struct {
    const char *op, *variant, *dtype, *shape, *l2, *status;
    double median_ms, noise_pct;  /* NAN when the cell is empty */
    int matched;
} cmp_row;

/* The timing cells, each empty (not measured) or a finite decimal above
 * zero; a spread of zero is possible (every sample alike), a time is not. */
typedef struct {
    const char *name;
    int zero_ok;
} timing_column;
enum { T_MEDIAN, T_NOISE, T_MIN, T_MAX, T_COUNT };
static const timing_column timing_columns[T_COUNT] = {
    {"median_ms", 0}, {"rel_stdev_pct", 1}, {"min_ms", 0}, {"max_ms", 0}};

typedef struct {
    const char *path;
    char *text;  /* the whole file, split in place; every string points into it */
    meta_pair *meta;
    int nmeta;
    cmp_row *rows;
    int nrows;
    int has_l2;  /* the header has an l2 column */
} cmp_file;

/* Column positions in one file's header; -1 when absent. */
typedef struct {
    int op, variant, dtype, shape, status, l2, ncols;
    int timing[T_COUNT];
} cmp_columns;

typedef enum { V_NONE, V_SAME, V_FASTER, V_SLOWER, V_FAIL, V_COUNT } verdict;
static const char *const verdict_names[V_COUNT] = {"", "SAME", "FASTER", "SLOWER", "FAIL"};

/* Out of memory ends the command: there is nothing useful to fall back on. */
static void *must(void *p)
{
    if (!p) {
        fprintf(stderr, "kbench: out of memory\n");
        exit(KB_EXIT_FAIL);
    }
    return p;
}

/* Make room for item n of an array of n items.  Capacity is implied: the
 * array doubles whenever n reaches a power of two. */
static void *grow(void *p, int n, size_t size)
{
    if (n > 0 && (n & (n - 1)) != 0)
        return p;
    return must(realloc(p, (size_t)(n ? 2 * n : 1) * size));
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

static int find_column(char **names, int n, const char *want)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(names[i], want))
            return i;
    return -1;
}

static int read_header(const cmp_file *f, char *line, cmp_columns *c, char *err, size_t errlen)
{
    static const char *const required[] = {"op", "variant", "dtype", "shape",
                                           "median_ms", "rel_stdev_pct", "status"};
    char *names[MAX_COLUMNS], q[KB_QUOTE_LEN];
    c->ncols = split_fields(line, names, MAX_COLUMNS);
    if (c->ncols < 0) {
        snprintf(err, errlen, "%s is not a kbench CSV (more than %d columns)",
                 kb_quote(f->path, q, sizeof q), MAX_COLUMNS);
        return -1;
    }
    int *slots[] = {&c->op, &c->variant, &c->dtype, &c->shape, &c->timing[T_MEDIAN],
                    &c->timing[T_NOISE], &c->status};
    for (size_t i = 0; i < sizeof required / sizeof *required; ++i) {
        *slots[i] = find_column(names, c->ncols, required[i]);
        if (*slots[i] < 0) {
            snprintf(err, errlen, "%s is not a kbench CSV (no '%s' column)", kb_quote(f->path, q, sizeof q),
                     required[i]);
            return -1;
        }
    }
    c->l2 = find_column(names, c->ncols, "l2");
    c->timing[T_MIN] = find_column(names, c->ncols, "min_ms");
    c->timing[T_MAX] = find_column(names, c->ncols, "max_ms");
    return 0;
}

static int __attribute__((format(printf, 5, 6)))
row_error(const cmp_file *f, int lineno, char *err, size_t errlen, const char *fmt, ...)
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

/* Every timing cell present; median and spread go into r. */
static int read_timing(const cmp_file *f, int lineno, char **v, const cmp_columns *c, cmp_row *r,
                       char *err, size_t errlen)
{
    double t[T_COUNT];
    char q[KB_QUOTE_LEN];
    for (int i = 0; i < T_COUNT; ++i) {
        const int col = c->timing[i];
        const char *cell = col >= 0 ? v[col] : "";
        t[i] = NAN;
        if (*cell && (kb_parse_decimal(cell, &t[i]) != 0 || t[i] < 0 || (t[i] == 0 && !timing_columns[i].zero_ok)))
            return row_error(f, lineno, err, errlen, "%s (column %d) is '%s', not a finite decimal %s",
                             timing_columns[i].name, col + 1, kb_quote(cell, q, sizeof q),
                             timing_columns[i].zero_ok ? ">= 0" : "above 0");
    }
    r->median_ms = t[T_MEDIAN];
    r->noise_pct = t[T_NOISE];
    return 0;
}

/* The key cells are printed in the report: a control character in one
 * would break its lines or drive the terminal. */
static int check_key(const cmp_file *f, int lineno, char **v, const cmp_columns *c, char *err, size_t errlen)
{
    static const char *const names[] = {"op", "variant", "dtype", "shape", "l2"};
    const int cols[] = {c->op, c->variant, c->dtype, c->shape, c->l2};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; ++i)
        for (const unsigned char *p = cols[i] >= 0 ? (const unsigned char *)v[cols[i]] : NULL; p && *p; ++p)
            if (*p < 0x20 || *p == 0x7f)
                return row_error(f, lineno, err, errlen, "%s (column %d) holds control character 0x%02x",
                                 names[i], cols[i] + 1, *p);
    return 0;
}

static int read_row(cmp_file *f, char *line, int lineno, const cmp_columns *c, char *err,
                    size_t errlen)
{
    char *v[MAX_COLUMNS], q[KB_QUOTE_LEN];
    int n = split_fields(line, v, MAX_COLUMNS);
    if (n < 0)
        return row_error(f, lineno, err, errlen, "more than %d fields, the header has %d", MAX_COLUMNS,
                         c->ncols);
    if (n != c->ncols)
        return row_error(f, lineno, err, errlen, "%d fields, the header has %d", n, c->ncols);
    const char *status = v[c->status];
    if (strcmp(status, "PASS") && strcmp(status, "FAIL") && strcmp(status, "SKIP"))
        return row_error(f, lineno, err, errlen, "unknown status '%s'", kb_quote(status, q, sizeof q));
    cmp_row r = {v[c->op], v[c->variant], v[c->dtype], v[c->shape],
                 c->l2 >= 0 ? v[c->l2] : NULL, status, 0, 0, 0};
    if (check_key(f, lineno, v, c, err, errlen) != 0 || read_timing(f, lineno, v, c, &r, err, errlen) != 0)
        return -1;
    f->rows = grow(f->rows, f->nrows, sizeof *f->rows);
    f->rows[f->nrows++] = r;
    return 0;
}

/* A `# key: value` line; other comments are kept out of the metadata. */
static void read_meta(cmp_file *f, char *line)
{
    char *colon = strstr(line, ": ");
    if (strncmp(line, "# ", 2) || !colon)
        return;
    *colon = '\0';
    f->meta = grow(f->meta, f->nmeta, sizeof *f->meta);
    f->meta[f->nmeta++] = (meta_pair){line + 2, colon + 2};
}

static const char *meta_get(const cmp_file *f, const char *key)
{
    for (int i = 0; i < f->nmeta; ++i)
        if (!strcmp(f->meta[i].key, key))
            return f->meta[i].value;
    return NULL;
}

static int read_csv(cmp_file *f, char *err, size_t errlen)
{
    f->text = kb_read_text(f->path, KB_CSV_MAX_BYTES, err, errlen);
    if (!f->text)
        return -1;
    char q[KB_QUOTE_LEN];
    cmp_columns cols;
    int have_header = 0, lineno = 0;
    for (char *line = f->text, *next; line; line = next) {
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
            f->has_l2 = cols.l2 >= 0;
        } else if (read_row(f, line, lineno, &cols, err, errlen))
            return -1;
    }
    if (!have_header)
        snprintf(err, errlen, "%s is not a kbench CSV (no header line)", kb_quote(f->path, q, sizeof q));
    return have_header ? 0 : -1;
}

static void free_csv(cmp_file *f)
{
    free(f->text);
    free(f->meta);
    free(f->rows);
}

/* l2 joins the key only when both files record it. */
static int same_key(const cmp_row *a, const cmp_row *b, int use_l2)
{
    return !strcmp(a->op, b->op) && !strcmp(a->variant, b->variant) &&
           !strcmp(a->dtype, b->dtype) && !strcmp(a->shape, b->shape) &&
           (!use_l2 || !strcmp(a->l2, b->l2));
}

/* FNV-1a over the key's cells, each with its terminating NUL. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    do
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    while (*s++);
    return h;
}

static uint64_t key_hash(const cmp_row *r, int use_l2)
{
    uint64_t h = 0xcbf29ce484222325u;
    h = hash_text(hash_text(hash_text(hash_text(h, r->op), r->variant), r->dtype), r->shape);
    return use_l2 ? hash_text(h, r->l2) : h;
}

/* NEW's rows by key, so matching takes linear time.  Open addressing: a
 * slot holds some row of its key (to compare with) and the key's first row
 * not yet matched; a key's rows are chained in file order, so duplicate
 * keys pair up in order. */
typedef struct {
    int *key_row, *head;  /* per slot; key_row < 0: empty */
    int *next;            /* per row: the next row of its key, or -1 */
    size_t mask;
    int use_l2;
} row_index;

static size_t find_slot(const row_index *x, const cmp_file *f, const cmp_row *key)
{
    size_t s = key_hash(key, x->use_l2) & x->mask;
    while (x->key_row[s] >= 0 && !same_key(&f->rows[x->key_row[s]], key, x->use_l2))
        s = (s + 1) & x->mask;
    return s;
}

static void index_rows(row_index *x, const cmp_file *f, int use_l2)
{
    size_t slots = 2;
    while (slots < 2 * (size_t)f->nrows)
        slots *= 2;
    x->key_row = must(malloc(slots * sizeof *x->key_row));
    x->head = must(malloc(slots * sizeof *x->head));
    x->next = must(malloc(((size_t)f->nrows + 1) * sizeof *x->next));
    x->mask = slots - 1;
    x->use_l2 = use_l2;
    memset(x->key_row, 0xff, slots * sizeof *x->key_row); /* all -1 */
    /* Last row first: pushing each on its chain's front leaves file order. */
    for (int i = f->nrows - 1; i >= 0; --i) {
        size_t s = find_slot(x, f, &f->rows[i]);
        x->next[i] = x->key_row[s] < 0 ? -1 : x->head[s];
        x->key_row[s] = x->head[s] = i;
    }
}

static cmp_row *take_match(row_index *x, cmp_file *f, const cmp_row *key)
{
    size_t s = find_slot(x, f, key);
    int i = x->key_row[s] < 0 ? -1 : x->head[s];
    if (i < 0)
        return NULL;
    x->head[s] = x->next[i];
    return &f->rows[i];
}

static void free_index(row_index *x)
{
    free(x->key_row);
    free(x->head);
    free(x->next);
}

static int timed(const cmp_row *r)
{
    return !strcmp(r->status, "PASS") && r->median_ms > 0;
}

static verdict judge(const cmp_row *base, const cmp_row *new, double threshold_pct)
{
    if (!strcmp(new->status, "FAIL") && !strcmp(base->status, "PASS"))
        return V_FAIL;
    if (!timed(base) || !timed(new))
        return V_NONE;
    double a = isnan(base->noise_pct) ? 0 : base->noise_pct;
    double b = isnan(new->noise_pct) ? 0 : new->noise_pct;
    double band = fmax(threshold_pct, NOISE_FACTOR * hypot(a, b));
    double change_pct = 100.0 * (new->median_ms / base->median_ms - 1.0);
    if (change_pct > band)
        return V_SLOWER;
    if (change_pct < -band)
        return V_FASTER;
    return V_SAME;
}

/* Cold L2 is the default, so only hot rows carry a mark. */
static int hot(const cmp_row *r)
{
    return r->l2 && !strcmp(r->l2, "hot");
}

/* Widths of the key columns, so long variant names and shapes line up. */
typedef struct {
    int op, variant, dtype, shape;
} widths;

static void fit(int *width, size_t len)
{
    if ((size_t)*width < len)
        *width = (int)len;
}

static void widen(widths *w, const cmp_row *r)
{
    fit(&w->op, strlen(r->op));
    fit(&w->variant, strlen(r->variant));
    fit(&w->dtype, strlen(r->dtype));
    fit(&w->shape, strlen(r->shape) + (hot(r) ? 4 : 0));
}

static void print_key(const widths *w, const cmp_row *r)
{
    char shape[256];
    snprintf(shape, sizeof shape, "%s%s", r->shape, hot(r) ? "/hot" : "");
    printf("%-*s %-*s %-*s %-*s", w->op, r->op, w->variant, r->variant, w->dtype, r->dtype,
           w->shape, shape);
}

/* A timed row shows its median; others show their status instead. */
static void print_time(const cmp_row *r)
{
    if (timed(r))
        printf(" %12.4f", r->median_ms);
    else
        printf(" %12s", !strcmp(r->status, "PASS") ? "-" : r->status);
}

/* Metadata is free text: quoted, so it cannot break the report's lines. */
static const char *meta_quoted(const cmp_file *f, const char *key, char *buf, size_t len)
{
    const char *v = meta_get(f, key);
    return v ? kb_quote(v, buf, len) : "unknown";
}

static void print_origin(const char *label, const cmp_file *f)
{
    char path[KB_QUOTE_LEN], gpu[KB_QUOTE_LEN], commit[KB_QUOTE_LEN];
    printf("%s %s: gpu %s, commit %s\n", label, kb_quote(f->path, path, sizeof path),
           meta_quoted(f, "gpu", gpu, sizeof gpu), meta_quoted(f, "git_commit", commit, sizeof commit));
}

static void print_header(const cmp_file *base, const cmp_file *new, const widths *w,
                         double threshold_pct)
{
    print_origin("base", base);
    print_origin("new ", new);
    const char *g1 = meta_get(base, "gpu"), *g2 = meta_get(new, "gpu");
    char q1[KB_QUOTE_LEN], q2[KB_QUOTE_LEN];
    if (g1 && g2 && strcmp(g1, g2))
        printf("the files come from different GPUs (%s vs %s); timings are not comparable\n",
               kb_quote(g1, q1, sizeof q1), kb_quote(g2, q2, sizeof q2));
    printf("a change counts when it exceeds both %g%% and %g x the rows' combined rel_stdev\n\n",
           threshold_pct, NOISE_FACTOR);
    printf("%-*s %-*s %-*s %-*s %12s %12s %9s  %s\n", w->op, "op", w->variant, "variant",
           w->dtype, "dtype", w->shape, "shape", "base_ms", "new_ms", "new/base", "verdict");
}

static void print_pair(const widths *w, const cmp_row *base, const cmp_row *new, verdict v)
{
    print_key(w, base);
    print_time(base);
    print_time(new);
    if (timed(base) && timed(new))
        printf(" %9.3f", new->median_ms / base->median_ms);
    else
        printf(" %9s", "-");
    printf("%s%s\n", v == V_NONE ? "" : "  ", verdict_names[v]);
}

static int list_unmatched(const widths *w, const cmp_file *f, const char *label)
{
    int n = 0;
    for (int i = 0; i < f->nrows; ++i) {
        if (f->rows[i].matched)
            continue;
        printf("only in %s: ", label);
        print_key(w, &f->rows[i]);
        printf("  %s\n", f->rows[i].status);
        ++n;
    }
    return n;
}

static int compare_files(cmp_file *base, cmp_file *new, double threshold_pct)
{
    widths w = {2, 7, 5, 5};
    for (int i = 0; i < base->nrows; ++i)
        widen(&w, &base->rows[i]);
    for (int i = 0; i < new->nrows; ++i)
        widen(&w, &new->rows[i]);
    print_header(base, new, &w, threshold_pct);

    int counts[V_COUNT] = {0};
    row_index index;
    index_rows(&index, new, base->has_l2 && new->has_l2);
    for (int i = 0; i < base->nrows; ++i) {
        cmp_row *b = &base->rows[i], *n = take_match(&index, new, b);
        if (!n)
            continue;
        b->matched = n->matched = 1;
        verdict v = judge(b, n, threshold_pct);
        counts[v]++;
        print_pair(&w, b, n, v);
    }
    free_index(&index);
    int lone = list_unmatched(&w, base, "base") + list_unmatched(&w, new, "new");
    printf("\nsummary: %d FASTER, %d SLOWER, %d SAME, %d FAIL, %d only in one file\n",
           counts[V_FASTER], counts[V_SLOWER], counts[V_SAME], counts[V_FAIL], lone);
    return counts[V_SLOWER] || counts[V_FAIL] ? KB_EXIT_FAIL : 0;
}

static int parse_args(int argc, char **argv, const char **paths, double *threshold_pct,
                      char *err, size_t errlen)
{
    int npaths = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--threshold")) {
            double t;
            if (++i == argc || kb_parse_decimal(argv[i], &t) != 0 || t < 0 || t >= 1e6) {
                snprintf(err, errlen, "--threshold needs a percentage >= 0");
                return -1;
            }
            *threshold_pct = t;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            char q[KB_QUOTE_LEN];
            snprintf(err, errlen, "unknown option '%s' for compare", kb_quote(argv[i], q, sizeof q));
            return -1;
        } else if (npaths < 2)
            paths[npaths++] = argv[i];
        else
            npaths = 3;
    }
    if (npaths != 2) {
        snprintf(err, errlen, "usage: kbench compare BASE.csv NEW.csv [--threshold PCT]");
        return -1;
    }
    return 0;
}

int kb_cmd_compare(int argc, char **argv)
{
    const char *paths[2];
    double threshold_pct = DEFAULT_THRESHOLD_PCT;
    char err[512];
    cmp_file base = {0}, new = {0};
    int rc = KB_EXIT_USAGE;
    if (parse_args(argc, argv, paths, &threshold_pct, err, sizeof err) == 0) {
        base.path = paths[0];
        new.path = paths[1];
        if (read_csv(&base, err, sizeof err) == 0 && read_csv(&new, err, sizeof err) == 0)
            rc = compare_files(&base, &new, threshold_pct);
    }
    if (rc == KB_EXIT_USAGE)
        fprintf(stderr, "kbench: %s\n", err);
    free_csv(&base);
    free_csv(&new);
    return rc;
}
