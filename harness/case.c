/* Cases: the inputs, sampled rows, reference and device tensors that every
 * variant of one (op, shape, dtype) shares.  A case is built once and reused
 * by the variants that follow it in the sweep; inputs are restored from a
 * pristine device copy before each variant, so a variant that scribbles on
 * its inputs cannot hurt the next one.
 *
 * The host half (inputs and the reference of the sampled rows) is most of a
 * big case's cost and needs no GPU, so while the GPU times one case, a
 * thread makes the next ones' (kb_case_plan).  The check runs on the
 * device against the reference uploaded once per case. */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "harness/case.h"
#include "kernels/cuda_util.h"

#define REF_BUDGET 1e9 /* CPU work (op units) spent on reference rows per case */

static void fill_input(const kb_host_case *h, int i, float *tmp)
{
    uint64_t seed = kb_seed_for(h->op->name, &h->shape, i);
    if (h->op->fill)
        h->op->fill(&h->shape, i, tmp, h->t[i].elems, seed, h->quirks);
    else
        kb_fill_uniform(tmp, h->t[i].elems, seed);
}

/* The reference of output i's sampled rows, in chunks across CPU threads,
 * small enough that every thread gets some (a decode row is a softmax over
 * all Tk keys).  References are pure functions of their rows, so chunks are
 * independent. */
static void reference_parallel(kb_host_case *h, int i)
{
    enum { CHUNK = 16 };
    const void *const *in = (const void *const *)h->host;
    const int64_t len = h->t[i].row_len;
    /* A collective's row per GPU, or copy's one row, is huge: the
     * reference spreads its elements over the threads itself. */
    if (h->op->distributed || h->nrows[i] <= 1) {
        h->op->reference(&h->shape, h->dtype, in, i, h->rows[i], h->nrows[i], h->ref[i]);
        return;
    }
    int chunk = h->nrows[i] / (4 * omp_get_max_threads());
    chunk = chunk < 1 ? 1 : chunk > CHUNK ? CHUNK : chunk;
    int nchunks = (h->nrows[i] + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic)
    for (int k = 0; k < nchunks; ++k) {
        int first = k * chunk, n = h->nrows[i] - first < chunk ? h->nrows[i] - first : chunk;
        h->op->reference(&h->shape, h->dtype, in, i, h->rows[i] + first, n, h->ref[i] + (int64_t)first * len);
    }
}

static void host_case_free(kb_host_case *h)
{
    for (int i = 0; i < h->n; ++i) {
        free(h->host[i]);
        free(h->ref[i]);
        free(h->rows[i]);
    }
    memset(h, 0, sizeof *h);
}

/* The key and tensor list of a job's case, nothing allocated. */
static void host_case_init(kb_host_case *h, const kb_job *job)
{
    memset(h, 0, sizeof *h);
    h->op = job->op;
    h->shape = job->shape;
    h->dtype = job->variant->dtype;
    h->quirks = job->variant->quirks;
    h->n = job->op->ntensors(&job->shape);
    for (int i = 0; i < h->n; ++i)
        h->t[i] = job->op->tensor(&job->shape, h->dtype, i);
}

/* The host memory a case needs, in bytes: its inputs (and a float copy of
 * the largest while it is filled) and the reference of its sampled rows. */
static double host_need(const kb_host_case *h)
{
    double need = 0, fill = 0;
    for (int i = 0; i < h->n; ++i) {
        double elems = (double)h->t[i].elems;
        if (kb_is_checked(&h->t[i]))
            need += (double)h->nrows[i] * (double)h->t[i].row_len * sizeof(double);
        if (kb_is_read(&h->t[i])) {
            need += elems * (double)kb_dtype_size(h->t[i].dtype);
            if (h->t[i].dtype != KB_F32 && elems * sizeof(float) > fill)
                fill = elems * sizeof(float);
        }
    }
    return need + fill;
}

/* Allocate the host tensors and reference rows; 0, or -1 with all freed
 * and no_room set. */
