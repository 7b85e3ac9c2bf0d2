/* kbench compare BASE.csv NEW.csv [--threshold PCT]: match the rows of two
 * runs and say which got faster, slower or broke.  Columns are found by name,
 * so files from older or newer kbench versions still compare. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/csv_read.h"
#include "harness/harness.h"

#define DEFAULT_THRESHOLD_PCT 2.0
/* rel_stdev_pct is the spread of single samples, and the two files' spreads
 * add in quadrature.  A change inside twice that combined spread (about 95%
 * of pure noise, were it normal) is not called a change. */
#define NOISE_FACTOR 2.0
/* Two rows whose mean SM clocks differ by more than this compare the
 * clocks as much as the code: a throttled run looks like a slow kernel. */
#define CLOCK_WARN_PCT 3.0

typedef struct {
    kb_run_file run;
    char *matched;      /* per row: paired with a row of the other file */
    double *clock_mhz;  /* per row: the mean SM clock; NAN when not recorded */
} cmp_file;

/* A base row and the new row it was paired with. */
typedef struct {
    int base, new;
} cmp_pair;

typedef enum { V_NONE, V_SAME, V_FASTER, V_SLOWER, V_FAIL, V_COUNT } verdict;
static const char *const verdict_names[V_COUNT] = {"", "SAME", "FASTER", "SLOWER", "FAIL"};

static int read_csv(cmp_file *f, const char *path, char *err, size_t errlen)
{
    if (kb_run_read(&f->run, path, err, errlen) != 0)
        return -1;
    f->matched = kb_must(calloc((size_t)f->run.nrows + 1, 1));
    f->clock_mhz = kb_must(malloc(((size_t)f->run.nrows + 1) * sizeof *f->clock_mhz));
    const int col = kb_run_column(&f->run, "clock_mhz");
    for (int i = 0; i < f->run.nrows; ++i)
        if (kb_run_decimal(&f->run, &f->run.rows[i], col, &f->clock_mhz[i], err, errlen) != 0)
            return -1;
    return 0;
}

static void free_csv(cmp_file *f)
{
    kb_run_free(&f->run);
    free(f->matched);
    free(f->clock_mhz);
}

/* l2 joins the key only when both files record it.  devices always does:
 * a --replicate run has each row once per GPU, and a file without the
 * column reads as GPU 0 (csv_read.h). */
static int same_key(const kb_run_row *a, const kb_run_row *b, int use_l2)
{
    return !strcmp(a->op, b->op) && !strcmp(a->variant, b->variant) &&
           !strcmp(a->dtype, b->dtype) && !strcmp(a->shape, b->shape) &&
           !strcmp(a->devices, b->devices) && (!use_l2 || !strcmp(a->l2, b->l2));
}

/* FNV-1a over the key's cells, each with its terminating NUL. */
static uint64_t hash_text(uint64_t h, const char *s)
{
    do
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    while (*s++);
    return h;
}

