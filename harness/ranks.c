/* The run's GPUs, as distributed ops and tensor-parallel variants see them:
 * the device list, peer access, and per-GPU streams forked from and joined
 * back into the stream the harness times on the first GPU. */
#include <stdio.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"

static int run_ids[KB_MAX_RANKS], run_n;
/* One stream per GPU of the run, shared by every kb_ranks of the process,
 * so the harness can time each GPU's stream itself (kb_ranks_set_direct). */
static cudaStream_t rank_streams[KB_MAX_RANKS];
static int direct;

void kb_set_run_devices(const int *ids, int n)
{
    run_n = n < KB_MAX_RANKS ? n : KB_MAX_RANKS;
    for (int i = 0; i < run_n; ++i)
        run_ids[i] = ids[i];
}

int kb_devices_spanned(const char *devices)
{
    int n = 1;
    for (const char *c = devices; *c; ++c)
        n += *c == '+';
    return n;
}

int kb_run_devices(const int **ids)
{
    if (run_n == 0) { /* a run that named none: the current GPU alone */
        cudaGetDevice(&run_ids[0]);
        run_n = 1;
    }
    *ids = run_ids;
    return run_n;
}

const char *kb_enable_peers(void)
{
    static int done;
    static char why[160];
    const int *ids;
    int n = kb_run_devices(&ids);
    if (done)
        return why[0] ? why : NULL;
    done = 1;
    for (int i = 0; i < n && !why[0]; ++i)
        for (int j = 0; j < n && !why[0]; ++j) {
            int can = 0;
            if (i == j)
                continue;
            cudaDeviceCanAccessPeer(&can, ids[i], ids[j]);
            cudaSetDevice(ids[i]);
            cudaError_t e = can ? cudaDeviceEnablePeerAccess(ids[j], 0) : cudaErrorPeerAccessUnsupported;
            if (e == cudaErrorPeerAccessAlreadyEnabled) { /* not an error: clear it */
                cudaGetLastError();
                e = cudaSuccess;
            }
            if (e != cudaSuccess)
                snprintf(why, sizeof why, "GPU %d cannot reach GPU %d's memory: %s", ids[i], ids[j],
                         cudaGetErrorString(e));
        }
    cudaSetDevice(ids[0]);
    return why[0] ? why : NULL;
}

const char *kb_ranks_open(kb_ranks *g)
{
    const int *ids;
    cudaError_t e = cudaSuccess;
    g->n = kb_run_devices(&ids);
    cudaSetDevice(ids[0]);
    e = cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming);
    for (int r = 0; r < g->n && e == cudaSuccess; ++r) {
        g->device[r] = ids[r];
        e = cudaSetDevice(ids[r]);
        if (e == cudaSuccess && !rank_streams[r])
            e = cudaStreamCreateWithFlags(&rank_streams[r], cudaStreamNonBlocking);
        g->stream[r] = rank_streams[r];
        if (e == cudaSuccess)
            e = cudaEventCreateWithFlags(&g->joined[r], cudaEventDisableTiming);
    }
    cudaSetDevice(ids[0]);
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

void kb_ranks_close(kb_ranks *g)
{
    for (int r = 0; r < g->n; ++r) {
        cudaSetDevice(g->device[r]);
        if (g->joined[r])
            cudaEventDestroy(g->joined[r]);
    }
    if (g->n)
        cudaSetDevice(g->device[0]);
    if (g->fork)
        cudaEventDestroy(g->fork);
}

void kb_ranks_set_direct(int on) { direct = on; }

const char *kb_ranks_fork(kb_ranks *g, cudaStream_t stream)
{
    if (direct)
        return NULL;
    cudaError_t e = cudaEventRecord(g->fork, stream);
    for (int r = 0; r < g->n && e == cudaSuccess; ++r)
        e = cudaStreamWaitEvent(g->stream[r], g->fork, 0);
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

const char *kb_ranks_join(kb_ranks *g, cudaStream_t stream)
{
    if (direct) /* the first GPU current again, as after a join */
        return kb_cuda_status(cudaSetDevice(g->device[0]));
    cudaError_t e = cudaSuccess;
    for (int r = 0; r < g->n && e == cudaSuccess; ++r) {
        e = cudaSetDevice(g->device[r]);
        if (e == cudaSuccess)
            e = cudaEventRecord(g->joined[r], g->stream[r]);
    }
    if (e == cudaSuccess)
        e = cudaSetDevice(g->device[0]);
    for (int r = 0; r < g->n && e == cudaSuccess; ++r)
        e = cudaStreamWaitEvent(stream, g->joined[r], 0);
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}
