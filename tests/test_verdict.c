/* The verdict on a kernel of one's own (harness/verdict.c), from rows made
 * here: the geometric mean of the speed-ups per family, on the shapes
 * where both rows passed and were timed; the first failing shape with its
 * error and bound; the skipped shapes; the roofline at the family's
 * largest shape; the flag on a speed-up over 10x. */
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "ops/softmax.h"
#include "tests/check.h"

static const kb_variant mine = {.name = "mine", .dtype = KB_F32}, base = {.name = "cudnn", .dtype = KB_F32},
                        top = {.name = "vectorized", .dtype = KB_F32};

static kb_result row(const kb_variant *v, int64_t R, int64_t C, const char *family, kb_status st, double ms)
{
    kb_result r;
    memset(&r, 0, sizeof r);
    r.op = &kb_op_softmax, r.variant = v, r.family = family, r.status = st;
    r.shape.nd = 2, r.shape.d[0] = R, r.shape.d[1] = C;
    r.flops = 5.0 * R * C, r.bytes = 8.0 * R * C;
    r.timed = st == KB_PASS && ms > 0, r.time_ms.median = ms;
    return r;
}

static char *verdict(const kb_result *rows, int n)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    kb_own_verdict(f, rows, n, "mine", "mine.cu");
    fclose(f);
    return text;
}

int main(void)
{
    kb_result rows[12];
    int n = 0;
    /* square: 2x and 1x cudnn (geomean 1.41x), 1x and 0.5x vectorized (0.71x) */
    rows[n++] = row(&mine, 1024, 1024, "square", KB_PASS, 1.0);
    rows[n - 1].pct_of_peak = 40;
    rows[n++] = row(&base, 1024, 1024, "square", KB_PASS, 2.0);
    rows[n++] = row(&top, 1024, 1024, "square", KB_PASS, 1.0);
    rows[n++] = row(&mine, 4096, 4096, "square", KB_PASS, 2.0);
    rows[n - 1].pct_of_peak = 87.5;
    rows[n++] = row(&base, 4096, 4096, "square", KB_PASS, 2.0);
    rows[n++] = row(&top, 4096, 4096, "square", KB_PASS, 1.0);
    /* hostile: one failure (first), one skip, and a comparator that failed */
    rows[n++] = row(&mine, 5, 7, "hostile", KB_FAIL, 0);
    strcpy(rows[n - 1].reason, "before timing: y: 3 elements over tolerance");
    rows[n - 1].check.max_abs_err = 0.5, rows[n - 1].check.worst_tol = 1e-3, rows[n - 1].check.nonfinite = 2;
    rows[n++] = row(&mine, 1, 1, "hostile", KB_SKIP, 0);
    strcpy(rows[n - 1].reason, "rows of one column");
    rows[n++] = row(&mine, 3, 9, "hostile", KB_PASS, 1.0);
    rows[n++] = row(&base, 3, 9, "hostile", KB_FAIL, 0);
    char *v = verdict(rows, n);
    printf("%s", v);
    CHECK(strstr(v, "verdict on mine (mine.cu):\n"));
    CHECK(strstr(v, "correct: NO, 1 of 4 shape(s) fail; the first, f32 5x7: before timing: y: 3 elements over "
                    "tolerance (largest error 0.5 where the bound is 0.001)"));
    CHECK(strstr(v, "hint: outputs hold NaN before each check"));
    CHECK(strstr(v, "hint: softmax's contract: when R >= 4 and C >= 2, row 0 is shifted"));
    CHECK(strstr(v, "skipped: 1 shape(s), the first 1x1: rows of one column"));
    CHECK(strstr(v, "family square: 1.41x cudnn (2 shapes); 0.71x vectorized (2 shapes); 87.5% of the roofline at "
                    "4096x4096"));
    /* hostile: no comparator passed beside mine, so no speed-up; its largest passing row has no roofline */
    CHECK(strstr(v, "family hostile: no roofline at 3x9"));
    CHECK(!strstr(v, "review it"));
    free(v);

    /* All passing, one 20x speed-up: flagged. */
    n = 0;
    rows[n++] = row(&mine, 1024, 1024, "square", KB_PASS, 0.1);
    rows[n++] = row(&base, 1024, 1024, "square", KB_PASS, 2.0);
    v = verdict(rows, n);
    CHECK(strstr(v, "correct: yes, at every shape it ran (1)") && !strstr(v, "hint"));
    CHECK(strstr(v, "20.00x cudnn (1 shape);"));
    CHECK(strstr(v, "a speed-up over 10x: review it"));
    free(v);
    return CHECK_DONE();
}