static int host_case_alloc(kb_host_case *h)
{
    int ok = 1;
    for (int i = 0; i < h->n; ++i) {
        const kb_tensor *t = &h->t[i];
        if (kb_is_checked(t))
            ok = ok && (h->ref[i] = malloc((size_t)h->nrows[i] * (size_t)t->row_len * sizeof(double) + 1));
        if (kb_is_read(t))
            ok = ok && (h->host[i] = malloc((size_t)t->elems * kb_dtype_size(t->dtype) + 1));
    }
    if (ok)
        return 0;
    snprintf(h->no_room, sizeof h->no_room, "needs %.1f GiB of host memory for its inputs and reference, which it "
             "could not get", host_need(h) / 1073741824.0);
    for (int i = 0; i < h->n; ++i) {
        free(h->ref[i]);
        free(h->host[i]);
        h->ref[i] = NULL;
        h->host[i] = NULL;
    }
    return -1;
}

/* Each checked tensor's sample of rows, from its own seed (the first
 * output's is the one a single-output op always had), within an equal
 * share of the CPU budget. */
static void pick_rows(kb_host_case *h)
{
    int outputs = 0;
    for (int i = 0; i < h->n; ++i)
        outputs += kb_is_checked(&h->t[i]);
    /* A collective is checked on every rank, whatever its reference costs. */
    double budget = h->op->distributed ? INFINITY : REF_BUDGET / (outputs ? outputs : 1);
    for (int i = 0, k = 0; i < h->n; ++i)
        if (kb_is_checked(&h->t[i]))
            h->nrows[i] = kb_pick_rows(h->t[i].rows, h->t[i].row_cost, budget,
                                       kb_seed_for(h->op->name, &h->shape, 99 + k++), &h->rows[i]);
}

/* Drawn input i in its storage dtype; 0, or -1 when the host has no room
 * for its float copy. */
static int draw_input(kb_host_case *h, int i)
{
    if (h->t[i].dtype == KB_F32) {
        fill_input(h, i, h->host[i]);
        return 0;
    }
    float *tmp = malloc((size_t)h->t[i].elems * sizeof *tmp + 1);
    if (!tmp)
        return -1;
    fill_input(h, i, tmp);
    kb_store_floats(h->t[i].dtype, tmp, h->host[i], h->t[i].elems);
    free(tmp);
    return 0;
}

/* ---- room: a case is checked against the machine before it is made ---- */

/* The device memory the case needs on its fullest GPU: each tensor's
 * part, the pristine copy of what is read, and the sampled rows and their
 * reference of what is checked (all of them: a bound). */
static double device_need(const kb_host_case *h)
{
    const double parts = h->op->distributed && h->shape.ranks > 1 ? h->shape.ranks : 1;
    double need = 0;
    for (int i = 0; i < h->n; ++i) {
        const kb_tensor *t = &h->t[i];
        need += (double)t->elems * (double)kb_dtype_size(t->dtype) / parts * (kb_is_read(t) ? 2 : 1);
        if (kb_is_checked(t))
            need += (double)h->nrows[i] * ((double)t->row_len * sizeof(double) + sizeof(int64_t));
    }
    return need;
}

/* NULL when the case fits, else why not: a tensor's size overflows (the
 * shape parser lets no such shape through, but a case never trusts it), the
 * GPU could never hold it (95% of its memory), or the host cannot now. */
static const char *room_for(const kb_host_case *h, double host_avail, double device_total, char *why, size_t len)
{
    for (int i = 0; i < h->n; ++i)
        if (h->t[i].elems <= 0) {
            snprintf(why, len, "tensor %s's size overflows", h->t[i].name);
            return why;
        }
    const double gib = 1073741824.0, dev = device_need(h), host = host_need(h);
    if (device_total > 0 && dev > 0.95 * device_total) {
        snprintf(why, len, "needs %.1f GiB of device memory with the inputs' copies and the reference%s, the GPU has "
                 "%.1f GiB", dev / gib, h->op->distributed ? " on each GPU" : "", device_total / gib);
        return why;
    }
    if (host > host_avail) {
        snprintf(why, len, "needs %.1f GiB of host memory for its inputs and reference, %.1f GiB available",
                 host / gib, host_avail / gib);
        return why;
    }
    return NULL;
}

