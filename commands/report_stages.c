/* The stage table of `kbench model stages` (model/stages.h) as markdown,
 * from the stage-prefill and stage-decode rows of one run: what each
 * stage of the model buys, generated from the run like the results table,
 * never copied by hand.  report.c writes it between the README's
 * report-stages markers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/csv_read.h"
#include "harness/harness.h"
#include "commands/report.h"

static const char *const stage_names[] = {"basic", "paper", "modern", "fast"};
#define NSTAGES ((int)(sizeof stage_names / sizeof *stage_names))

/* The run's last row of op and stage, or NULL. */
static const kb_run_row *find_row(const kb_run_file *f, const char *op, const char *stage)
{
    const kb_run_row *found = NULL;
    for (int i = 0; i < f->nrows; ++i)
        if (!strcmp(f->rows[i].op, op) && !strcmp(f->rows[i].variant, stage))
            found = &f->rows[i];
    return found;
}

static double number(const kb_run_file *f, const kb_run_row *r, const char *col)
{
    char err[8];
    double v = NAN;
    return r && kb_run_decimal(f, r, kb_run_column(f, col), &v, err, sizeof err) == 0 ? v : NAN;
}

/* "30 layers, d 576, 9 heads (3 KV heads), ff 1536, vocab 49152, tied; 512-token prompt" */
static void shape_words(FILE *out, const char *shape)
{
    long v[7];
    int n = 0;
    const char *p = shape;
    char *end;
    while (n < 7 && (v[n] = strtol(p, &end, 10), end != p))
        ++n, p = *end == 'x' ? end + 1 : end;
    if (n != 7) {
        fprintf(out, "shape %s", shape);
        return;
    }
    fprintf(out, "%ld layers, d_model %ld, %ld heads (%ld KV heads in modern and fast), d_ff %ld, vocab %ld, %s; "
                 "a %ld-token prompt",
            v[0], v[1], v[2], v[3], v[4], v[5], *p == 't' ? "tied embeddings" : "untied", v[6]);
}

static void stage_line(FILE *out, const kb_run_file *f, const char *stage, double mem_gb_s)
{
    const kb_run_row *p = find_row(f, "stage-prefill", stage), *d = find_row(f, "stage-decode", stage);
    if (!p || !d)
        return;
    fprintf(out, "| %s | %s |", stage, d->dtype);
    if (strcmp(d->status, "PASS") || strcmp(p->status, "PASS")) {
        const char *why = kb_run_cell(f, d, kb_run_column(f, "reason"));
        fprintf(out, " %s: %s | | | | |\n", d->status, why);
        return;
    }
    const double ms = d->median_ms, bytes = number(f, d, "bytes");
    fprintf(out, " %.2f ms | %.3f ms | %.0f |", p->median_ms, ms, 1e3 / ms);
    if (mem_gb_s > 0 && bytes > 0)
        fprintf(out, " %.1f%% |", 100 * bytes / (ms * 1e-3) * 1e-9 / mem_gb_s);
    else
        fputs(" – |", out);
    const double err = number(f, d, "rel_l2_err"), tol = number(f, d, "tol_at_max_err");
    if (isnan(err) || isnan(tol))
        fputs(" PASS |\n", out); /* a run from before the stage rows recorded the error */
    else
        fprintf(out, " PASS, %.1e (≤ %.0e) |\n", err, tol);
}

char *kb_report_stages(const kb_run_file *f, char *err, size_t errlen)
{
    const kb_run_row *any = NULL;
    for (int i = 0; i < NSTAGES && !any; ++i)
        any = find_row(f, "stage-decode", stage_names[i]);
    if (!any) {
        snprintf(err, errlen, "%s has no stage-decode row (`kbench model stages --append`)", f->path);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *out = kb_must(open_memstream(&text, &len));
    const double mem = kb_run_meta_number(f, "ceiling_mem_gb_s");
    fputs("| stage | dtype | prefill | decode, per token | tokens/s | % of bandwidth bound | check vs its C reference "
          "(logits rel. L2) |\n|---|---|---|---|---|---|---|\n",
          out);
    for (int i = 0; i < NSTAGES; ++i)
        stage_line(out, f, stage_names[i], isnan(mem) ? 0 : mem);
    fputs("\nAt ", out);
    shape_words(out, any->shape);
    fprintf(out, ", batch 1, from `%s` (copy ceiling %.0f GB/s).\n",
            strrchr(f->path, '/') ? strrchr(f->path, '/') + 1 : f->path, mem);
    if (fclose(out) != 0)
        kb_must(NULL);
    return text;
}
