/* A case: what every variant of one (op, shape, dtype) shares (case.c).
 * Internal to the harness: run.c and case.c, which count their time in the
 * sweep's phases (timing.h). */
#ifndef KB_CASE_H
#define KB_CASE_H

#include "harness/harness.h"
#include "harness/timing.h"

/* The host half: seeded inputs, the sampled rows and their reference.  It
 * touches no CUDA, so the next case's can be made on the host while the
 * GPU times this one. */
typedef struct {
    const kb_op *op;
    kb_shape shape;
    kb_dtype dtype;
    unsigned quirks;             /* the variants' KB_QUIRK_* bits these inputs were made for */
    int n;                       /* tensors */
    kb_tensor t[KB_MAX_TENSORS];
    /* Inputs and inouts, in their storage dtype, as the variant finds them;
     * outputs: NULL.  Freed once on the device. */
    void *host[KB_MAX_TENSORS];
    /* Per checked tensor (out or inout): its sampled rows and their
     * reference, nrows * row_len doubles; freed once on the device. */
    int64_t *rows[KB_MAX_TENSORS];
    int nrows[KB_MAX_TENSORS];
    double *ref[KB_MAX_TENSORS];
    double inputs_s, reference_s; /* host time spent making them */
    /* Why the case was not made (it does not fit the host or the GPU, found
     * before anything was allocated, or an allocation failed), else "". */
    char no_room[192];
} kb_host_case;

/* The device half: the tensors, a pristine copy of each input and inout
 * that resets it before every variant (an inout before every launch too),
 * and the rows and reference the check reads.
 * A distributed op's tensors are in parts, one per GPU of the run (part r:
 * row r, on device[r]); any other op's have one part, on the current GPU.
 * Tensor i's part r is at [i * parts + r], the layout bind expects. */
typedef struct {
    kb_host_case h;
    int parts;
    int device[KB_MAX_RANKS];
    void *dev[KB_MAX_TENSORS * KB_MAX_RANKS];
    void *pristine[KB_MAX_TENSORS * KB_MAX_RANKS];
    double *dref[KB_MAX_TENSORS * KB_MAX_RANKS];
    int64_t *drows[KB_MAX_TENSORS * KB_MAX_RANKS]; /* the part's sampled rows, numbered within it */
    int nrows[KB_MAX_TENSORS * KB_MAX_RANKS];
    int has_inout;
} kb_case;

/* Whether the job's case fits before any of it is made: NULL, or why not,
 * naming what it needs and what there is, host_avail bytes of host memory
 * and device_total bytes on the GPU (kb_case_for's check, with the
 * machine's figures; the CPU tests give it others). */
const char *kb_case_room(const kb_job *job, double host_avail, double device_total, char *why, size_t len);
/* The host memory a case may still take: MemAvailable, and under an
 * address-space limit what is left of it; bytes. */
double kb_host_available(void);

/* Make `c` the case of this job: reused when op, shape, dtype and quirks
 * match, else taken from the background or made now.  NULL, or why the row
 * is skipped (it does not fit the device). */
const char *kb_case_for(kb_case *c, const kb_job *job, char *why, size_t len);
/* The sweep's jobs, in order (until kb_case_release): a thread makes the
 * host halves of their cases ahead of their use. */
void kb_case_plan(const kb_job *jobs, int n);
/* The plan's array (the one kb_case_plan got) now holds n jobs: more were
 * appended in place, and their cases are made ahead too. */
void kb_case_plan_extend(int n);
/* Whether a plan's thread is making its cases (the GPU suite checks that
 * the ceilings leave it running). */
int kb_case_planned(void);
/* How many processes (--devices workers) make cases on this host at once;
 * each plan's thread takes its share of the cores.  1 unless set. */
void kb_case_share_host(int processes);
/* Whether two jobs share a case. */
int kb_case_same(const kb_job *a, const kb_job *b);
void kb_case_free(kb_case *c);
/* kb_case_free, after stopping the plan's thread and dropping its cases;
 * also frees the pinned buffers uploads go through (made again when needed). */
void kb_case_release(kb_case *c);
/* Restore the inputs and inouts, and poison the outputs with NaN. */
cudaError_t kb_case_reset(const kb_case *c);
/* Restore the inouts alone, before each timed launch (a no-op without). */
cudaError_t kb_case_restore_inouts(const kb_case *c);
/* The first input (role IN) whose device copy no longer matches its
 * pristine one, in *tensor (-1: none), and how many bytes differ. */
cudaError_t kb_case_changed_input(const kb_case *c, int *tensor, int64_t *bytes);
/* How many rows the check compares, and how many the checked tensors have. */
void kb_case_rows(const kb_case *c, int64_t *checked, int64_t *total);
/* Check every output on the device; fills r->check with the worst. */
cudaError_t kb_case_check(const kb_case *c, kb_math math, kb_result *r);

#endif