double kb_host_available(void)
{
    double avail = INFINITY;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kib;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            avail = (double)kib * 1024;
    if (f)
        fclose(f);
    struct rlimit as;
    unsigned long long pages = 0;
    f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%llu", &pages) != 1)
        pages = 0;
    if (f)
        fclose(f);
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        const double left = (double)as.rlim_cur - (double)pages * (double)sysconf(_SC_PAGESIZE);
        avail = left < avail ? left : avail;
    }
    return avail;
}

/* The run's GPU's memory, read on the thread that opened it (the plan's
 * thread has no CUDA context of its own to ask). */
static double device_total_b;

static void note_device_total(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        device_total_b = (double)total_b;
    else
        cudaGetLastError();
}

const char *kb_case_room(const kb_job *job, double host_avail, double device_total, char *why, size_t len)
{
    kb_host_case h;
    host_case_init(&h, job);
    for (int i = 0; i < h.n; ++i)
        if (h.t[i].elems <= 0)
            return room_for(&h, host_avail, device_total, why, len);
    pick_rows(&h);
    const char *no = room_for(&h, host_avail, device_total, why, len);
    host_case_free(&h);
    return no;
}

/* Inputs (in the storage dtype), the derived ones from the others, sampled
 * rows and their reference; nothing when the case does not fit the host's
 * memory now (the cases made ahead and held count against it, being
 * allocated) or the GPU's. */
static void host_case_make(kb_host_case *h)
{
    double t0 = kb_now_s();
    pick_rows(h);
    if (room_for(h, kb_host_available(), device_total_b, h->no_room, sizeof h->no_room))
        return;
    if (host_case_alloc(h) != 0)
        return;
    for (int i = 0; i < h->n; ++i)
        if (kb_is_read(&h->t[i]) && !h->t[i].derived && draw_input(h, i) != 0) {
            snprintf(h->no_room, sizeof h->no_room, "needs %.1f GiB of host memory for its inputs and reference, "
                     "which it could not get", host_need(h) / 1073741824.0);
            return;
        }
    if (h->op->prepare)
        h->op->prepare(&h->shape, h->dtype, h->host);
    double t1 = kb_now_s();
    for (int i = 0; i < h->n; ++i)
        if (kb_is_checked(&h->t[i]))
            reference_parallel(h, i);
    h->inputs_s = t1 - t0;
    h->reference_s = kb_now_s() - t1;
}

static int case_is(const kb_host_case *h, const kb_job *job)
{
    return h->op == job->op && h->dtype == job->variant->dtype && h->quirks == job->variant->quirks &&
           !memcmp(&h->shape, &job->shape, sizeof h->shape);
}

int kb_case_same(const kb_job *a, const kb_job *b)
{
    kb_host_case h;
    host_case_init(&h, a);
    return case_is(&h, b);
}

/* ---- the plan's next cases, made on a thread while the GPU works ----
 * The plan's jobs fall into runs of one case each.  One thread makes their
 * host halves in order, up to AHEAD beyond the one in use; a case is taken
 * from its slot, and cases the sweep passes over (every row of them
 * skipped) are dropped. */
#define AHEAD 3

