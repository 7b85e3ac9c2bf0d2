/* kbench run --devices: one sweep over several GPUs.  CUDA is not
 * fork-safe, so this process touches no CUDA before it forks: a short-lived
 * child counts the GPUs (through NVML where it can), one worker process per
 * GPU runs the rows dealt to it, then takes rows not yet begun from the
 * others, and leaves each finished row in memory shared with this process,
 * which writes the CSV from them.  Rows that span GPUs (collectives,
 * tensor-parallel variants) run here afterwards, once every worker is through;
 * a thread of this process opens what they need while the workers run.
 *
 * This file is that parent process: it forks the workers, watches them,
 * gathers their rows and metadata into the CSV and runs the rows across
 * GPUs.  workers_plan.c counts the GPUs and deals the rows, workers_child.c
 * is a worker's life, and workers.h is what the three share. */
#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness/case.h"
#include "harness/workers.h"
#include "kernels/lt_gemm.h"
#ifdef KB_HAVE_NCCL
#include "kernels/nccl_comm.h"
#endif

#define POLL_S 0.05        /* how often finished rows and workers are looked for */
#define BUSY_S 0.5         /* a GPU whose worker ran rows this recently is still at its working clocks */

/* The rows across GPUs, and what they need open before their first case. */
typedef struct {
    kb_job *list;
    int m;                     /* the rows this run has the GPUs for */
    void *flush;               /* on the first GPU; NULL when the GPUs could not be opened */
    size_t flush_bytes;
    char why[512];             /* why not, when flush is NULL */
    pthread_t thread;
    int started;
} across_setup;

typedef struct {
    const kb_options *o;
    plan p;
    shared_state *sh;
    size_t sh_bytes;
    const char *csv;
    kb_result *rows, *scratch; /* every output row (valid where done); room to gather one GPU's */
    char *done;
    pid_t pid[KB_MAX_RANKS];
    int exited[KB_MAX_RANKS], status[KB_MAX_RANKS];
    double first_through_s;    /* when the first worker was seen to be through with its rows */
    int lost;                  /* a worker left rows undone */
    kb_ceilings ceil[KB_MAX_RANKS]; /* a copy of each worker's, raised by its copy rows */
    int have_ceil[KB_MAX_RANKS];
    int meta_from;             /* the worker whose metadata heads the file; -1 until known */
    kb_meta_set meta, unused;  /* unused: what kb_apply_ceilings writes for the other GPUs */
    char gpu_text[KB_MAX_RANKS][16], across_text[32], list_text[32]; /* "1"; "0+1"; "0,1" */
    double csv_s;
    across_setup ac;
} gather;

static int ready(const gather *g, int w)
{
    return __atomic_load_n(&g->sh->worker[w].ready, __ATOMIC_ACQUIRE);
}

/* The first GPU's metadata heads the file; should its worker fail to open
 * it, the next GPU's. */
static int meta_source(const gather *g)
{
    for (int w = 0; w < g->p.ndev; ++w) {
        if (ready(g, w))
            return w;
        if (!g->exited[w])
            return -1;
    }
    return -1;
}

/* Copy rows the workers finished since the last call; how many. */
static int collect(gather *g)
{
    int fresh = 0;
    for (int r = 0; r < g->p.nrows; ++r)
        if (!g->done[r] && __atomic_load_n(&g->sh->rows[r].done, __ATOMIC_ACQUIRE)) {
            g->rows[r] = g->sh->rows[r].row;
            g->p.row_worker[r] = g->sh->rows[r].by;
            g->done[r] = 1;
            ++fresh;
        }
    return fresh;
}

static void adopt_meta(gather *g, int w)
{
    const kb_meta_set *m = &g->sh->worker[w].meta;
    g->meta_from = w;
    g->meta.n = 0;
    for (int i = 0; i < m->n && i < (int)(sizeof m->meta / sizeof *m->meta); ++i)
        kb_meta_set_value(&g->meta, m->keys[i], "%.*s", (int)sizeof m->text[i] - 1, m->text[i]);
}

/* One GPU's line: name, PCI bus id, SMs and every ceiling it has, under
 * the names of the first GPU's own lines, so `kbench derive` reads both alike. */
