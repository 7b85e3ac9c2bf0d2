/* kbench compare BASE.csv NEW.csv [--threshold PCT]: match the rows of two
 * runs and say which got faster, slower or broke.  Columns are found by name,
 * so files from older or newer kbench versions still compare. */
#include <errno.h>
#include <math.h>
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

typedef struct {
    const char *path;
    char *text;  /* the whole file, split in place; every string points into it */
    meta_pair *meta;
    int nmeta;
    cmp_row *rows;
    int nrows;
} cmp_file;

/* Column positions in one file's header; -1 when absent. */
typedef struct {
    int op, variant, dtype, shape, median, noise, status, l2, ncols;
} cmp_columns;

typedef enum { V_NONE, V_SAME, V_FASTER, V_SLOWER, V_FAIL, V_COUNT } verdict;
static const char *const verdict_names[V_COUNT] = {"", "SAME", "FASTER", "SLOWER", "FAIL"};

/* Make room for item n of an array of n items.  Capacity is implied: the
 * array doubles whenever n reaches a power of two. */
static void *grow(void *p, int n, size_t size)
{
    if (n > 0 && (n & (n - 1)) != 0)
        return p;
    p = realloc(p, (size_t)(n ? 2 * n : 1) * size);
    if (!p) {
        fprintf(stderr, "kbench: out of memory\n");
        exit(KB_EXIT_FAIL);
    }
    return p;
}

static char *read_all(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 4096 + 1;
            char *bigger = realloc(text, cap);
            if (!bigger) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "%s is too large to read", path);
                return NULL;
            }
            text = bigger;
        }
        got = fread(text + len, 1, 4096, f);
        len += got;
    } while (got > 0);
    int bad = ferror(f) ? errno : 0;
    fclose(f);
    if (bad) {
        free(text);
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(bad));
        return NULL;
    }
    text[len] = '\0';
    return text;
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
    char *names[MAX_COLUMNS];
    c->ncols = split_fields(line, names, MAX_COLUMNS);
    if (c->ncols < 0) {
        snprintf(err, errlen, "%s is not a kbench CSV (more than %d columns)", f->path, MAX_COLUMNS);
        return -1;
    }
    int *slots[] = {&c->op, &c->variant, &c->dtype, &c->shape, &c->median, &c->noise, &c->status};
    for (size_t i = 0; i < sizeof required / sizeof *required; ++i) {
        *slots[i] = find_column(names, c->ncols, required[i]);
        if (*slots[i] < 0) {
            snprintf(err, errlen, "%s is not a kbench CSV (no '%s' column)", f->path, required[i]);
            return -1;
        }
    }
    c->l2 = find_column(names, c->ncols, "l2");
    return 0;
}

/* An empty cell is NAN (not measured); anything else must be a number. */
static int parse_number(const char *s, double *out)
{
    char *end;
    if (!*s) {
        *out = NAN;
        return 0;
    }
    errno = 0;
    *out = strtod(s, &end);
    return *end || errno ? -1 : 0;
}

static int read_row(cmp_file *f, char *line, int lineno, const cmp_columns *c, char *err,
                    size_t errlen)
{
    char *v[MAX_COLUMNS];
    int n = split_fields(line, v, MAX_COLUMNS);
    if (n != c->ncols) {
        snprintf(err, errlen, "%s:%d: %d fields, the header has %d", f->path, lineno, n, c->ncols);
        return -1;
    }
    const char *status = v[c->status];
    if (strcmp(status, "PASS") && strcmp(status, "FAIL") && strcmp(status, "SKIP")) {
        snprintf(err, errlen, "%s:%d: unknown status '%s'", f->path, lineno, status);
        return -1;
    }
    cmp_row r = {v[c->op], v[c->variant], v[c->dtype], v[c->shape],
                 c->l2 >= 0 ? v[c->l2] : NULL, status, 0, 0, 0};
    if (parse_number(v[c->median], &r.median_ms) || parse_number(v[c->noise], &r.noise_pct)) {
        snprintf(err, errlen, "%s:%d: median_ms or rel_stdev_pct is not a number", f->path, lineno);
        return -1;
    }
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
    f->text = read_all(f->path, err, errlen);
    if (!f->text)
        return -1;
    cmp_columns cols;
    int have_header = 0, lineno = 0;
    for (char *line = f->text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line[strcspn(line, "\r")] = '\0';
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
        snprintf(err, errlen, "%s is not a kbench CSV (no header line)", f->path);
    return have_header ? 0 : -1;
}

static void free_csv(cmp_file *f)
{
    free(f->text);
    free(f->meta);
    free(f->rows);
}

/* l2 joins the key only when both files record it. */
static int same_key(const cmp_row *a, const cmp_row *b)
{
    return !strcmp(a->op, b->op) && !strcmp(a->variant, b->variant) &&
           !strcmp(a->dtype, b->dtype) && !strcmp(a->shape, b->shape) &&
           (!a->l2 || !b->l2 || !strcmp(a->l2, b->l2));
}

static cmp_row *find_match(cmp_file *f, const cmp_row *key)
{
    for (int i = 0; i < f->nrows; ++i)
        if (!f->rows[i].matched && same_key(&f->rows[i], key))
            return &f->rows[i];
    return NULL;
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

static void print_origin(const char *label, const cmp_file *f)
{
    const char *gpu = meta_get(f, "gpu"), *commit = meta_get(f, "git_commit");
    printf("%s %s: gpu %s, commit %s\n", label, f->path, gpu ? gpu : "unknown",
           commit ? commit : "unknown");
}

static void print_header(const cmp_file *base, const cmp_file *new, const widths *w,
                         double threshold_pct)
{
    print_origin("base", base);
    print_origin("new ", new);
    const char *g1 = meta_get(base, "gpu"), *g2 = meta_get(new, "gpu");
    if (g1 && g2 && strcmp(g1, g2))
        printf("the files come from different GPUs (%s vs %s); timings are not comparable\n",
               g1, g2);
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
    for (int i = 0; i < base->nrows; ++i) {
        cmp_row *b = &base->rows[i], *n = find_match(new, b);
        if (!n)
            continue;
        b->matched = n->matched = 1;
        verdict v = judge(b, n, threshold_pct);
        counts[v]++;
        print_pair(&w, b, n, v);
    }
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
            char *end = NULL;
            double t = i + 1 < argc ? strtod(argv[++i], &end) : NAN;
            if (!end || end == argv[i] || *end || !(t >= 0 && t < 1e6)) {
                snprintf(err, errlen, "--threshold needs a percentage >= 0");
                return -1;
            }
            *threshold_pct = t;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            snprintf(err, errlen, "unknown option '%s' for compare", argv[i]);
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
