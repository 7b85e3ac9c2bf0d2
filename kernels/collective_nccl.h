/* The collectives' NCCL baselines: the run's communicators
 * (kb_nccl_comms), one call per rank between ncclGroupStart and
 * ncclGroupEnd, each on its GPU's stream from kb_ranks, out of place. */
#ifndef KBENCH_COLLECTIVE_NCCL_H
#define KBENCH_COLLECTIVE_NCCL_H

#include <cstdlib>
#include "ops/collective.h"
#include "kernels/nccl_comm.h"

typedef struct {
    kb_ranks ranks;
    ncclComm_t *comms;
} kb_nccl_ctx;

static inline void kb_nccl_teardown(void *ctx)
{
    kb_nccl_ctx *c = (kb_nccl_ctx *)ctx;
    kb_ranks_close(&c->ranks);
    free(c);
}

static inline const char *kb_nccl_setup(const void *args, void **ctx)
{
    kb_nccl_ctx *c = (kb_nccl_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *why = kb_nccl_comms(&c->comms);
    if (!why)
        why = kb_ranks_open(&c->ranks);
    if (!why && c->ranks.n != ((const kb_collective_args *)args)->ranks)
        why = "the shape's ranks differ from the run's GPUs";
    if (why) {
        kb_nccl_teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

/* call(r, comm, stream) enqueues rank r's part of the collective. */
template <typename F>
static const char *kb_nccl_launch(void *ctx, cudaStream_t stream, F call)
{
    kb_nccl_ctx *c = (kb_nccl_ctx *)ctx;
    const char *e = kb_ranks_fork(&c->ranks, stream);
    if (e)
        return e;
    ncclResult_t res = ncclGroupStart();
    for (int r = 0; r < c->ranks.n && res == ncclSuccess; ++r)
        res = call(r, c->comms[r], c->ranks.stream[r]);
    /* Ends the group even after a failed call, which leaves NCCL's group state clean. */
    ncclResult_t ended = ncclGroupEnd();
    const char *joined = kb_ranks_join(&c->ranks, stream);
    res = res != ncclSuccess ? res : ended;
    return res != ncclSuccess ? ncclGetErrorString(res) : joined;
}

template <kb_dtype D>
static const char *kb_nccl_allreduce(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    return kb_nccl_launch(ctx, stream, [&](int r, ncclComm_t comm, cudaStream_t s) {
        return ncclAllReduce(a->in[r], a->out[r], (size_t)a->n, kb_nccl_type(D), ncclSum, comm, s);
    });
}

template <kb_dtype D>
static const char *kb_nccl_allgather(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    return kb_nccl_launch(ctx, stream, [&](int r, ncclComm_t comm, cudaStream_t s) {
        return ncclAllGather(a->in[r], a->out[r], (size_t)a->n, kb_nccl_type(D), comm, s);
    });
}

template <kb_dtype D>
static const char *kb_nccl_reduce_scatter(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    return kb_nccl_launch(ctx, stream, [&](int r, ncclComm_t comm, cudaStream_t s) {
        return ncclReduceScatter(a->in[r], a->out[r], (size_t)a->n, kb_nccl_type(D), ncclSum, comm, s);
    });
}

#endif