static struct {
    pthread_t thread;
    int running, stop;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    const kb_job *plan;
    int njobs;
    int *first, ncases;   /* plan index of each case's first job */
    int taken;            /* cases before this one were taken or dropped */
    int made[AHEAD];      /* the case in each slot, or -1 */
    kb_host_case slot[AHEAD];
} ahead = {.mu = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static int host_sharers = 1; /* processes making cases on this host at once */

void kb_case_share_host(int processes) { host_sharers = processes > 1 ? processes : 1; }

static void *make_ahead(void *arg)
{
    (void)arg;
    /* This process's share of the cores, less two for the thread that
     * launches and times kernels. */
    int cores = omp_get_num_procs() / host_sharers;
    omp_set_num_threads(cores > 3 ? cores - 2 : 1);
    for (int c = 0;; ++c) {
        /* Under the lock: kb_case_plan_extend may move the plan's index. */
        pthread_mutex_lock(&ahead.mu);
        while (!ahead.stop && (c >= ahead.taken + AHEAD || c >= ahead.ncases))
            pthread_cond_wait(&ahead.changed, &ahead.mu);
        int stop = ahead.stop;
        const kb_job *job = stop ? NULL : &ahead.plan[ahead.first[c]];
        pthread_mutex_unlock(&ahead.mu);
        if (stop)
            break;
        /* The slot is free: its last case was taken or dropped. */
        kb_host_case *h = &ahead.slot[c % AHEAD];
        host_case_init(h, job);
        host_case_make(h);
        pthread_mutex_lock(&ahead.mu);
        ahead.made[c % AHEAD] = c;
        pthread_cond_broadcast(&ahead.changed);
        pthread_mutex_unlock(&ahead.mu);
    }
    return NULL;
}

static void stop_ahead(void)
{
    if (ahead.running) {
        pthread_mutex_lock(&ahead.mu);
        ahead.stop = 1;
        pthread_cond_broadcast(&ahead.changed);
        pthread_mutex_unlock(&ahead.mu);
        pthread_join(ahead.thread, NULL);
    }
    for (int i = 0; i < AHEAD; ++i)
        host_case_free(&ahead.slot[i]);
    free(ahead.first);
    ahead.first = NULL;
    ahead.njobs = ahead.ncases = ahead.taken = ahead.running = ahead.stop = 0;
}

void kb_case_plan(const kb_job *jobs, int n)
{
    stop_ahead();
    note_device_total();
    ahead.plan = jobs;
    ahead.taken = 0;
    for (int i = 0; i < AHEAD; ++i)
        ahead.made[i] = -1;
    ahead.running = pthread_create(&ahead.thread, NULL, make_ahead, NULL) == 0;
    kb_case_plan_extend(n);
}

int kb_case_planned(void) { return ahead.running; }

void kb_case_plan_extend(int n)
{
    if (!ahead.running) /* every case made when needed instead */
        return;
    pthread_mutex_lock(&ahead.mu);
    int *first = realloc(ahead.first, (size_t)(n > 0 ? n : 1) * sizeof *first);
    if (first) {
        ahead.first = first;
        for (int i = ahead.njobs; i < n; ++i)
            if (i == 0 || !kb_case_same(&ahead.plan[i - 1], &ahead.plan[i]))
                ahead.first[ahead.ncases++] = i;
        ahead.njobs = n;
        pthread_cond_broadcast(&ahead.changed);
    }
    pthread_mutex_unlock(&ahead.mu);
}

/* Wait for case c to be made; move it into h (or drop it when h is NULL). */
static void take_case(int c, kb_host_case *h)
{
    while (ahead.made[c % AHEAD] != c)
        pthread_cond_wait(&ahead.changed, &ahead.mu);
    if (h)
        *h = ahead.slot[c % AHEAD];
    else
        host_case_free(&ahead.slot[c % AHEAD]);
    memset(&ahead.slot[c % AHEAD], 0, sizeof ahead.slot[0]);
    ahead.made[c % AHEAD] = -1;
    ahead.taken = c + 1;
    pthread_cond_broadcast(&ahead.changed);
}

/* The job's case from the thread, dropping those passed over; 0 when the
 * plan has no case for it from here on. */
static int take_ahead(const kb_job *job, kb_host_case *h)
{
    int c = ahead.taken;
    while (c < ahead.ncases && !kb_case_same(&ahead.plan[ahead.first[c]], job))
        ++c;
    if (c >= ahead.ncases)
        return 0;
    pthread_mutex_lock(&ahead.mu);
    while (ahead.taken < c)
        take_case(ahead.taken, NULL);
    take_case(c, h);
    pthread_mutex_unlock(&ahead.mu);
    return 1;
}

/* ---- the device half ---- */
static size_t bytes_of(const kb_tensor *t) { return (size_t)t->elems * kb_dtype_size(t->dtype); }

/* One part of a tensor: 1/parts of its rows (parts divides them). */
static size_t part_bytes(const kb_case *c, int i) { return bytes_of(&c->h.t[i]) / (size_t)c->parts; }
static int64_t part_elems(const kb_case *c, int i) { return c->h.t[i].elems / c->parts; }

/* The run's first GPU, current again after work on a part's. */
static void back_to_first_gpu(void)
{
    const int *ids;
    kb_run_devices(&ids);
    cudaSetDevice(ids[0]);
}

void kb_case_free(kb_case *c)
{
    for (int r = 0; r < c->parts; ++r) {
        cudaSetDevice(c->device[r]);
        for (int i = 0; i < c->h.n; ++i) {
            int k = i * c->parts + r;
            void *bufs[] = {c->dev[k], c->pristine[k], c->dref[k], c->drows[k]};
            for (size_t b = 0; b < sizeof bufs / sizeof bufs[0]; ++b)
                if (bufs[b])
                    cudaFree(bufs[b]);
        }
    }
    if (c->parts)
        back_to_first_gpu();
    host_case_free(&c->h);
    memset(c, 0, sizeof *c);
}

/* The sampled rows of checked tensor i in part r: their index range
 * [*j0, *j1) in h->rows[i]. */
static void part_rows(const kb_case *c, int i, int r, int *j0, int *j1)
{
    const int64_t per = c->h.t[i].rows / c->parts, *rows = c->h.rows[i];
    const int n = c->h.nrows[i];
    *j0 = 0;
    while (*j0 < n && rows[*j0] < r * per)
        ++*j0;
    *j1 = *j0;
    while (*j1 < n && rows[*j1] < (r + 1) * per)
        ++*j1;
}

/* Device memory part r needs: each tensor's part, and beside it the
 * pristine copy of what the variant reads and the sampled rows and their
 * reference of what is checked. */
static size_t part_need(const kb_case *c, int r)
{
    size_t need = 0;
    for (int i = 0; i < c->h.n; ++i) {
        const kb_tensor *t = &c->h.t[i];
        need += part_bytes(c, i) * (kb_is_read(t) ? 2 : 1);
        if (kb_is_checked(t)) {
            int j0, j1;
            part_rows(c, i, r, &j0, &j1);
            need += (size_t)(j1 - j0) * ((size_t)t->row_len * sizeof(double) + sizeof(int64_t));
        }
    }
    return need;
}

/* Uploads.  The host's copies are pageable (malloc'd by make_ahead), and a
 * cudaMemcpy from pageable memory goes through the driver's own staging at
 * a few GB/s: most of a sweep's device alloc and upload phase.  So a large
 * upload goes through two pinned buffers in turn: while the DMA engine
 * drains one to the GPU, at the link's rate, a few CPU threads fill the
 * other from the source.
 *
 * STAGE_BYTES, 32 MiB a buffer: one chunk's DMA takes some 0.6 ms at the
 * ~50 GB/s of PCIe 5 x16, so a chunk's fixed costs (an event wait, an async
 * copy, an OpenMP fork, some 10-20 us) stay a few percent of it, the first
 * chunk's CPU copy (the one not overlapped) stays short, and the 64 MiB
 * pinned are nothing next to the host's memory.  Uploads under STAGE_MIN
 * gain nothing from staging and go straight.
 *
 * The buffers are made on the first large upload and freed by
 * kb_case_release (a later upload makes them again).  They are portable, so
 * they serve every GPU the process opens; a stream and its events belong to
 * one GPU, so each GPU gets its own on its first upload, kept for the
 * process's life as ranks.c keeps its streams.  No lock: uploads run only on
 * the thread that runs rows (part_to_device), never on make_ahead. */
#define STAGE_BYTES ((size_t)32 << 20)
#define STAGE_MIN ((size_t)1 << 20)
#define STAGE_THREADS 4 /* CPU copiers: make_ahead keeps all but two cores busy meanwhile */
#define STAGE_GPUS 64   /* device ordinals with a stream; any beyond upload straight */

static struct {
    int failed; /* no pinned memory to be had: every upload goes straight */
    char *buf;  /* 2 * STAGE_BYTES, pinned and portable */
    cudaStream_t stream[STAGE_GPUS];
    cudaEvent_t drained[STAGE_GPUS][2]; /* recorded after the copy that last read each half of buf */
} stage;

/* cudaMemcpy host to device, complete on return as cudaMemcpy's is. */
static cudaError_t upload(void *dst, const void *src, size_t bytes)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    if (bytes < STAGE_MIN || stage.failed || dev >= STAGE_GPUS)
        return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    if (!stage.buf && cudaHostAlloc((void **)&stage.buf, 2 * STAGE_BYTES, cudaHostAllocPortable) != cudaSuccess) {
        /* No pinnable memory (a locked-memory limit, say): the pageable
         * path is slower but works, so take it from now on, and clear the
         * error lest a later launch's check see it. */
        cudaGetLastError();
        stage.buf = NULL;
        stage.failed = 1;
        return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    }
    if (!stage.stream[dev])
        e = cudaStreamCreateWithFlags(&stage.stream[dev], cudaStreamNonBlocking);
    for (int b = 0; b < 2 && e == cudaSuccess; ++b)
        if (!stage.drained[dev][b])
            e = cudaEventCreateWithFlags(&stage.drained[dev][b], cudaEventDisableTiming);
    if (e != cudaSuccess)
        return e;
    /* Chunk k goes through half k % 2, once the copy that last read that
     * half is done (an event never recorded counts as done). */
    for (size_t off = 0, k = 0; off < bytes && e == cudaSuccess; off += STAGE_BYTES, ++k) {
        size_t n = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
        char *pin = stage.buf + (k % 2) * STAGE_BYTES;
        const char *from = (const char *)src + off;
        if ((e = cudaEventSynchronize(stage.drained[dev][k % 2])) != cudaSuccess)
            break;
        int64_t blocks = (int64_t)((n + STAGE_MIN - 1) / STAGE_MIN);
#pragma omp parallel for num_threads(STAGE_THREADS) schedule(static)
        for (int64_t j = 0; j < blocks; ++j) {
            size_t at = (size_t)j * STAGE_MIN;
            memcpy(pin + at, from + at, n - at < STAGE_MIN ? n - at : STAGE_MIN);
        }
        e = cudaMemcpyAsync((char *)dst + off, pin, n, cudaMemcpyHostToDevice, stage.stream[dev]);
        if (e == cudaSuccess)
            e = cudaEventRecord(stage.drained[dev][k % 2], stage.stream[dev]);
    }
    /* Even after an error: no copy may still read a half the next upload fills. */
    cudaError_t done = cudaStreamSynchronize(stage.stream[dev]);
    return e != cudaSuccess ? e : done;
}