static uint64_t key_hash(const kb_run_row *r, int use_l2)
{
    uint64_t h = 0xcbf29ce484222325u;
    h = hash_text(hash_text(hash_text(hash_text(hash_text(h, r->op), r->variant), r->dtype), r->shape), r->devices);
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

static size_t find_slot(const row_index *x, const kb_run_file *f, const kb_run_row *key)
{
    size_t s = key_hash(key, x->use_l2) & x->mask;
    while (x->key_row[s] >= 0 && !same_key(&f->rows[x->key_row[s]], key, x->use_l2))
        s = (s + 1) & x->mask;
    return s;
}

static void index_rows(row_index *x, const kb_run_file *f, int use_l2)
{
    size_t slots = 2;
    while (slots < 2 * (size_t)f->nrows)
        slots *= 2;
    x->key_row = kb_must(malloc(slots * sizeof *x->key_row));
    x->head = kb_must(malloc(slots * sizeof *x->head));
    x->next = kb_must(malloc(((size_t)f->nrows + 1) * sizeof *x->next));
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

/* The index in f of key's next unmatched row, or -1. */
static int take_match(row_index *x, const kb_run_file *f, const kb_run_row *key)
{
    size_t s = find_slot(x, f, key);
    int i = x->key_row[s] < 0 ? -1 : x->head[s];
    if (i >= 0)
        x->head[s] = x->next[i];
    return i;
}

static void free_index(row_index *x)
{
    free(x->key_row);
    free(x->head);
    free(x->next);
}

static int timed(const kb_run_row *r)
{
    return !strcmp(r->status, "PASS") && r->median_ms > 0;
}

static verdict judge(const kb_run_row *base, const kb_run_row *new, double threshold_pct)
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
static int hot(const kb_run_row *r)
{
    return r->l2 && !strcmp(r->l2, "hot");
}

/* Widths of the key columns, so long variant names and shapes line up;
 * gpu is 0 (no column) while every row ran on GPU 0, as all did before
 * --devices. */
typedef struct {
    int op, variant, dtype, shape, gpu;
} widths;

static void fit(int *width, size_t len)
{
    if ((size_t)*width < len)
        *width = (int)len;
}

static void widen(widths *w, const kb_run_row *r)
{
    fit(&w->op, strlen(r->op));
    fit(&w->variant, strlen(r->variant));
    fit(&w->dtype, strlen(r->dtype));
    fit(&w->shape, strlen(r->shape) + (hot(r) ? 4 : 0));
    if (strcmp(r->devices, "0"))
        fit(&w->gpu, strlen(r->devices) > 3 ? strlen(r->devices) : 3);
}

static void print_key(const widths *w, const kb_run_row *r)
{
    char shape[256];
    snprintf(shape, sizeof shape, "%s%s", r->shape, hot(r) ? "/hot" : "");
    printf("%-*s %-*s %-*s %-*s", w->op, r->op, w->variant, r->variant, w->dtype, r->dtype,
           w->shape, shape);
    if (w->gpu)
        printf(" %-*s", w->gpu, r->devices);
}

/* A timed row shows its median; others show their status instead. */
static void print_time(const kb_run_row *r)
{
    if (timed(r))
        printf(" %12.4f", r->median_ms);
    else
        printf(" %12s", !strcmp(r->status, "PASS") ? "-" : r->status);
}

/* Metadata is free text: quoted, so it cannot break the report's lines. */
static const char *meta_quoted(const cmp_file *f, const char *key, char *buf, size_t len)
{
    const char *v = kb_run_meta(&f->run, key);
    return v ? kb_quote(v, buf, len) : "unknown";
}

static void print_origin(const char *label, const cmp_file *f)
{
    char path[KB_QUOTE_LEN], gpu[KB_QUOTE_LEN], commit[KB_QUOTE_LEN];
    printf("%s %s: gpu %s, commit %s\n", label, kb_quote(f->run.path, path, sizeof path),
           meta_quoted(f, "gpu", gpu, sizeof gpu), meta_quoted(f, "git_commit", commit, sizeof commit));
}

static void print_header(const cmp_file *base, const cmp_file *new, const widths *w,
                         double threshold_pct)
{
    print_origin("base", base);
    print_origin("new ", new);
    const char *g1 = kb_run_meta(&base->run, "gpu"), *g2 = kb_run_meta(&new->run, "gpu");
    char q1[KB_QUOTE_LEN], q2[KB_QUOTE_LEN];
    if (g1 && g2 && strcmp(g1, g2))
        printf("the files come from different GPUs (%s vs %s); timings are not comparable\n",
               kb_quote(g1, q1, sizeof q1), kb_quote(g2, q2, sizeof q2));
    printf("a change counts when it exceeds both %g%% and %g x the rows' combined rel_stdev\n\n",
           threshold_pct, NOISE_FACTOR);
    printf("%-*s %-*s %-*s %-*s", w->op, "op", w->variant, "variant", w->dtype, "dtype", w->shape, "shape");
    if (w->gpu)
        printf(" %-*s", w->gpu, "gpu");
    printf(" %12s %12s %9s  %s\n", "base_ms", "new_ms", "new/base", "verdict");
}

static void print_pair(const widths *w, const kb_run_row *base, const kb_run_row *new, verdict v)
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
    for (int i = 0; i < f->run.nrows; ++i) {
        if (f->matched[i])
            continue;
        printf("only in %s: ", label);
        print_key(w, &f->run.rows[i]);
        printf("  %s\n", f->run.rows[i].status);
        ++n;
    }
    return n;
}

/* Clocks of 0 or none (NVML unavailable) say nothing. */
static int clocks_differ(const cmp_file *base, const cmp_file *new, cmp_pair p)
{
    double a = base->clock_mhz[p.base], b = new->clock_mhz[p.new];
    return a > 0 && b > 0 && fabs(b / a - 1.0) * 100.0 > CLOCK_WARN_PCT;
}

/* One line for all, then the rows: a throttled run makes many at once. */
static void warn_clocks(const widths *w, const cmp_file *base, const cmp_file *new, const cmp_pair *pairs,
                        int npairs)
{
    int n = 0;
    for (int i = 0; i < npairs; ++i)
        n += clocks_differ(base, new, pairs[i]);
    if (!n)
        return;
    printf("\nwarning: %d row%s ran at SM clocks more than %g%% apart; their times compare clocks as well as code:\n",
           n, n == 1 ? "" : "s", CLOCK_WARN_PCT);
    for (int i = 0; i < npairs; ++i)
        if (clocks_differ(base, new, pairs[i])) {
            printf("  ");
            print_key(w, &base->run.rows[pairs[i].base]);
            printf("  %.0f MHz -> %.0f MHz\n", base->clock_mhz[pairs[i].base], new->clock_mhz[pairs[i].new]);
        }
}

static int compare_files(cmp_file *base, cmp_file *new, double threshold_pct)
{
    const kb_run_file *b = &base->run, *n = &new->run;
    widths w = {2, 7, 5, 5, 0};
    for (int i = 0; i < b->nrows; ++i)
        widen(&w, &b->rows[i]);
    for (int i = 0; i < n->nrows; ++i)
        widen(&w, &n->rows[i]);
    print_header(base, new, &w, threshold_pct);

    int counts[V_COUNT] = {0}, npairs = 0;
    cmp_pair *pairs = kb_must(malloc(((size_t)b->nrows + 1) * sizeof *pairs));
    row_index index;
    index_rows(&index, n, kb_run_column(b, "l2") >= 0 && kb_run_column(n, "l2") >= 0);
    for (int i = 0; i < b->nrows; ++i) {
        int j = take_match(&index, n, &b->rows[i]);
        if (j < 0)
            continue;
        base->matched[i] = new->matched[j] = 1;
        pairs[npairs++] = (cmp_pair){i, j};
        verdict v = judge(&b->rows[i], &n->rows[j], threshold_pct);
        counts[v]++;
        print_pair(&w, &b->rows[i], &n->rows[j], v);
    }
    free_index(&index);
    warn_clocks(&w, base, new, pairs, npairs);
    free(pairs);
    int lone = list_unmatched(&w, base, "base") + list_unmatched(&w, new, "new");
    printf("\nsummary: %d FASTER, %d SLOWER, %d SAME, %d FAIL, %d only in one file\n",
           counts[V_FASTER], counts[V_SLOWER], counts[V_SAME], counts[V_FAIL], lone);
    return counts[V_SLOWER] || counts[V_FAIL] ? KB_EXIT_FAIL : 0;
}

#define USAGE "usage: kbench compare BASE.csv NEW.csv [--threshold PCT]"

static void print_help(void)
{
    puts(USAGE "\n"
         "Match the rows of two runs by op, variant, dtype, shape, l2 mode and GPU and judge each\n"
         "new median against the base one: FASTER or SLOWER beyond both PCT (default 2) and\n"
         "twice the rows' combined noise, else SAME; FAIL when a passing row now fails.\n"
         "Rows whose SM clocks (clock_mhz) differ by more than 3% are listed in a warning.\n"
         "Exit 0: nothing got slower or broke; 1: a SLOWER or FAIL verdict; 2: bad input.");
}

static int parse_args(int argc, char **argv, const char **paths, double *threshold_pct,
                      char *err, size_t errlen)
{
    int npaths = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--threshold")) {
            if (kb_real_flag("--threshold", ++i < argc ? argv[i] : "", 0, 0, 1e6, "a percentage", threshold_pct,
                             err, errlen) != 0)
                return -1;
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
        snprintf(err, errlen, USAGE);
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
    if (kb_asks_help(argc, argv)) {
        print_help();
        return 0;
    }
    if (parse_args(argc, argv, paths, &threshold_pct, err, sizeof err) == 0 && read_csv(&base, paths[0], err, sizeof err) == 0 &&
        read_csv(&new, paths[1], err, sizeof err) == 0)
        rc = compare_files(&base, &new, threshold_pct);
    if (rc == KB_EXIT_USAGE)
        fprintf(stderr, "kbench: %s\n", err);
    free_csv(&base);
    free_csv(&new);
    return rc;
}
