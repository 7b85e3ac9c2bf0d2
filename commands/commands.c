/* The `list` and `run` commands. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <omp.h>
#include <unistd.h>
#include "harness/harness.h"
#include "harness/timing.h"
#include "ops/posenc.h"
#include "version.h"

#ifndef KB_ARCH_FLAGS
#define KB_ARCH_FLAGS "unknown"
#endif

static void needs_text(const kb_variant *v, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", v->needs & KB_NEEDS_CUBLAS ? "cuBLAS " : "",
             v->needs & KB_NEEDS_CUDNN ? "cuDNN " : "", v->needs & KB_NEEDS_NCCL ? "NCCL " : "");
    if (v->min_devices > 1) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%d+ GPUs ", v->min_devices);
    }
    if (v->min_cc) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "sm_%d+", v->min_cc);
    }
    if (v->quirks & KB_QUIRK_NAN_ON_MASKED_ROW) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%snan-on-masked-row", buf[0] ? " " : "");
    }
}

int kb_cmd_list(FILE *f)
{
    for (int i = 0; kb_ops[i]; ++i) {
        const kb_op *op = kb_ops[i];
        fprintf(f, "%s (%s): %s\n  baseline:", op->name, op->shape_fields, op->summary);
        for (int t = 0, sep = 0; t < KB_DTYPE_COUNT; ++t)
            if (op->baseline[t])
                fprintf(f, "%s %s %s", sep++ ? "," : "", kb_dtype_name((kb_dtype)t), op->baseline[t]);
        fputc('\n', f);
        for (const kb_family *fam = op->families; fam->name; ++fam)
            fprintf(f, "  family %s (%s%s%s%s): %s\n", fam->name, fam->axis ? "over " : "points",
                    fam->axis ? fam->axis : "", fam->quick_sizes ? ", quick: " : fam->quick ? ", quick" : "",
                    fam->quick_sizes ? fam->quick_sizes : "", fam->sizes);
        KB_FOR_EACH_VARIANT(op, v) {
            char needs[64];
            needs_text(v, needs, sizeof needs);
            fprintf(f, "  %-18s %-5s %-6s %-26s %s\n", v->name, kb_dtype_name(v->dtype),
                    kb_math_name(v->math), needs[0] ? needs : "-", v->summary);
        }
        size_t len = strlen(op->name);
        for (int j = 0; kb_unbuilt_variants[j].name; ++j)
            if (!strncmp(kb_unbuilt_variants[j].name, op->name, len) && kb_unbuilt_variants[j].name[len] == ' ')
                fprintf(f, "  %-18s %s\n", kb_unbuilt_variants[j].name + len + 1, kb_unbuilt_variants[j].why);
    }
    return 0;
}

/* The positional-encoding table, computed on the CPU in the kernels' fp32
 * arithmetic, six significant digits. */
int kb_cmd_pe(const kb_options *o)
{
    float *pe = malloc((size_t)o->seq_len * o->d_model * sizeof *pe);
    if (!pe) {
        fprintf(stderr, "kbench: out of memory for a %d x %d table\n", o->seq_len, o->d_model);
        return KB_EXIT_FAIL;
    }
    posenc_table_f32(o->seq_len, o->d_model, o->paper ? KB_POSENC_PAPER_SCALE : KB_POSENC_SEED_SCALE, pe);
    for (int pos = 0; pos < o->seq_len; ++pos) {
        for (int j = 0; j < o->d_model; ++j)
            printf(j + 1 < o->d_model ? "%-10.6g" : "%.6g", pe[(size_t)pos * o->d_model + j]);
        putchar('\n');
    }
    free(pe);
    return 0;
}

