/* What the three files of `kbench run --devices` share, internal to them:
 * the deal of the rows over the workers (workers_plan.c), the memory the
 * workers leave their rows in, and the entry to a worker's life
 * (workers_child.c); workers.c, the parent, forks the workers, gathers
 * their rows into the CSV and runs the rows across GPUs. */
#ifndef KB_WORKERS_H
#define KB_WORKERS_H

#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>
#include "harness/csv_read.h"
#include "harness/harness.h"

/* n zeroed items (at least one, so n may be 0); out of memory ends the run. */
static inline void *kb_zalloc(int n, size_t size)
{
    return kb_must(calloc(n > 0 ? (size_t)n : 1, size));
}

/* ---- the deal (workers_plan.c) ---- */

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

/* Every job dealt: to a worker, to all of them (--replicate) or across the
 * GPUs, in groups each worker runs dearest first (kb_plan_free frees it). */
void kb_plan_make(const kb_options *o, const kb_job *jobs, int n, plan *p);
void kb_plan_free(plan *p);

/* ---- memory shared with the workers ----
 * Made before the forks, so it lies at the same address in every process
 * and the op and variant pointers in a row (one binary) stay valid.  A
 * worker fills a row, then sets its done flag with release order; the
 * parent reads the flag with acquire order before the row. */
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

static inline int *claims(shared_state *sh, const plan *p) { return (int *)&sh->rows[p->nrows]; }

static inline int claimed(shared_state *sh, const plan *p, int k)
{
    return __atomic_load_n(&claims(sh, p)[k], __ATOMIC_ACQUIRE);
}

static inline int claim(shared_state *sh, const plan *p, int k, int w)
{
    int none = 0;
    return __atomic_compare_exchange_n(&claims(sh, p)[k], &none, w + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* ---- a worker (workers_child.c) ---- */

/* Worker w's whole life, in the child fork returned 0 to: it runs its rows
 * on GPU p->dev[w] and ends the process, never returning. */
void kb_worker_main(const kb_options *o, const plan *p, int w, shared_state *sh, pid_t parent);
/* GPU dev opened, with its L2 flush buffer; NULL with why set when either fails. */
void *kb_gpu_open_flush(int dev, kb_device_info *info, size_t *flush_bytes, char *why, size_t len);
/* kb_run_phases' lines, each after "<prefix>: ", so that the workers' lines
 * tell apart. */
void kb_print_phases(const char *prefix, double total_s, double csv_s);

#endif
