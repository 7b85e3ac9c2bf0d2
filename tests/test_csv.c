/* The CSV printer: metadata first, one header, units in names, quoting,
 * empty cells for unmeasured values, and an atomic write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/csv_read.h"
#include "harness/harness.h"
#include "ops/matmul.h"
#include "tests/check.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static kb_result passed_row(void)
{
    kb_result r = {0};
    r.op = &kb_op_matmul;
    r.variant = &kb_op_matmul.variants[0][0];
    r.shape = (kb_shape){3, {128, 64, 32}, 0};
    r.flops = 2.0 * 128 * 64 * 32;
    r.bytes = 4.0 * (128 * 32 + 32 * 64 + 128 * 64);
    r.timed = 1;
    r.time_ms = (kb_stats){.median = 0.5, .min = 0.25, .max = 1.0, .rel_stdev = 0.02, .n = 7};
    r.speedup = 2.0;
    r.pct_of_ceiling = 50.0;
    r.pct_of_peak = 70.0;
    r.check = (kb_check){.max_abs_err = 1e-6, .rel_l2_err = 1e-7, .worst_tol = 1e-4, .pass = 1};
    r.rows_checked = r.rows_total = 128;
    r.clock_mhz = 1412.4;
    r.power_w = 698.96;
    r.temp_c = 71;
    r.throttle = KB_THR_IDLE | KB_THR_SW_POWER_CAP | KB_THR_HW_THERMAL;
    r.mj_per_launch = 0.25;
    r.throttled = 1;
    r.status = KB_PASS;
    snprintf(r.devices, sizeof r.devices, "1");
    return r;
}

/* The same rows as markdown and as JSON lines: every markdown line has as
 * many cells as the header, and JSON numbers are bare, text quoted and
 * escaped, unmeasured cells null. */