static void version_text(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

void kb_collect_meta(const kb_device_info *d, const kb_options *o, kb_meta_set *m)
{
    char rt[32], date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    version_text(d->runtime_version, rt, sizeof rt);
    m->n = 0;
    kb_meta_set_value(m, "gpu", "%s", d->name);
    kb_meta_set_value(m, "compute_capability", "%d.%d", d->cc_major, d->cc_minor);
    kb_meta_set_value(m, "sm_count", "%d", d->sm_count);
    kb_meta_set_value(m, "sm_clock_mhz", "%d", d->sm_clock_khz / 1000);
    kb_meta_set_value(m, "nvml", "%s", kb_nvml_status());
    if (kb_nvml_max_clock_mhz() > 0)
        kb_meta_set_value(m, "clock_flag_max_mhz", "%.0f", kb_nvml_max_clock_mhz());
    kb_meta_set_value(m, "mem_clock_mhz", "%d", d->mem_clock_khz / 1000);
    kb_meta_set_value(m, "mem_bus_width_bits", "%d", d->bus_width_bits);
    kb_meta_set_value(m, "l2_bytes", "%lld", (long long)d->l2_bytes);
    kb_meta_set_value(m, "global_mem_bytes", "%lld", (long long)d->global_mem_bytes);
    kb_meta_set_value(m, "driver", "%s", d->driver);
    kb_meta_set_value(m, "runtime", "%s", rt);
    kb_meta_set_value(m, "cublas", "%d.%d.%d", d->cublas_version / 10000, d->cublas_version / 100 % 100,
             d->cublas_version % 100);
    kb_meta_set_value(m, "git_commit", "%s", KB_GIT_COMMIT);
    if (kb_own_kernel_path()) {
        kb_meta_set_value(m, "own_kernel", "%s", kb_own_kernel_path());
        kb_meta_set_value(m, "own_kernel_fnv1a64", "%016llx", (unsigned long long)kb_own_kernel_hash());
    }
    kb_meta_set_value(m, "arch_flags", "%s", KB_ARCH_FLAGS);
    kb_meta_set_value(m, "date", "%s", date);
    kb_meta_set_value(m, "l2_mode", "%s", o->hot ? "hot (not flushed)" : "cold (flushed between samples)");
    kb_meta_set_value(m, "mode", "%s", o->check_only ? "check only" : "check and time");
    char rule[160];
    const kb_stop_rule stop = kb_options_stop_rule(o);
    kb_stop_rule_text(&stop, rule, sizeof rule);
    kb_meta_set_value(m, "stop_rule", "%s", rule);
    kb_meta_set_value(m, "energy", "%s",
                      !o->energy ? "over the timed samples, flushes included, where they lasted 1 s"
                      : o->sizes ? "a 1 s window of back-to-back launches after every row's samples"
                                 : "a 1 s window of back-to-back launches after the samples of each op's "
                                   "representative shape");
    /* baseline_<op> for the f32 rows, baseline_<dtype>_<op> for the others. */
    for (int i = 0; i < o->nops; ++i)
        for (int t = 0; t < KB_DTYPE_COUNT; ++t) {
            char key[64];
            if (!o->ops[i]->baseline[t])
                continue;
            if (t == KB_F32)
                snprintf(key, sizeof key, "baseline_%s", o->ops[i]->name);
            else
                snprintf(key, sizeof key, "baseline_%s_%s", kb_dtype_name((kb_dtype)t), o->ops[i]->name);
            kb_meta_set_value(m, key, "%s", o->ops[i]->baseline[t]);
        }
}

static const char *default_dir(const char *out_dir)
{
    return out_dir ? out_dir : "results";
}

/* <dir>/kbench-<timestamp>.csv; -1 with err set when the name does not fit. */
static int csv_in(const char *dir, char *path, size_t len, char *err, size_t errlen)
{
    char stamp[64], q[KB_QUOTE_LEN];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime(&now));
    int n = snprintf(path, len, "%s/kbench-%s.csv", dir, stamp);
    if (n >= 0 && (size_t)n < len)
        return 0;
    snprintf(err, errlen, "cannot write in %s: %s", kb_quote(dir, q, sizeof q), strerror(ENAMETOOLONG));
    return -1;
}

/* mkdir dir: 1 when it made it, 0 when it was there, -1 with err set. */
static int make_dir(const char *dir, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    if (mkdir(dir, 0777) == 0)
        return 1;
    if (errno == EEXIST)
        return 0;
    snprintf(err, errlen, "cannot create %s: %s", kb_quote(dir, q, sizeof q), strerror(errno));
    return -1;
}