static void stage_free(void)
{
    if (stage.buf && cudaFreeHost(stage.buf) != cudaSuccess)
        cudaGetLastError(); /* a broken context's error stays anyway; any other is not the next launch's */
    stage.buf = NULL;
}

/* Whether input i holds the plain seeded uniform draw (no op fill of its
 * own, not derived) of a floating type: then the GPU makes its pristine
 * copy itself (kb_device_fill_uniform), some 100 times faster than
 * uploading the host's copy, which the reference reads all the same. */
static int made_on_device(const kb_host_case *h, int i)
{
    return !h->op->fill && !h->t[i].derived && h->t[i].dtype != KB_I32;
}

/* Checked tensor i's sampled rows in part r (renumbered within the part)
 * and their reference, onto the part's GPU. */
static cudaError_t rows_to_device(kb_case *c, int i, int r)
{
    const kb_host_case *h = &c->h;
    const int k = i * c->parts + r;
    const int64_t first = h->t[i].rows / c->parts * r, len = h->t[i].row_len;
    int j0, j1;
    part_rows(c, i, r, &j0, &j1);
    int64_t *rows = malloc((size_t)(j1 - j0 + 1) * sizeof *rows);
    if (!rows)
        return cudaErrorMemoryAllocation;
    for (int j = j0; j < j1; ++j)
        rows[j - j0] = h->rows[i][j] - first;
    c->nrows[k] = j1 - j0;
    cudaError_t e = cudaMalloc((void **)&c->drows[k], (size_t)(j1 - j0 + 1) * sizeof *rows);
    if (e == cudaSuccess)
        e = upload(c->drows[k], rows, (size_t)(j1 - j0) * sizeof *rows);
    free(rows);
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&c->dref[k], (size_t)(j1 - j0) * (size_t)len * sizeof(double) + 1);
    if (e == cudaSuccess)
        e = upload(c->dref[k], h->ref[i] + (size_t)j0 * (size_t)len, (size_t)(j1 - j0) * (size_t)len * sizeof(double));
    return e;
}