static void test_other_formats(const kb_result *rows, const kb_meta *meta)
{
    char dir[] = "/tmp/kbench-fmt-XXXXXX", path[256], err[256], cmd[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/out.md", dir);
    CHECK(kb_results_write(path, KB_FORMAT_MD, meta, 2, rows, 2, err, sizeof err) == 0);
    char *text = slurp(path);
    CHECK(text && strncmp(text, "- gpu: Test GPU\n- git_commit: abc123\n\n| op | variant | dtype |", 62) == 0);
    CHECK(text && strstr(text, "| matmul | naive | f32 | f32 | MxNxK | 128x64x32 | 128 | 64 | 32 |  |"));
    CHECK(text && strstr(text, "| sw_power_cap\\|hw_thermal |"));
    int want = -1;
    for (char *line = text ? strstr(text, "\n|") : NULL; line; line = strstr(line + 1, "\n|")) {
        int bars = 0;
        for (char *p = line + 1; *p && *p != '\n'; ++p)
            bars += *p == '|' && p[-1] != '\\';
        want = want < 0 ? bars : want;
        CHECK(bars == want);
    }
    CHECK(want > 40);

    snprintf(path, sizeof path, "%s/out.jsonl", dir);
    CHECK(kb_results_write(path, KB_FORMAT_JSONL, meta, 2, rows, 2, err, sizeof err) == 0);
    text = slurp(path);
    CHECK(text && strncmp(text, "{\"meta\":{\"gpu\":\"Test GPU\",\"git_commit\":\"abc123\"}}\n{\"op\":\"matmul\",", 65) == 0);
    CHECK(text && strstr(text, "\"shape\":\"128x64x32\",\"d1\":128,\"d2\":64,\"d3\":32,\"d4\":null,"));
    CHECK(text && strstr(text, "\"median_ms\":0.500000,"));
    CHECK(text && strstr(text, "\"reason\":\"needs 3 GiB, 1 GiB free, \\\"say\\\"\""));
    CHECK(text && strstr(text, "\"status\":\"SKIP\",") && strstr(text, "\"median_ms\":null,"));
    CHECK(text && strstr(text, ",\"devices\":\"1\",\"family\":\"square\",\"axis\":\"N\",\"workspace_mib\":32.0}\n") &&
          strstr(text, ",\"devices\":\"0+1\",\"family\":\"custom\",\"axis\":\"\",\"workspace_mib\":null}\n"));
    snprintf(cmd, sizeof cmd, "python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' %s "
                              "2>/dev/null || ! command -v python3 >/dev/null", path);
    CHECK(system(cmd) == 0); /* every line is JSON, where python3 can tell */
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    char dir[] = "/tmp/kbench-csv-XXXXXX", path[256], line[4096];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/out.csv", dir);

    kb_result rows[2] = {passed_row(), passed_row()};
    rows[1].status = KB_SKIP;
    rows[1].timed = 0;
    rows[1].rows_checked = 0;
    snprintf(rows[1].reason, sizeof rows[1].reason, "needs 3 GiB, 1 GiB free, \"say\"");
    snprintf(rows[1].devices, sizeof rows[1].devices, "0+1");
    rows[0].family = "square", rows[0].axis = "N";
    rows[1].family = "custom";
    rows[0].workspace_mib = 32, rows[0].workspace_gauged = 1; /* the skipped row's is not */
    kb_meta meta[] = {{"gpu", "Test GPU"}, {"git_commit", "abc123"}};
    char err[256];
    test_other_formats(rows, meta);
    CHECK(kb_csv_write(path, meta, 2, rows, 2, err, sizeof err) == 0);

    char *text = slurp(path);
    FILE *f;
    CHECK(text != NULL);
    CHECK(strncmp(text, "# gpu: Test GPU\n# git_commit: abc123\nop,variant,dtype,", 52) == 0);
    CHECK(strstr(text, ",median_ms,min_ms,max_ms,rel_stdev_pct,") != NULL);
    CHECK(strstr(text, ",gflop_s,gb_s,speedup_x,") != NULL);
    /* 2*128*64*32 flop in 0.5 ms = 1.048576 GFLOP/s */
    CHECK(strstr(text, "matmul,naive,f32,f32,MxNxK,128x64x32,128,64,32,,,,,,524288,") != NULL);
    CHECK(strstr(text, ",0.500000,0.250000,1.000000,2.000,7,1.049,") != NULL);
    CHECK(strstr(text, ",2.0000,50.0,70.0,compute,1.000e-06,") != NULL);
    /* NVML's columns close the header, so readers of the older ones keep working.
     * 524288 FLOP and 57344 B for 0.25 mJ: 2.097 GFLOP/J and 0.229 GB/J. */
    CHECK(strstr(text, ",status,reason,clock_mhz,power_w,temp_c,throttle,mj_per_launch,gflop_per_j,gb_per_j,"
                       "clock_flag,devices,family,axis,workspace_mib\n") != NULL);
    CHECK(strstr(text, ",cold,PASS,,1412,699.0,71,sw_power_cap|hw_thermal,0.2500,2.097,0.229,throttled,1,square,N,32.0\n") !=
          NULL);
    /* A skipped row leaves timing, error and NVML cells empty, and the reason is quoted. */
    CHECK(strstr(text, ",,,,,,,,,,,,,,,,,cold,SKIP,\"needs 3 GiB, 1 GiB free, \"\"say\"\"\",,,,,,,,,0+1,custom,,\n") != NULL);

    /* The readers find the GPU by name; a file without the column, or an
     * empty cell, reads as GPU 0. */
    kb_run_file run = {0};
    CHECK(kb_run_read(&run, path, err, sizeof err) == 0);
    CHECK(run.nrows == 2 && !strcmp(run.rows[0].devices, "1") && !strcmp(run.rows[1].devices, "0+1"));
    kb_run_free(&run);
    run = (kb_run_file){0};
    snprintf(line, sizeof line, "%s/old.csv", dir);
    f = fopen(line, "w");
    fputs("# gpu: x\nop,variant,dtype,shape,median_ms,rel_stdev_pct,status,devices\n"
          "copy,vec4,f32,1024,0.5,1.0,PASS,\n",
          f);
    fclose(f);
    CHECK(kb_run_read(&run, line, err, sizeof err) == 0 && run.nrows == 1 && !strcmp(run.rows[0].devices, "0"));
    kb_run_free(&run);
    remove(line);

    /* Every data row has as many cells as the header (counting outside quotes). */
    f = fopen(path, "r");
    int header_cells = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        int cells = 1, quoted = 0;
        for (char *p = line; *p; ++p) {
            quoted ^= *p == '"';
            cells += *p == ',' && !quoted;
        }
        if (header_cells < 0)
            header_cells = cells;
        CHECK(cells == header_cells);
    }
    if (f)
        fclose(f);

    /* Appending keeps the file's metadata and rows and adds the new ones
     * after them; a CSV with other columns is refused. */
    char *prefix = kb_csv_read_for_append(path, err, sizeof err);
    CHECK(prefix != NULL);
    rows[0].shape.d[0] = 256;
    CHECK(prefix && kb_csv_write_after(path, prefix, rows, 1, err, sizeof err) == 0);
    free(prefix);
    text = slurp(path);
    CHECK(strncmp(text, "# gpu: Test GPU\n", 16) == 0);
    CHECK(strstr(text, ",128x64x32,") && strstr(text, ",256x64x32,") > strstr(text, ",SKIP,"));
    snprintf(line, sizeof line, "%s/other.csv", dir);
    f = fopen(line, "w");
    fputs("# gpu: x\nop,variant,time\n", f);
    fclose(f);
    CHECK(kb_csv_read_for_append(line, err, sizeof err) == NULL && strstr(err, "not a kbench CSV"));
    remove(line);

    /* No temporary file is left behind; a write into a missing folder fails cleanly. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/missing/out.csv", dir);
    CHECK(kb_csv_write(path, meta, 2, rows, 2, err, sizeof err) != 0);
    CHECK(strstr(err, "cannot write") != NULL);
    CHECK(access(path, F_OK) != 0);

    /* The output check before a run: a writable path passes and leaves
     * nothing; a folder, a device or a missing folder is refused by name. */
    snprintf(path, sizeof path, "%s/new.csv", dir);
    CHECK(kb_csv_check_output(path, err, sizeof err) == 0);
    snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
    CHECK(system(cmd) == 0);
    CHECK(kb_csv_check_output(dir, err, sizeof err) != 0 && strstr(err, "not a regular file"));
    CHECK(kb_csv_check_output("/dev/null", err, sizeof err) != 0 &&
          strstr(err, "cannot write /dev/null: not a regular file"));
    snprintf(path, sizeof path, "%s/missing/out.csv", dir);
    CHECK(kb_csv_check_output(path, err, sizeof err) != 0 && strstr(err, "No such file"));

    /* --append reads only a regular file of at most 256 MiB with no NUL. */
    CHECK(!kb_csv_read_for_append("/dev/zero", err, sizeof err) &&
          strstr(err, "cannot read /dev/zero: not a regular file"));
    CHECK(!kb_csv_read_for_append(dir, err, sizeof err) && strstr(err, "not a regular file"));
    snprintf(path, sizeof path, "%s/fifo.csv", dir);
    CHECK(mkfifo(path, 0600) == 0); /* refused, not waited on for a writer */
    CHECK(!kb_csv_read_for_append(path, err, sizeof err) && strstr(err, "fifo.csv: not a regular file"));
    remove(path);
    snprintf(path, sizeof path, "%s/nul.csv", dir);
    f = fopen(path, "w");
    fputs("# gpu: x\n# git", f);
    fputc('\0', f);
    fputs("_commit: y\n", f);
    fclose(f);
    CHECK(!kb_csv_read_for_append(path, err, sizeof err) && strstr(err, "nul.csv:2: a NUL byte at column 6"));
    CHECK(truncate(path, (off_t)KB_CSV_MAX_BYTES + 1) == 0); /* sparse */
    CHECK(!kb_csv_read_for_append(path, err, sizeof err) && strstr(err, "larger than 256 MiB"));
    remove(path);

    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return CHECK_DONE();
}