static void device_line(gather *g, int w)
{
    static const struct {
        const char *name;
        size_t at;
    } fields[] = {{"ceiling_mem_gb_s", offsetof(kb_ceilings, mem_gb_s)},
                  {"ceiling_l2_gb_s", offsetof(kb_ceilings, l2_gb_s)},
                  {"ceiling_fp32_gflop_s", offsetof(kb_ceilings, fp32_gflop_s)},
                  {"ceiling_tc_gflop_s", offsetof(kb_ceilings, tc_gflop_s)},
                  {"ceiling_fp8_gflop_s", offsetof(kb_ceilings, fp8_gflop_s)},
                  {"ceiling_read_gb_s", offsetof(kb_ceilings, read_gb_s)},
                  {"ceiling_write_gb_s", offsetof(kb_ceilings, write_gb_s)},
                  {"ceiling_fp32_clock_mhz", offsetof(kb_ceilings, fp32_clock_mhz)},
                  {"ceiling_tc_clock_mhz", offsetof(kb_ceilings, tc_clock_mhz)},
                  {"datasheet_mem_gb_s", offsetof(kb_ceilings, ds_mem_gb_s)},
                  {"datasheet_fp32_gflop_s", offsetof(kb_ceilings, ds_fp32_gflop_s)},
                  {"datasheet_tc_gflop_s", offsetof(kb_ceilings, ds_tc_gflop_s)}};
    const worker_slot *s = &g->sh->worker[w];
    char key[32], text[320];
    snprintf(key, sizeof key, "device_%d", g->p.dev[w]);
    if (!ready(g, w)) {
        if (g->exited[w])
            kb_meta_set_value(&g->meta, key, "not used: %.*s", (int)sizeof s->why - 1,
                              s->why[0] ? s->why : "its worker ended before opening it");
        return;
    }
    size_t used = (size_t)snprintf(text, sizeof text, "%s; pci_bus_id %s; sm_count %d", s->info.name,
                                   s->info.pci_bus_id, s->info.sm_count);
    for (size_t i = 0; i < sizeof fields / sizeof *fields && used < sizeof text; ++i) {
        double v = *(const double *)((const char *)&g->ceil[w] + fields[i].at);
        if (v > 0)
            used += (size_t)snprintf(text + used, sizeof text - used, "; %s %.1f", fields[i].name, v);
    }
    kb_meta_set_value(&g->meta, key, "%s", text);
}

/* Each GPU's rows against its own ceilings; rows across GPUs against the
 * first GPU's, whose are the file's own ceiling lines. */
static void apply_ceilings(gather *g)
{
    for (int w = 0; w < g->p.ndev; ++w) {
        if (!ready(g, w))
            continue;
        if (!g->have_ceil[w]) {
            g->ceil[w] = g->sh->worker[w].ceil;
            g->have_ceil[w] = 1;
        }
        int m = 0;
        for (int r = 0; r < g->p.nrows; ++r)
            if (g->done[r] && (g->p.row_worker[r] == w || (g->p.row_worker[r] == ACROSS && w == g->meta_from)))
                g->scratch[m++] = g->rows[r];
        kb_apply_ceilings(g->scratch, m, &g->ceil[w], w == g->meta_from ? &g->meta : &g->unused);
        m = 0;
        for (int r = 0; r < g->p.nrows; ++r)
            if (g->done[r] && (g->p.row_worker[r] == w || (g->p.row_worker[r] == ACROSS && w == g->meta_from)))
                g->rows[r] = g->scratch[m++];
        g->unused.n = 0;
    }
}

/* The finished rows in sweep order, with the metadata; nothing while the
 * metadata is not known (g->meta_from < 0).  0, or -1 with err set. */
static int write_rows(gather *g, char *err, size_t errlen)
{
    const double t0 = omp_get_wtime();
    if (g->meta_from < 0) {
        int w = meta_source(g);
        if (w < 0)
            return 0;
        adopt_meta(g, w);
    }
    apply_ceilings(g);
    kb_meta_set_value(&g->meta, "devices", "%s", g->list_text);
    for (int w = 0; w < g->p.ndev; ++w)
        device_line(g, w);
    int n = 0;
    for (int r = 0; r < g->p.nrows; ++r)
        if (g->done[r])
            g->scratch[n++] = g->rows[r];
    int rc = kb_results_write(g->csv, g->o->format, g->meta.meta, g->meta.n, g->scratch, n, err, errlen);
    g->csv_s += omp_get_wtime() - t0;
    return rc;
}

static void skip_row(const gather *g, int r, const char *devices, const char *why)
{
    const kb_job *job = &g->p.jobs[g->p.row_job[r]];
    kb_result *x = &g->rows[r];
    memset(x, 0, sizeof *x);
    x->op = job->op;
    x->variant = job->variant;
    x->shape = job->shape;
    x->hot = g->o->hot;
    x->flops = job->op->flops(&job->shape);
    x->bytes = kb_op_bytes(job->op, &job->shape, job->variant->dtype);
    x->status = KB_SKIP;
    snprintf(x->reason, sizeof x->reason, "%s", why);
    snprintf(x->devices, sizeof x->devices, "%s", devices);
}