/* Part r's tensors, pristine inputs, rows and reference, allocated on its
 * GPU and uploaded or made there. */
static cudaError_t part_to_device(kb_case *c, int r)
{
    kb_host_case *h = &c->h;
    cudaError_t e = cudaSetDevice(c->device[r]);
    for (int i = 0; i < h->n && e == cudaSuccess; ++i) {
        const int k = i * c->parts + r;
        e = cudaMalloc(&c->dev[k], part_bytes(c, i));
        if (e == cudaSuccess && kb_is_read(&h->t[i]))
            e = cudaMalloc(&c->pristine[k], part_bytes(c, i));
        if (e == cudaSuccess && kb_is_read(&h->t[i]))
            e = made_on_device(h, i) ? kb_device_fill_uniform(c->pristine[k], h->t[i].dtype, part_elems(c, i),
                                                              part_elems(c, i) * r,
                                                              kb_seed_for(h->op->name, &h->shape, i))
                                     : upload(c->pristine[k], (const char *)h->host[i] + part_bytes(c, i) * (size_t)r,
                                              part_bytes(c, i));
        if (e == cudaSuccess && kb_is_checked(&h->t[i]))
            e = rows_to_device(c, i, r);
        c->has_inout |= h->t[i].role == KB_INOUT;
    }
    return e;
}

