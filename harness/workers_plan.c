/* kbench run --devices, before the forks: the machine's GPUs, counted in a
 * child so that this process stays fork-safe (kb_resolve_devices), and the
 * deal of the sweep's rows over the workers, one per GPU. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/workers.h"

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
    p->groups = kb_zalloc(p->njobs, sizeof *p->groups);
    p->group_of = kb_zalloc(p->njobs, sizeof *p->group_of);
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
    int *sorted = kb_zalloc(p->ngroups, sizeof *sorted);
    double load[KB_MAX_RANKS] = {0};
    for (int k = 0; k < p->ngroups; ++k)
        sorted[k] = k;
    sort_groups = p->groups;
    qsort(sorted, (size_t)p->ngroups, sizeof *sorted, by_cost);
    for (int w = 0; w < p->ndev; ++w)
        p->order[w] = kb_zalloc(p->ngroups, sizeof(int));
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

void kb_plan_make(const kb_options *o, const kb_job *jobs, int n, plan *p)
{
    *p = (plan){jobs, n, o->ndevices, o->devices, kb_zalloc(n, sizeof(int)), kb_zalloc(n, sizeof(int)),
                NULL, NULL, 0, o->replicate};
    deal(o, p);
    for (int j = 0; j < n; ++j) {
        p->first[j] = p->nrows;
        p->nrows += p->worker[j] == EVERY ? p->ndev : 1;
    }
    p->row_job = kb_zalloc(p->nrows, sizeof(int));
    p->row_worker = kb_zalloc(p->nrows, sizeof(int));
    for (int j = 0; j < n; ++j)
        for (int k = 0; k < (p->worker[j] == EVERY ? p->ndev : 1); ++k) {
            p->row_job[p->first[j] + k] = j;
            p->row_worker[p->first[j] + k] = p->worker[j] == EVERY ? k : p->worker[j];
        }
}

void kb_plan_free(plan *p)
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