/* Why worker w left rows undone. */
static void worker_end(const gather *g, int w, char *buf, size_t len)
{
    const int st = g->status[w], dev = g->p.dev[w];
    const char *why = g->sh->worker[w].why;
    if (why[0])
        snprintf(buf, len, "GPU %d: %.*s", dev, (int)sizeof g->sh->worker[w].why - 1, why);
    else if (WIFSIGNALED(st))
        snprintf(buf, len, "GPU %d's worker died of signal %d (%s) before this row", dev, WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    else
        snprintf(buf, len, "GPU %d's worker exited with status %d before this row", dev, WEXITSTATUS(st));
}

/* Every row a worker left undone becomes a SKIP row saying why. */
static void skip_undone(gather *g)
{
    char why[320]; /* skip_row cuts it to a reason's length */
    for (int r = 0; r < g->p.nrows; ++r) {
        int w = g->p.row_worker[r];
        if (g->done[r] || w == ACROSS)
            continue;
        if (claimed(g->sh, &g->p, g->p.group_of[g->p.row_job[r]]))
            w = claimed(g->sh, &g->p, g->p.group_of[g->p.row_job[r]]) - 1; /* the one that took it died */
        worker_end(g, w, why, sizeof why);
        skip_row(g, r, g->gpu_text[w], why);
        g->done[r] = 1;
        g->lost = 1;
        kb_table_row(stdout, &g->rows[r], r + 1, g->p.nrows);
    }
}

static void start_workers(gather *g)
{
    pid_t parent = getpid();
    fflush(stdout);
    fflush(stderr);
    for (int w = 0; w < g->p.ndev; ++w) {
        g->pid[w] = fork();
        if (g->pid[w] == 0)
            kb_worker_main(g->o, &g->p, w, g->sh, parent);
        if (g->pid[w] < 0) {
            snprintf(g->sh->worker[w].why, sizeof g->sh->worker[w].why, "cannot start its worker: %s",
                     strerror(errno));
            g->exited[w] = 1;
        }
    }
}

static void reap_workers(gather *g)
{
    for (int w = 0; w < g->p.ndev; ++w) {
        while (!g->exited[w] && g->pid[w] > 0 && waitpid(g->pid[w], &g->status[w], 0) < 0 && errno == EINTR)
            ;
        g->exited[w] = 1;
    }
}

static void stop_workers(gather *g)
{
    for (int w = 0; w < g->p.ndev; ++w)
        if (!g->exited[w])
            kill(g->pid[w], SIGTERM);
    reap_workers(g);
}

/* Whether worker w runs no more rows: it exited, or it is only closing its
 * GPU, which this process need not wait for. */
static int through(const gather *g, int w)
{
    return g->exited[w] || __atomic_load_n(&g->sh->worker[w].finished, __ATOMIC_ACQUIRE);
}

/* The GPUs opened in this process, the flush buffer, peer access and,
 * when a row uses it, NCCL's communicators: some 2 s, made here while the
 * workers run instead of after their last row.  The workers are forked by
 * then, so this process may touch CUDA. */
static void *open_across(void *arg)
{
    gather *g = arg;
    across_setup *a = &g->ac;
    kb_device_info d;
    if (!(a->flush = kb_gpu_open_flush(g->p.dev[0], &d, &a->flush_bytes, a->why, sizeof a->why)))
        return NULL;
    kb_set_run_devices(g->p.dev, g->p.ndev);
    unsigned needs = 0;
    for (int j = 0; j < a->m; ++j)
        needs |= a->list[j].variant->needs;
    /* Failures here are the rows' to report: each asks again and gets the
     * same reason (peer access and the communicators are made once). */
    for (int w = 1; w < g->p.ndev; ++w)
        if (cudaSetDevice(g->p.dev[w]) == cudaSuccess)
            cudaFree(NULL);
    /* cuBLASLt's first handles and heuristics, which the first
     * tensor-parallel row paid; they need no kernel, so they come here. */
    for (int w = 0; w < g->p.ndev && (needs & KB_NEEDS_CUBLAS); ++w)
        if (cudaSetDevice(g->p.dev[w]) == cudaSuccess)
            kb_lt_warm();
    kb_enable_peers();
#ifdef KB_HAVE_NCCL /* a build without NCCL has no variant that needs it */
    ncclComm_t *comms;
    if (needs & KB_NEEDS_NCCL)
        kb_nccl_comms(&comms);
#endif
    cudaGetLastError();
    /* Their first cases are made while the workers finish, on this
     * process's share of the cores. */
    kb_case_share_host(g->p.ndev);
    kb_run_plan(a->list, a->m);
    return NULL;
}

/* Once every worker has measured its ceilings (or is gone), so that the
 * setup cannot disturb them; without the thread, run_across does it. */
static void start_across(gather *g)
{
    across_setup *a = &g->ac;
    char few[512];
    if (a->started || a->list)
        return;
    for (int w = 0; w < g->p.ndev; ++w)
        if (!g->exited[w] && !ready(g, w))
            return;
    a->list = kb_zalloc(g->p.njobs, sizeof *a->list);
    for (int j = 0; j < g->p.njobs; ++j)
        if (g->p.worker[j] == ACROSS && !kb_job_too_few_gpus(&g->p.jobs[j], g->p.ndev, few, sizeof few))
            a->list[a->m++] = g->p.jobs[j];
    if (a->m)
        a->started = pthread_create(&a->thread, NULL, open_across, g) == 0;
}

static void join_across(gather *g)
{
    if (g->ac.started)
        pthread_join(g->ac.thread, NULL);
    g->ac.started = 0;
}

/* Until every worker is through: their rows into the CSV every
 * KB_CSV_EVERY_S, so an interrupted sweep leaves a complete file of the
 * rows done.  0, or -1 with err set when the CSV cannot be written. */
static int watch_workers(gather *g, char *err, size_t errlen)
{
    const struct timespec nap = {0, (long)(POLL_S * 1e9)};
    double last_write = 0;
    int running = 1, unwritten = 0;
    while (running > 0) {
        running = 0;
        for (int w = 0; w < g->p.ndev; ++w) {
            pid_t got = g->exited[w] ? 0 : waitpid(g->pid[w], &g->status[w], WNOHANG);
            if (got == g->pid[w] || (got < 0 && errno != EINTR))
                g->exited[w] = 1;
            if (!through(g, w))
                ++running;
            else if (!g->first_through_s)
                g->first_through_s = omp_get_wtime();
        }
        start_across(g);
        unwritten += collect(g);
        if (unwritten && omp_get_wtime() - last_write >= KB_CSV_EVERY_S) {
            if (write_rows(g, err, errlen) != 0) {
                stop_workers(g);
                return -1;
            }
            if (g->meta_from >= 0) {
                last_write = omp_get_wtime();
                unwritten = 0;
            }
        }
        if (running > 0)
            nanosleep(&nap, NULL);
    }
    start_across(g);
    return 0;
}

/* The groups that span GPUs, here, on every GPU of the run, with the
 * one-GPU sweep's per-row code; the CSV is rewritten every KB_CSV_EVERY_S
 * as while the workers run (the caller writes the last rows). */
static int run_across(gather *g, char *err, size_t errlen)
{
    across_setup *a = &g->ac;
    int rc = 0;
    double last_write = omp_get_wtime();
    char few[512];
    if (a->started)
        join_across(g);
    else if (a->m) /* no thread could be started */
        open_across(g);
    if (a->flush)
        cudaSetDevice(g->p.dev[0]); /* the current GPU is the thread's own */
    /* The workers kept every GPU busy until just now: no warm-up from idle. */
    int all_ran = 1;
    for (int w = 0; w < g->p.ndev; ++w)
        all_ran &= ready(g, w);
    if (all_ran && omp_get_wtime() - g->first_through_s < BUSY_S)
        kb_run_gpus_busy();
    for (int j = 0; j < g->p.njobs && rc == 0; ++j) {
        const int r = g->p.first[j];
        if (g->p.worker[j] != ACROSS)
            continue;
        const char *too_few = kb_job_too_few_gpus(&g->p.jobs[j], g->p.ndev, few, sizeof few);
        const int ran = a->flush && !too_few;
        if (ran) {
            kb_run_job(&g->p.jobs[j], g->o, a->flush, a->flush_bytes, &g->rows[r]);
            kb_fill_speedup(g->rows, r + 1);
        } else
            skip_row(g, r, g->across_text, too_few ? too_few : a->why);
        g->done[r] = 1;
        kb_table_row(stdout, &g->rows[r], r + 1, g->p.nrows);
        if (ran && omp_get_wtime() - last_write >= KB_CSV_EVERY_S) {
            rc = write_rows(g, err, errlen);
            last_write = omp_get_wtime();
        }
    }
    if (a->flush) {
        kb_run_release();
        cudaError_t e = cudaFree(a->flush);
        if (e != cudaSuccess && rc == 0) {
            snprintf(err, errlen, "GPU %d: %s", g->p.dev[0], cudaGetErrorString(e));
            rc = -1;
        }
    }
    return rc;
}

static void summarize(const gather *g, double workers_s, double across_s, double total_s)
{
    int fails = 0, skips = 0;
    for (int r = 0; r < g->p.nrows; ++r) {
        fails += g->rows[r].status == KB_FAIL;
        skips += g->rows[r].status == KB_SKIP;
    }
    printf("%d rows: %d passed, %d failed, %d skipped; wrote %s\n", g->p.nrows, g->p.nrows - fails - skips, fails,
           skips, g->csv);
    printf("time: workers on %d GPUs %.1f s, rows across GPUs %.1f s, CSV writes %.1f s; total %.1f s\n", g->p.ndev,
           workers_s, across_s, g->csv_s, total_s);
}

static int any_failed(const gather *g)
{
    for (int r = 0; r < g->p.nrows; ++r)
        if (g->rows[r].status == KB_FAIL)
            return 1;
    return 0;
}

static gather *gather_new(const kb_options *o, const kb_job *jobs, int n, const char *csv)
{
    gather *g = kb_zalloc(1, sizeof *g);
    g->o = o;
    g->csv = csv;
    g->meta_from = -1;
    kb_plan_make(o, jobs, n, &g->p);
    g->rows = kb_zalloc(g->p.nrows, sizeof *g->rows);
    g->scratch = kb_zalloc(g->p.nrows, sizeof *g->scratch);
    g->done = kb_zalloc(g->p.nrows, 1);
    for (int w = 0; w < g->p.ndev; ++w)
        snprintf(g->gpu_text[w], sizeof g->gpu_text[w], "%d", g->p.dev[w]);
    for (int w = 0; w < g->p.ndev; ++w) {
        snprintf(g->across_text + strlen(g->across_text), sizeof g->across_text - strlen(g->across_text), "%s%d",
                 w ? "+" : "", g->p.dev[w]);
        snprintf(g->list_text + strlen(g->list_text), sizeof g->list_text - strlen(g->list_text), "%s%d",
                 w ? "," : "", g->p.dev[w]);
    }
    g->sh_bytes = offsetof(shared_state, rows) + (size_t)g->p.nrows * sizeof(shared_row) +
                  (size_t)g->p.ngroups * sizeof(int);
    g->sh = mmap(NULL, g->sh_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return g;
}

static void gather_free(gather *g)
{
    join_across(g); /* a run that failed before its rows across GPUs may still be opening them */
    reap_workers(g);
    free(g->ac.list);
    if (g->sh != MAP_FAILED)
        munmap(g->sh, g->sh_bytes);
    kb_plan_free(&g->p);
    free(g->rows);
    free(g->scratch);
    free(g->done);
    free(g);
}

int kb_run_on_devices(const kb_options *o, const kb_job *jobs, int n, const char *csv)
{
    char err[512];
    gather *g = gather_new(o, jobs, n, csv);
    if (g->sh == MAP_FAILED) {
        fprintf(stderr, "kbench: cannot share memory with the workers: %s\n", strerror(errno));
        gather_free(g);
        return KB_EXIT_FAIL;
    }
    int across = 0;
    for (int j = 0; j < n; ++j)
        across += g->p.worker[j] == ACROSS;
    printf("kbench on GPUs %s (a worker each%s), %d rows, %d across the GPUs -> %s\n", g->list_text,
           o->replicate ? ", every row on each" : "", g->p.nrows, across, csv);
    kb_table_header(stdout);
    const double t0 = omp_get_wtime();
    start_workers(g);
    int rc = watch_workers(g, err, sizeof err);
    const double t1 = omp_get_wtime();
    if (rc == 0) {
        skip_undone(g);
        if (meta_source(g) < 0) {
            snprintf(err, sizeof err, "no GPU of --devices could be used; nothing written");
            rc = -1;
        }
    }
    if (rc == 0)
        rc = run_across(g, err, sizeof err);
    const double t2 = omp_get_wtime();
    if (rc == 0)
        rc = write_rows(g, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        gather_free(g);
        return KB_EXIT_FAIL;
    }
    summarize(g, t1 - t0, t2 - t1, omp_get_wtime() - t0);
    if (across)
        kb_print_phases("rows across GPUs", t2 - t1, 0);
    rc = any_failed(g) || g->lost ? KB_EXIT_FAIL : 0;
    gather_free(g);
    return rc;
}