/* Allocate the tensors, upload the inputs (into their pristine copies), the
 * rows and the reference, and free the host's copies; a SKIP reason when
 * they do not fit.  Restoring inputs from the device before each variant
 * is some 100 times faster than uploading them again from pageable memory. */
static const char *case_to_device(kb_case *c, char *why, size_t len)
{
    kb_host_case *h = &c->h;
    const int *ids;
    int n = kb_run_devices(&ids);
    int parts = h->op->distributed ? h->shape.ranks : 1;
    if (parts > n) {
        snprintf(why, len, "spans %d GPUs, this run has %d", parts, n);
        return why;
    }
    c->parts = parts;
    for (int r = 0; r < parts; ++r)
        c->device[r] = ids[r];
    for (int r = 0; r < c->parts; ++r) {
        size_t free_b = 0, total_b = 0, need = part_need(c, r);
        cudaSetDevice(ids[r]);
        cudaMemGetInfo(&free_b, &total_b);
        if ((double)need > 0.95 * (double)free_b) {
            snprintf(why, len, "needs %.2f GiB of device memory%s with the inputs' copies and the reference, %.2f GiB free",
                     need / 1073741824.0, c->parts > 1 ? " on each GPU" : "", free_b / 1073741824.0);
            cudaSetDevice(ids[0]);
            return why;
        }
    }
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < c->parts && e == cudaSuccess; ++r)
        e = part_to_device(c, r);
    cudaSetDevice(ids[0]);
    for (int i = 0; i < h->n; ++i) {
        free(h->ref[i]);
        free(h->host[i]);
        h->ref[i] = NULL;
        h->host[i] = NULL;
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, len, "out of device memory for the case's tensors: %s", cudaGetErrorString(e));
        return why;
    }
    return NULL;
}

const char *kb_case_for(kb_case *c, const kb_job *job, char *why, size_t len)
{
    if (c->h.op && case_is(&c->h, job))
        return NULL;
    kb_case_free(c);
    double t0 = kb_now_s();
    if (device_total_b == 0) /* once: the plan's thread reads it */
        note_device_total();
    if (!take_ahead(job, &c->h)) {
        host_case_init(&c->h, job);
        host_case_make(&c->h);
    }
    kb_phase_host(c->h.inputs_s, c->h.reference_s);
    t0 = kb_phase_end(PH_HOST_WAIT, t0);
    const char *skip = NULL;
    if (c->h.no_room[0]) {
        snprintf(why, len, "%s", c->h.no_room);
        skip = why;
    } else
        skip = case_to_device(c, why, len);
    kb_phase_end(PH_ALLOC, t0);
    if (skip)
        kb_case_free(c);
    return skip;
}

void kb_case_release(kb_case *c)
{
    stop_ahead();
    kb_case_free(c);
    stage_free();
}

/* Inputs and inouts from their pristine copies; with `outputs`, outputs
 * poisoned with all-ones bytes: NaN in every floating type of the table
 * (and -1, no valid index, in i32). */