int kb_default_csv_path(const char *out_dir, char *path, size_t len, char *err, size_t errlen)
{
    const char *dir = default_dir(out_dir);
    return make_dir(dir, err, errlen) < 0 ? -1 : csv_in(dir, path, len, err, errlen);
}

int kb_baseline_gpus(const char *base, const char *row)
{
    size_t n = strlen(base);
    return !strncmp(base, row, n) && (row[n] == '\0' || row[n] == '+');
}

void kb_fill_speedup(kb_result *rows, int n)
{
    kb_result *r = &rows[n - 1];
    if (!r->timed || r->status != KB_PASS)
        return;
    const char *base = kb_baseline_for(r->op, r->variant->dtype);
    if (!base)
        return;
    for (int i = n - 1; i >= 0; --i) {
        const kb_result *b = &rows[i];
        if (b->op == r->op && b->variant->dtype == r->variant->dtype && !strcmp(b->variant->name, base) &&
            kb_baseline_gpus(b->devices, r->devices) &&
            !memcmp(&b->shape, &r->shape, sizeof b->shape) && b->timed && b->status == KB_PASS) {
            r->speedup = b->time_ms.median / r->time_ms.median;
            return;
        }
    }
}

/* Flush buffer: twice the L2, so a memset between samples evicts everything. */
void *kb_alloc_flush(const kb_device_info *d, size_t *bytes)
{
    void *p = NULL;
    *bytes = (size_t)(d->l2_bytes > 0 ? 2 * d->l2_bytes : 128 << 20);
    if (cudaMalloc(&p, *bytes) != cudaSuccess)
        return NULL;
    return p;
}

static int sweep(const kb_job *jobs, int n, const kb_options *o, const char *csv,
                 kb_meta_set *meta, kb_ceilings *ceil, void *flush, size_t flush_bytes)
{
    kb_result *rows = calloc((size_t)n, sizeof *rows);
    int fails = 0, skips = 0;
    char err[512];
    const double t0 = omp_get_wtime();
    double csv_s = 0, last_write = t0;
    kb_table_header(stdout);
    for (int i = 0; i < n; ++i) {
        kb_run_job(&jobs[i], o, flush, flush_bytes, &rows[i]);
        kb_fill_speedup(rows, i + 1);
        kb_apply_ceilings(rows, i + 1, ceil, meta);
        fails += rows[i].status == KB_FAIL;
        skips += rows[i].status == KB_SKIP;
        kb_table_row(stdout, &rows[i], i + 1, n);
        const double w0 = omp_get_wtime();
        if (i + 1 < n && w0 - last_write < KB_CSV_EVERY_S)
            continue;
        const int written = kb_results_write(csv, o->format, meta->meta, meta->n, rows, i + 1, err, sizeof err);
        last_write = omp_get_wtime();
        csv_s += last_write - w0;
        if (written != 0) {
            fprintf(stderr, "kbench: %s\n", err);
            kb_run_release();
            free(rows);
            return KB_EXIT_FAIL;
        }
    }
    kb_run_release();
    printf("%d rows: %d passed, %d failed, %d skipped; wrote %s\n", n, n - fails - skips, fails,
           skips, csv);
    kb_run_phases(stdout, omp_get_wtime() - t0, csv_s);
    if (kb_own_kernel_path())
        kb_own_verdict(stdout, rows, n, kb_own_kernel_name(), kb_own_kernel_path());
    free(rows);
    return fails ? KB_EXIT_FAIL : 0;
}

/* The output is checked before the GPU is opened, so that a path that
 * cannot be written is bad input (exit 2) and not a failure after the work.
 * A folder the check had to create is removed again: a run refused or
 * failed before its first row leaves nothing behind. */
static int check_output(const kb_options *o, char *err, size_t errlen)
{
    if (o->csv_path)
        return kb_csv_check_output(o->csv_path, err, errlen);
    const char *dir = default_dir(o->out_dir);
    char probe[4096];
    int made = make_dir(dir, err, errlen);
    if (made < 0)
        return -1;
    int rc = csv_in(dir, probe, sizeof probe, err, errlen) != 0 ? -1 : kb_csv_check_output(probe, err, errlen);
    if (made)
        rmdir(dir);
    return rc;
}

