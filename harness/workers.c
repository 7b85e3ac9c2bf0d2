/* kbench run --devices: one sweep over several GPUs.  CUDA is not
 * fork-safe, so this process touches no CUDA before it forks: a short-lived
 * child counts the GPUs (through NVML where it can), one worker process per
 * GPU runs the rows dealt to it, then takes rows not yet begun from the
 * others, and leaves each finished row in memory shared with this process,
 * which writes the CSV from them.  Rows that span GPUs (collectives,
 * tensor-parallel variants) run here afterwards, once every worker is through;
 * a thread of this process opens what they need while the workers run. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "harness/case.h"
#include "harness/csv_read.h"
#include "harness/harness.h"
#include "kernels/lt_gemm.h"
#include "kernels/nccl_comm.h"

#define POLL_S 0.05        /* how often finished rows and workers are looked for */
#define BUSY_S 0.5         /* a GPU whose worker ran rows this recently is still at its working clocks */

/* n zeroed items (at least one, so n may be 0); out of memory ends the run. */
static void *alloc(int n, size_t size)
{
    return kb_must(calloc(n > 0 ? (size_t)n : 1, size));
}

/* ---- the machine's GPUs, counted in a child ---- */

typedef struct {
    int count;
    char why[256];  /* set when CUDA found no device */
} probe_answer;

/* NVML's count where it is CUDA's, else CUDA's, whose cuInit alone takes
 * 0.3-0.45 s on an H100 node.  The wording is kb_gpu_open's, so a machine
 * without a GPU reads the same whichever way the run was asked for. */