static cudaError_t restore(const kb_case *c, int outputs)
{
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < c->parts && e == cudaSuccess; ++r) {
        e = cudaSetDevice(c->device[r]);
        for (int i = 0; i < c->h.n && e == cudaSuccess; ++i) {
            const int k = i * c->parts + r;
            const kb_role role = c->h.t[i].role;
            if (role == KB_OUT && outputs)
                e = cudaMemset(c->dev[k], 0xff, part_bytes(c, i));
            else if (role == KB_INOUT || (role == KB_IN && outputs))
                e = cudaMemcpy(c->dev[k], c->pristine[k], part_bytes(c, i), cudaMemcpyDeviceToDevice);
        }
    }
    back_to_first_gpu();
    return e;
}

cudaError_t kb_case_reset(const kb_case *c) { return restore(c, 1); }

cudaError_t kb_case_changed_input(const kb_case *c, int *tensor, int64_t *bytes)
{
    cudaError_t e = cudaSuccess;
    *tensor = -1, *bytes = 0;
    for (int r = 0; r < c->parts && e == cudaSuccess && *tensor < 0; ++r) {
        e = cudaSetDevice(c->device[r]);
        for (int i = 0; i < c->h.n && e == cudaSuccess && *tensor < 0; ++i) {
            const int k = i * c->parts + r;
            if (c->h.t[i].role == KB_IN &&
                (e = kb_device_count_differing(c->dev[k], c->pristine[k], (int64_t)part_bytes(c, i), bytes)) ==
                    cudaSuccess &&
                *bytes)
                *tensor = i;
        }
    }
    back_to_first_gpu();
    return e;
}

cudaError_t kb_case_restore_inouts(const kb_case *c) { return c->has_inout ? restore(c, 0) : cudaSuccess; }

void kb_case_rows(const kb_case *c, int64_t *checked, int64_t *total)
{
    *checked = *total = 0;
    for (int i = 0; i < c->h.n; ++i)
        if (kb_is_checked(&c->h.t[i])) {
            *checked += c->h.nrows[i];
            *total += c->h.t[i].rows;
        }
}

/* NaN/Inf anywhere in one part of an output, and its sampled rows against
 * the reference, on the part's GPU. */
static cudaError_t check_part(const kb_case *c, int i, int r, kb_math math, kb_check *one, int64_t *nonfinite)
{
    const kb_tensor *t = &c->h.t[i];
    int k = i * c->parts + r;
    cudaError_t e = cudaSetDevice(c->device[r]);
    if (e == cudaSuccess)
        e = kb_device_count_nonfinite(c->dev[k], part_elems(c, i), t->dtype, nonfinite);
    if (e == cudaSuccess)
        e = kb_device_compare_rows(c->dev[k], t->dtype, t->row_len, c->drows[k], c->nrows[k], c->dref[k], math,
                                   t->reduction_len, one);
    return e;
}

/* How bad a part's check is, to pick the one a row reports: failing ones
 * first, then by error over tolerance. */
static double badness(const kb_check *c)
{
    double ratio = c->worst_tol > 0 ? c->max_abs_err / c->worst_tol : c->max_abs_err;
    return (c->pass ? 0 : 1e300) + (isnan(ratio) ? INFINITY : ratio);
}

/* Every part of every checked tensor.  Fills r->check with the worst, named
 * by its tensor. */
cudaError_t kb_case_check(const kb_case *c, kb_math math, kb_result *r)
{
    const kb_host_case *h = &c->h;
    kb_check worst = {0};
    int pass_all = 1, first = 1;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < h->n && e == cudaSuccess; ++i)
        for (int p = 0; p < c->parts && kb_is_checked(&h->t[i]) && e == cudaSuccess; ++p) {
            int64_t nonfinite;
            kb_check one;
            if ((e = check_part(c, i, p, math, &one, &nonfinite)) != cudaSuccess)
                break;
            one.pass = one.pass && nonfinite == 0;
            one.nonfinite = nonfinite;
            one.tensor = h->t[i].name;
            pass_all = pass_all && one.pass;
            if (first || badness(&one) > badness(&worst))
                worst = one;
            first = 0;
        }
    back_to_first_gpu();
    worst.pass = pass_all;
    r->check = worst;
    int64_t total;
    kb_case_rows(c, &r->rows_checked, &total);
    return e;
}
