/* kbench run --devices, a worker: the child process of one GPU, which
 * opens it, runs the groups of rows dealt to it and then those it takes
 * from the others, and leaves each row in the memory it shares with the
 * parent (workers.c). */
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "harness/case.h"
#include "harness/workers.h"

void kb_print_phases(const char *prefix, double total_s, double csv_s)
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
    worker_state s = {o, p, sh, w, flush, flush_bytes, kb_zalloc(p->njobs, sizeof(kb_result)), 0, 0};
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
    kb_print_phases(prefix, omp_get_wtime() - t0, 0);
    free(s.rows);
    return s.fails ? KB_EXIT_FAIL : 0;
}

void *kb_gpu_open_flush(int dev, kb_device_info *info, size_t *flush_bytes, char *why, size_t len)
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
    kb_job *mine = kb_zalloc(p->njobs, sizeof *mine);
    int *at = kb_zalloc(p->njobs, sizeof *at), m = jobs_of(p, w, mine, at);
    /* The first cases' inputs and references are made while the GPU opens
     * (a second or so: its context, the kernels, NVML); the workers share
     * the host, so each takes its share of the cores for them. */
    kb_case_share_host(p->ndev);
    kb_run_plan(mine, m);
    void *flush = kb_gpu_open_flush(dev, &me->info, &flush_bytes, me->why, sizeof me->why);
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
void kb_worker_main(const kb_options *o, const plan *p, int w, shared_state *sh, pid_t parent)
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