static void probe(int fd)
{
    probe_answer a = {0};
    cudaError_t e = cudaSuccess;
    if ((a.count = kb_nvml_gpu_count()) < 0)
        e = cudaGetDeviceCount(&a.count);
    if (e != cudaSuccess || a.count == 0)
        snprintf(a.why, sizeof a.why, "no CUDA device found: %s%s",
                 e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver; the runtime says: " : "",
                 e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports zero devices");
    ssize_t put = write(fd, &a, sizeof a);
    _exit(put == (ssize_t)sizeof a ? 0 : 1);
}

/* The device count; -1 with err set when there is none or the child failed. */
static int count_devices(char *err, size_t errlen)
{
    int fd[2], status;
    probe_answer a;
    if (pipe(fd) != 0) {
        snprintf(err, errlen, "cannot count the GPUs: %s", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        probe(fd[1]);
    }
    close(fd[1]);
    ssize_t got = pid < 0 ? -1 : read(fd[0], &a, sizeof a);
    int saved = errno;
    close(fd[0]);
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    if (got != (ssize_t)sizeof a) {
        snprintf(err, errlen, "cannot count the GPUs: %s", got < 0 ? strerror(saved) : "the CUDA probe died");
        return -1;
    }
    a.why[sizeof a.why - 1] = '\0';
    if (a.why[0]) {
        snprintf(err, errlen, "%s", a.why);
        return -1;
    }
    return a.count;
}

int kb_resolve_devices(kb_options *o, char *err, size_t errlen)
{
    int count = count_devices(err, errlen);
    if (count < 0)
        return -1;
    if (o->ndevices < 0) {
        o->ndevices = count < KB_MAX_RANKS ? count : KB_MAX_RANKS;
        for (int i = 0; i < o->ndevices; ++i)
            o->devices[i] = i;
    }
    for (int i = 0; i < o->ndevices; ++i)
        if (o->devices[i] >= count) {
            snprintf(err, errlen, "no CUDA device %d: this machine has %d", o->devices[i], count);
            return -1;
        }
    return 0;
}

/* ---- dealing the rows ---- */

enum { ACROSS = -1, EVERY = -2 }; /* a job's worker: this process after the workers; all of them */

typedef struct {
    int first, n;
    double cost;
    int pinned;       /* has rows across GPUs: the rest stay with the first GPU's worker */
} group;

typedef struct {
    const kb_job *jobs;
    int njobs, ndev;
    const int *dev;   /* each worker's GPU */
    int *worker;      /* per job: its worker, ACROSS or EVERY (--replicate) */
    int *first;       /* per job: its first output row (EVERY: one a worker, in worker order) */
    int *row_job, *row_worker; /* per output row; row_worker: dealt, then who ran it */
    int nrows, replicate;
    group *groups;    /* in sweep order */
    int ngroups, *group_of; /* per job */
    int *order[KB_MAX_RANKS], norder[KB_MAX_RANKS]; /* the groups dealt to each worker, dearest first */
} plan;

/* A group is the consecutive jobs of one op and shape, so that a row's
 * baseline runs on its GPU: the sweep puts each shape's baselines first,
 * but a case (kb_case_same) is narrower, one dtype and set of quirks, and
 * cuDNN's softmax baseline has a case of its own.  (A group's rows across
 * GPUs run in this process, its others on the first GPU's worker: deal.) */
static int same_group(const kb_job *a, const kb_job *b)
{
    return a->op == b->op && !memcmp(&a->shape, &b->shape, sizeof a->shape);
}

/* A group's cost in rough seconds, only ever compared with another's:
 * ROW_S a row (setup, checks), and for a timed row SAMPLES launches at its
 * roofline time, max(flops / FLOP_S, bytes / BYTE_S), each after an L2
 * flush of FLUSH_S, at most --max-time, a third more for the warm-up and
 * NVML readings; and once a group its tensors' allocation and upload and
 * the inputs not made in time, some 0.5 s a GB of its first row's bytes.
 * Fitted to an H200's --quick sweep: the timed launches are the bulk of the
 * large groups, the upload of the small ones. */
#define ROW_S 0.01
#define SAMPLES 20
#define FLOP_S 5e13
#define BYTE_S 2e12
#define FLUSH_S 5e-5
#define TIMING_OVERHEAD 1.3
#define UPLOAD_BYTES_S 2e9
static double group_cost(const kb_options *o, const kb_job *g, int n)
{
    double s = kb_op_bytes(g->op, &g->shape, g->variant->dtype) / UPLOAD_BYTES_S;
    for (int i = 0; i < n; ++i) {
        const kb_job *j = &g[i];
        double launch = fmax(j->op->flops(&j->shape) / FLOP_S, kb_op_bytes(j->op, &j->shape, j->variant->dtype) / BYTE_S);
        s += ROW_S + (o->check_only ? 0 : TIMING_OVERHEAD * fmin(o->row_cap_s, SAMPLES * (launch + FLUSH_S)));
    }
    return s;
}

/* Groups in sweep order into p->groups, and each job's group. */
static void find_groups(const kb_options *o, plan *p)
{
    p->groups = alloc(p->njobs, sizeof *p->groups);
    p->group_of = alloc(p->njobs, sizeof *p->group_of);
    for (int i = 0; i < p->njobs; ++i) {
        if (i == 0 || !same_group(&p->jobs[i - 1], &p->jobs[i]))
            p->groups[p->ngroups++] = (group){i, 0, 0};
        p->groups[p->ngroups - 1].n++;
        p->group_of[i] = p->ngroups - 1;
    }
    for (int k = 0; k < p->ngroups; ++k)
        p->groups[k].cost = group_cost(o, &p->jobs[p->groups[k].first], p->groups[k].n);
}

/* Group indices, dearest first; equal costs in sweep order, so a deal is reproducible. */
static const group *sort_groups;
static int by_cost(const void *pa, const void *pb)
{
    const group *a = &sort_groups[*(const int *)pa], *b = &sort_groups[*(const int *)pb];
    if (a->cost != b->cost)
        return a->cost < b->cost ? 1 : -1;
    return a->first - b->first;
}

static int has_across(const kb_job *jobs, const group *g)
{
    for (int i = g->first; i < g->first + g->n; ++i)
        if (kb_job_multi_device(&jobs[i]))
            return 1;
    return 0;
}

/* Longest processing time first: each group, dearest first, to the worker
 * with the least work so far, which runs its groups in that order.  The
 * deal is only a start: a worker that runs out takes the cheapest groups
 * not yet begun from the worker with the most left (next_stolen), since the
 * costs are guesses.  Each worker knows its list, so it can make its next
 * inputs while it times (kb_run_plan). */
static void deal(const kb_options *o, plan *p)
{
    find_groups(o, p);
    int *sorted = alloc(p->ngroups, sizeof *sorted);
    double load[KB_MAX_RANKS] = {0};
    for (int k = 0; k < p->ngroups; ++k)
        sorted[k] = k;
    sort_groups = p->groups;
    qsort(sorted, (size_t)p->ngroups, sizeof *sorted, by_cost);
    for (int w = 0; w < p->ndev; ++w)
        p->order[w] = alloc(p->ngroups, sizeof(int));
    for (int s = 0; s < p->ngroups; ++s) {
        group *g = &p->groups[sorted[s]];
        /* A group with rows across GPUs: those run here after the workers,
         * the rest (their baseline among them) on the worker of the first
         * GPU, the one their speedups are over, and no other takes them. */
        g->pinned = has_across(p->jobs, g);
        int w = o->replicate ? EVERY : 0, dealt = 0;
        if (w == 0 && !g->pinned)
            for (int i = 1; i < p->ndev; ++i)
                if (load[i] < load[w])
                    w = i;
        for (int i = g->first; i < g->first + g->n; ++i) {
            p->worker[i] = kb_job_multi_device(&p->jobs[i]) ? ACROSS : w;
            dealt += p->worker[i] == w;
        }
        if (w >= 0 && dealt) {
            load[w] += g->cost;
            p->order[w][p->norder[w]++] = sorted[s];
        }
    }
    free(sorted);
}

static void make_plan(const kb_options *o, const kb_job *jobs, int n, plan *p)
{
    *p = (plan){jobs, n, o->ndevices, o->devices, alloc(n, sizeof(int)), alloc(n, sizeof(int)),
                NULL, NULL, 0, o->replicate};
    deal(o, p);
    for (int j = 0; j < n; ++j) {
        p->first[j] = p->nrows;
        p->nrows += p->worker[j] == EVERY ? p->ndev : 1;
    }
    p->row_job = alloc(p->nrows, sizeof(int));
    p->row_worker = alloc(p->nrows, sizeof(int));
    for (int j = 0; j < n; ++j)
        for (int k = 0; k < (p->worker[j] == EVERY ? p->ndev : 1); ++k) {
            p->row_job[p->first[j] + k] = j;
            p->row_worker[p->first[j] + k] = p->worker[j] == EVERY ? k : p->worker[j];
        }
}

static void free_plan(plan *p)
{
    for (int w = 0; w < p->ndev; ++w)
        free(p->order[w]);
    free(p->groups);
    free(p->group_of);
    free(p->worker);
    free(p->first);
    free(p->row_job);
    free(p->row_worker);
}

/* ---- memory shared with the workers ----
 * Made before the forks, so it lies at the same address in every process
 * and the op and variant pointers in a row (one binary) stay valid.  A
 * worker fills a row, then sets its done flag with release order; this
 * process reads the flag with acquire order before the row. */
typedef struct {
    int ready;          /* info, ceil and meta are set */
    int finished;       /* its rows are done; it is only closing its GPU */
    char why[256];      /* why the GPU could not be used, when it could not */
    kb_device_info info;
    kb_ceilings ceil;   /* measured with --ceilings, else the datasheet's */
    kb_meta_set meta;   /* kb_collect_meta of this GPU */
} worker_slot;

typedef struct {
    int done;
    int by;             /* the worker that ran it */
    kb_result row;
} shared_row;

/* After the rows, one claim per group: 0 while no worker has begun it,
 * then 1 + the worker that took it, set once by compare-and-swap. */
typedef struct {
    worker_slot worker[KB_MAX_RANKS];
    shared_row rows[];
} shared_state;

static int *claims(shared_state *sh, const plan *p) { return (int *)&sh->rows[p->nrows]; }

static int claimed(shared_state *sh, const plan *p, int k)
{
    return __atomic_load_n(&claims(sh, p)[k], __ATOMIC_ACQUIRE);
}

static int claim(shared_state *sh, const plan *p, int k, int w)
{
    int none = 0;
    return __atomic_compare_exchange_n(&claims(sh, p)[k], &none, w + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* ---- a worker ---- */

/* kb_run_phases' lines, each after "<prefix>: ", so that the workers' lines
 * tell apart. */
static void print_phases(const char *prefix, double total_s, double csv_s)
{
    char *text = NULL, *save = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    kb_run_phases(f, total_s, csv_s);
    if (fclose(f) == 0)
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            printf("%s: %s\n", prefix, line);
    free(text);
}

/* Group k's jobs that a worker runs (not those across GPUs), appended at
 * list + m with their output rows (for worker w); the new count. */
static int group_jobs(const plan *p, int k, int w, kb_job *list, int *at, int m)
{
    const group *g = &p->groups[k];
    for (int j = g->first; j < g->first + g->n; ++j)
        if (p->worker[j] != ACROSS) {
            list[m] = p->jobs[j];
            at[m++] = p->first[j] + (p->worker[j] == EVERY ? w : 0);
        }
    return m;
}

/* The jobs worker w starts with: its groups, dearest first, or with
 * --replicate every job in sweep order. */
static int jobs_of(const plan *p, int w, kb_job *mine, int *at)
{
    int m = 0;
    for (int k = 0; p->replicate && k < p->ngroups; ++k)
        m = group_jobs(p, k, w, mine, at, m);
    for (int i = 0; i < p->norder[w]; ++i)
        m = group_jobs(p, p->order[w][i], w, mine, at, m);
    return m;
}

/* A group for worker w, out of work, to take: the last one not yet begun
 * (the cheapest) of the worker with the most guessed work left; -1 when
 * every group is begun. */
static int next_stolen(const plan *p, shared_state *sh, int w)
{
    for (;;) {
        int victim = -1;
        double most = 0;
        for (int v = 0; v < p->ndev; ++v) {
            double left = 0;
            for (int i = 0; v != w && i < p->norder[v]; ++i)
                if (!p->groups[p->order[v][i]].pinned && !claimed(sh, p, p->order[v][i]))
                    left += p->groups[p->order[v][i]].cost;
            if (left > most) {
                most = left;
                victim = v;
            }
        }
        if (victim < 0)
            return -1;
        for (int i = p->norder[victim] - 1; i >= 0; --i)
            if (!p->groups[p->order[victim][i]].pinned && !claimed(sh, p, p->order[victim][i]) &&
                claim(sh, p, p->order[victim][i], w))
                return p->order[victim][i];
    }
}

typedef struct {
    const kb_options *o;
    const plan *p;
    shared_state *sh;
    int w;
    void *flush;
    size_t flush_bytes;
    kb_result *rows; /* this worker's rows so far, for the speedups */
    int nrows, fails;
} worker_state;

/* Run list[0..n) into the shared rows at[]. */
static void run_list(worker_state *s, const kb_job *list, const int *at, int n)
{
    for (int i = 0; i < n; ++i) {
        kb_result *r = &s->rows[s->nrows];
        kb_run_job(&list[i], s->o, s->flush, s->flush_bytes, r);
        kb_fill_speedup(s->rows, ++s->nrows);
        s->fails += r->status == KB_FAIL;
        kb_table_row(stdout, r, at[i] + 1, s->p->nrows);
        s->sh->rows[at[i]].row = *r;
        s->sh->rows[at[i]].by = s->w;
        __atomic_store_n(&s->sh->rows[at[i]].done, 1, __ATOMIC_RELEASE);
    }
}

/* Where a worker is in its jobs: the next of its own, how many are its own,
 * and the end of those taken from other workers, appended after them. */
typedef struct {
    int pos, own, end;
} cursor;

/* The group worker w runs next, claimed now, one group before it runs, so
 * that the plan's thread makes its case meanwhile: its own next group not
 * claimed by another, else the cheapest not begun of the worker with the
 * most left, appended to mine and to the plan.  Its jobs are mine[*i..*i +
 * *n); -1 when there is none. */
static int next_group(worker_state *s, kb_job *mine, int *at, cursor *c, int *i, int *n)
{
    const plan *p = s->p;
    while (c->pos < c->own) {
        const int k = p->group_of[p->row_job[at[c->pos]]];
        for (*i = c->pos, *n = 0; c->pos < c->own && p->group_of[p->row_job[at[c->pos]]] == k; ++c->pos)
            ++*n;
        if (p->replicate || claim(s->sh, p, k, s->w))
            return k;
    }
    const int k = p->replicate ? -1 : next_stolen(p, s->sh, s->w);
    if (k < 0)
        return -1;
    *i = c->end;
    c->end = group_jobs(p, k, s->w, mine, at, c->end);
    *n = c->end - *i;
    kb_case_plan_extend(c->end);
    return k;
}

/* The worker's own groups (one another worker took is passed over), then
 * groups taken from the others until none is left, each claimed by
 * next_group.  Speedups here, against the rows this worker ran; the roofline
 * figures are the parent's, which sees the copy rows of this GPU as they come. */
static int run_dealt(const kb_options *o, const plan *p, int w, shared_state *sh, void *flush, size_t flush_bytes,
                     kb_job *mine, int *at, int m)
{
    int taken = 0;
    worker_state s = {o, p, sh, w, flush, flush_bytes, alloc(p->njobs, sizeof(kb_result)), 0, 0};
    const kb_device_info *d = &sh->worker[w].info;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "GPU %d", p->dev[w]);
    printf("%s: %s (sm_%d%d, %d SMs, %s), %d rows dealt\n", prefix, d->name, d->cc_major, d->cc_minor,
           d->sm_count, d->pci_bus_id, m);
    int cores = omp_get_num_procs() / (p->ndev > 0 ? p->ndev : 1);
    omp_set_num_threads(cores > 0 ? cores : 1);
    const double t0 = omp_get_wtime();
    cursor c = {0, m, m};
    int i, n, k = next_group(&s, mine, at, &c, &i, &n);
    while (k >= 0) {
        int i2, n2, k2 = next_group(&s, mine, at, &c, &i2, &n2);
        run_list(&s, mine + i, at + i, n);
        if (i >= c.own)
            taken += n;
        k = k2, i = i2, n = n2;
    }
    kb_run_release();
    if (taken)
        printf("%s: took %d rows from other GPUs\n", prefix, taken);
    print_phases(prefix, omp_get_wtime() - t0, 0);
    free(s.rows);
    return s.fails ? KB_EXIT_FAIL : 0;
}

/* GPU dev opened, with its L2 flush buffer; NULL with why set when either fails. */
static void *open_gpu(int dev, kb_device_info *info, size_t *flush_bytes, char *why, size_t len)
{
    void *flush = NULL;
    if (kb_gpu_open(dev, info, why, len) == 0 && !(flush = kb_alloc_flush(info, flush_bytes)))
        snprintf(why, len, "out of device memory for the L2 flush buffer");
    return flush;
}

static int worker_run(const kb_options *o, const plan *p, int w, shared_state *sh)
{
    worker_slot *me = &sh->worker[w];
    int dev = p->dev[w];
    size_t flush_bytes = 0;
    kb_job *mine = alloc(p->njobs, sizeof *mine);
    int *at = alloc(p->njobs, sizeof *at), m = jobs_of(p, w, mine, at);
    /* The first cases' inputs and references are made while the GPU opens
     * (a second or so: its context, the kernels, NVML); the workers share
     * the host, so each takes its share of the cores for them. */
    kb_case_share_host(p->ndev);
    kb_run_plan(mine, m);
    void *flush = open_gpu(dev, &me->info, &flush_bytes, me->why, sizeof me->why);
    if (!flush) {
        fprintf(stderr, "kbench: GPU %d: %s\n", dev, me->why);
        return KB_EXIT_FAIL;
    }
    kb_set_run_devices(&dev, 1);
    if (o->ceilings) {
        printf("GPU %d: measuring ceilings...\n", dev);
        kb_measure_ceilings(&me->info, flush, flush_bytes, &me->ceil);
    } else
        kb_datasheet_ceilings(&me->info, &me->ceil);
    kb_collect_meta(&me->info, o, &me->meta);
    __atomic_store_n(&me->ready, 1, __ATOMIC_RELEASE);
    int rc = run_dealt(o, p, w, sh, flush, flush_bytes, mine, at, m);
    __atomic_store_n(&me->finished, 1, __ATOMIC_RELEASE);
    free(mine);
    free(at);
    cudaError_t e = cudaFree(flush);
    if (e != cudaSuccess) {
        fprintf(stderr, "kbench: GPU %d: %s\n", dev, cudaGetErrorString(e));
        rc = KB_EXIT_FAIL;
    }
    return rc;
}

/* The child's whole life: it ends here, never returning into the parent's code. */
static void worker_main(const kb_options *o, const plan *p, int w, shared_state *sh, pid_t parent)
{
    /* A worker outliving its parent would hold its GPU for nothing. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(KB_EXIT_FAIL);
    /* Whole lines, so that the workers' table rows do not tear. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = worker_run(o, p, w, sh);
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
}

/* ---- the parent ---- */

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
            worker_main(g->o, &g->p, w, g->sh, parent);
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
    if (!(a->flush = open_gpu(g->p.dev[0], &d, &a->flush_bytes, a->why, sizeof a->why)))
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
    ncclComm_t *comms;
    if (needs & KB_NEEDS_NCCL)
        kb_nccl_comms(&comms);
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
    a->list = alloc(g->p.njobs, sizeof *a->list);
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
    gather *g = alloc(1, sizeof *g);
    g->o = o;
    g->csv = csv;
    g->meta_from = -1;
    make_plan(o, jobs, n, &g->p);
    g->rows = alloc(g->p.nrows, sizeof *g->rows);
    g->scratch = alloc(g->p.nrows, sizeof *g->scratch);
    g->done = alloc(g->p.nrows, 1);
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
    free_plan(&g->p);
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
        print_phases("rows across GPUs", t2 - t1, 0);
    rc = any_failed(g) || g->lost ? KB_EXIT_FAIL : 0;
    gather_free(g);
    return rc;
}