/* kbench-<date>.csv becomes .md or .jsonl (csv_in left room unless the folder's name is ~4 KB). */
static void name_for_format(const kb_options *o, char *path, size_t len)
{
    if (!o->csv_path && o->format != KB_FORMAT_CSV && strlen(path) + 3 < len)
        strcpy(path + strlen(path) - 3, o->format == KB_FORMAT_MD ? "md" : "jsonl");
}

/* --devices: the GPUs resolved without CUDA in this process (the workers
 * are forked from it), the sweep expanded again when `all` gave the count
 * a distributed op's shapes take, then the sweep dealt to the GPUs. */
static int run_devices(const kb_options *o, kb_job *jobs, int n)
{
    char err[512], path[4096];
    kb_options run = *o;
    if (kb_resolve_devices(&run, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        free(jobs);
        return KB_EXIT_FAIL;
    }
    if (o->ndevices < 0) {
        free(jobs);
        if ((n = kb_expand_sweep(&run, &jobs, err, sizeof err)) < 0) {
            fprintf(stderr, "kbench: %s\n", err);
            return KB_EXIT_USAGE;
        }
    }
    if (!o->csv_path && kb_default_csv_path(o->out_dir, path, sizeof path, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        free(jobs);
        return KB_EXIT_FAIL;
    }
    name_for_format(o, path, sizeof path);
    int rc = kb_run_on_devices(&run, jobs, n, o->csv_path ? o->csv_path : path);
    free(jobs);
    return rc;
}

int kb_cmd_run(const kb_options *o)
{
    char err[512], path[4096];
    kb_job *jobs;
    /* Bad input is found before any GPU is asked about: `all` is expanded
     * as its largest count until the machine's is known. */
    kb_options first = *o;
    if (first.ndevices < 0)
        first.ndevices = KB_MAX_RANKS;
    int n = kb_expand_sweep(&first, &jobs, err, sizeof err);
    if (n < 0 || check_output(o, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        free(jobs);
        return KB_EXIT_USAGE;
    }
    if (kb_own_kernel_path())
        printf("own kernel %s (fnv1a64 %016llx): %s %s; --variant %s\n", kb_own_kernel_path(),
               (unsigned long long)kb_own_kernel_hash(), o->ops[0]->name, kb_own_kernel_name(), o->variant_pattern);
    if (o->ndevices)
        return run_devices(o, jobs, n);
    kb_device_info dev;
    const char *csv = o->csv_path ? o->csv_path : path;
    if (kb_gpu_open(o->device, &dev, err, sizeof err) != 0 ||
        (!o->csv_path && kb_default_csv_path(o->out_dir, path, sizeof path, err, sizeof err) != 0)) {
        fprintf(stderr, "kbench: %s\n", err);
        free(jobs);
        return KB_EXIT_FAIL;
    }
    name_for_format(o, path, sizeof path);
    kb_set_run_devices(&o->device, 1);
    /* The first cases' inputs and references are made while the flush
     * buffer, the metadata and the ceilings are. */
    kb_run_plan(jobs, n);
    size_t flush_bytes;
    void *flush = kb_alloc_flush(&dev, &flush_bytes);
    if (!flush) {
        fprintf(stderr, "kbench: out of device memory for the L2 flush buffer\n");
        kb_run_release();
        free(jobs);
        return KB_EXIT_FAIL;
    }
    kb_meta_set meta;
    kb_ceilings ceil;
    kb_collect_meta(&dev, o, &meta);
    if (o->ceilings) {
        printf("measuring ceilings...\n");
        kb_measure_ceilings(&dev, flush, flush_bytes, &ceil);
    } else
        kb_datasheet_ceilings(&dev, &ceil);
    printf("kbench on %s (sm_%d%d, %d SMs), %d rows -> %s\n", dev.name, dev.cc_major, dev.cc_minor,
           dev.sm_count, n, csv);
    int rc = sweep(jobs, n, o, csv, &meta, &ceil, flush, flush_bytes);
    cudaFree(flush);
    free(jobs);
    return rc;
}
