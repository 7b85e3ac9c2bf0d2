/* The Megatron tensor-parallel ffn layer that tp_nccl and tp_overlap share,
 * over the run's R GPUs (kb_run_devices), rank r on the r-th:
 *   column-parallel W1: rank r holds columns [r F/R, (r+1) F/R) of W1 and b1,
 *   row-parallel W2:    the matching F/R rows of W2,
 *   h_r = relu(x W1_r + b1_r)         M x F/R, bf16, never leaves GPU r
 *   y_r = h_r W2_r (+ b2 on rank 0)   M x D, a partial sum of y
 *   y   = sum_r y_r                    one ncclAllReduce (sum, bf16)
 * which is the one-GPU layer's y, since relu acts column by column and
 * W2's rows split the F-long reduction.  Rank 0's partial is the harness's
 * y on the first GPU, reduced in place, so the all-reduce leaves the answer
 * there.
 *
 * Setup copies each rank's shards off the first GPU (cudaMemcpyPeer; in a
 * real layer the weights live sharded) and replicates x to every GPU (in
 * Megatron x arrives replicated, the previous layer's all-reduce output),
 * outside all timing; it also makes each rank's cuBLASLt handle, workspace,
 * h and partial y, and a plan per rank and token chunk (the heuristic sees
 * each chunk's pointers).  Launch enqueues GEMMs and all-reduces only. */
#ifndef KBENCH_FFN_TP_LAYER_H
#define KBENCH_FFN_TP_LAYER_H

#include <stdio.h>
#include <stdlib.h>
#include "ops/ffn.h"
#include "kernels/lt_gemm.h"
#include "kernels/nccl_comm.h"

enum { TP_MAX_CHUNKS = 4 };

typedef struct {
    cublasLtHandle_t lt;
    void *workspace;
    const uint16_t *x, *b2;              /* rank 0: the harness's x and b2; b2 NULL elsewhere */
    uint16_t *y;                         /* rank 0: the harness's y, else the partial y */
    uint16_t *w1, *b1, *w2, *h;          /* this rank's shards, and its M x F/R hidden */
    kb_lt_product p1[TP_MAX_CHUNKS], p2[TP_MAX_CHUNKS];
    cudaEvent_t computed[TP_MAX_CHUNKS]; /* tp_overlap: chunk c's GEMMs are done */
    cudaEvent_t reduced;                 /* tp_overlap: the last all-reduce is done */
} tp_rank;

typedef struct {
    kb_ranks g;                          /* g.stream[r]: rank r's GEMMs */
    ncclComm_t *comms;
    int D, Fr, chunks;
    int row0[TP_MAX_CHUNKS + 1];         /* chunk c is tokens [row0[c], row0[c+1]) */
    cudaStream_t comm[KB_MAX_RANKS];     /* tp_overlap: rank r's all-reduces */
    tp_rank rank[KB_MAX_RANKS];
} tp_layer;

static inline const char *tp_cuda(cudaError_t e) { return e == cudaSuccess ? NULL : cudaGetErrorString(e); }
static inline const char *tp_nccl(ncclResult_t e) { return e == ncclSuccess ? NULL : ncclGetErrorString(e); }

/* The shard split needs F divisible by the run's GPU count; fewer than two
 * GPUs is min_devices' SKIP, not this one. */
static const char *tp_unsupported(const kb_shape *s)
{
    static char why[96];
    const int *ids;
    const int R = kb_run_devices(&ids);
    if (R < 2 || s->d[2] % R == 0)
        return NULL;
    snprintf(why, sizeof why, "d_ff %lld does not split evenly over %d GPUs", (long long)s->d[2], R);
    return why;
}

static void tp_teardown(void *ctx)
{
    tp_layer *L = (tp_layer *)ctx;
    if (!L)
        return;
    for (int r = 0; r < L->g.n; ++r) {
        tp_rank *k = &L->rank[r];
        cudaSetDevice(L->g.device[r]);
        for (int c = 0; c < TP_MAX_CHUNKS; ++c) {
            kb_lt_destroy(&k->p1[c]);
            kb_lt_destroy(&k->p2[c]);
            if (k->computed[c])
                cudaEventDestroy(k->computed[c]);
        }
        if (k->reduced)
            cudaEventDestroy(k->reduced);
        if (L->comm[r])
            cudaStreamDestroy(L->comm[r]);
        if (k->lt)
            cublasLtDestroy(k->lt);
        cudaFree(k->workspace);
        cudaFree(k->w1);
        cudaFree(k->b1);
        cudaFree(k->w2);
        cudaFree(k->h);
        if (r > 0) { /* rank 0's x and y are the harness's */
            cudaFree((void *)k->x);
            cudaFree(k->y);
        }
    }
    kb_ranks_close(&L->g);
    free(L);
}

/* Rank r's buffers on its GPU (current): shards, hidden, and off the first
 * GPU its own x and partial y. */
static const char *tp_alloc(tp_layer *L, const kb_ffn_args *a, int r)
{
    tp_rank *k = &L->rank[r];
    const size_t D = a->D, Fr = L->Fr, M = a->M, b = sizeof(uint16_t);
    const char *err = tp_cuda(cudaMalloc(&k->w1, D * Fr * b));
    if (!err)
        err = tp_cuda(cudaMalloc(&k->b1, Fr * b));
    if (!err)
        err = tp_cuda(cudaMalloc(&k->w2, Fr * D * b));
    if (!err)
        err = tp_cuda(cudaMalloc(&k->h, M * Fr * b));
    if (!err)
        err = tp_cuda(cudaMalloc(&k->workspace, KB_LT_WORKSPACE_BYTES));
    if (!err && r > 0)
        err = tp_cuda(cudaMalloc((void **)&k->x, M * D * b));
    if (!err && r > 0)
        err = tp_cuda(cudaMalloc(&k->y, M * D * b));
    if (r == 0) {
        k->x = a->x16;
        k->y = a->y16;
        k->b2 = a->b2_16;
    }
    return err;
}

/* Rank r's shards from the first GPU: W1's column block (strided, so a 3D
 * peer copy of D rows), b1's slice, W2's row block, and x for r > 0. */
static const char *tp_copy_shards(tp_layer *L, const kb_ffn_args *a, int r)
{
    tp_rank *k = &L->rank[r];
    const int src = L->g.device[0], dst = L->g.device[r];
    const size_t D = a->D, F = a->F, Fr = L->Fr, M = a->M, b = sizeof(uint16_t);
    cudaMemcpy3DPeerParms p = {};
    p.srcPtr = make_cudaPitchedPtr((void *)(a->w1_16 + r * Fr), F * b, Fr * b, D);
    p.srcDevice = src;
    p.dstPtr = make_cudaPitchedPtr(k->w1, Fr * b, Fr * b, D);
    p.dstDevice = dst;
    p.extent = make_cudaExtent(Fr * b, D, 1);
    const char *err = tp_cuda(cudaMemcpy3DPeer(&p));
    if (!err)
        err = tp_cuda(cudaMemcpyPeer(k->b1, dst, a->b1_16 + r * Fr, src, Fr * b));
    if (!err)
        err = tp_cuda(cudaMemcpyPeer(k->w2, dst, a->w2_16 + r * Fr * D, src, Fr * D * b));
    if (!err && r > 0)
        err = tp_cuda(cudaMemcpyPeer((void *)k->x, dst, a->x16, src, M * D * b));
    return err;
}

/* Rank r's two products for each token chunk; only rank 0's second one
 * adds b2, so the sum over ranks adds it once. */
static const char *tp_plan(tp_layer *L, int r)
{
    tp_rank *k = &L->rank[r];
    const int D = L->D, Fr = L->Fr;
    const char *err = cublasLtCreate(&k->lt) == CUBLAS_STATUS_SUCCESS ? NULL : "cannot create a cuBLASLt handle";
    for (int c = 0; c < L->chunks && !err; ++c) {
        const int m = L->row0[c + 1] - L->row0[c];
        const size_t t0 = (size_t)L->row0[c];
        err = kb_lt_plan(&k->p1[c], k->lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, m, Fr, D, CUBLASLT_EPILOGUE_RELU_BIAS,
                         k->b1, k->x + t0 * D, k->w1, k->h + t0 * Fr);
        if (!err)
            err = kb_lt_plan(&k->p2[c], k->lt, CUBLAS_COMPUTE_32F, CUDA_R_16BF, m, D, Fr,
                             k->b2 ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, k->b2,
                             k->h + t0 * Fr, k->w2, k->y + t0 * D);
    }
    return err;
}

/* tp_overlap: rank r's communication stream, at the device's highest
 * priority so that each all-reduce's blocks are scheduled as soon as the
 * GEMMs free an SM, and its events. */
static const char *tp_comm_stream(tp_layer *L, int r)
{
    tp_rank *k = &L->rank[r];
    int least = 0, greatest = 0;
    const char *err = tp_cuda(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    if (!err)
        err = tp_cuda(cudaStreamCreateWithPriority(&L->comm[r], cudaStreamNonBlocking, greatest));
    for (int c = 0; c < L->chunks && !err; ++c)
        err = tp_cuda(cudaEventCreateWithFlags(&k->computed[c], cudaEventDisableTiming));
    if (!err)
        err = tp_cuda(cudaEventCreateWithFlags(&k->reduced, cudaEventDisableTiming));
    return err;
}

static const char *tp_setup_ranks(tp_layer *L, const kb_ffn_args *a, int overlap)
{
    const char *err = kb_ranks_open(&L->g);
    if (!err)
        err = kb_nccl_comms(&L->comms);
    L->Fr = a->F / L->g.n; /* kb_ranks_open counts the GPUs first; tp_unsupported checked the split */
    for (int r = 0; r < L->g.n && !err; ++r) {
        err = tp_cuda(cudaSetDevice(L->g.device[r]));
        if (!err)
            err = tp_alloc(L, a, r);
        if (!err)
            err = tp_copy_shards(L, a, r);
        if (!err)
            err = tp_plan(L, r);
        if (!err && overlap)
            err = tp_comm_stream(L, r);
        if (!err) /* the copies are done before anything is timed */
            err = tp_cuda(cudaDeviceSynchronize());
    }
    return err;
}

/* The layer over the run's GPUs, its M tokens in `chunks` chunks (no more
 * chunks than tokens), with communication streams when `overlap`. */
static const char *tp_setup(const void *args, void **ctx, int chunks, int overlap)
{
    const kb_ffn_args *a = (const kb_ffn_args *)args;
    tp_layer *L = (tp_layer *)calloc(1, sizeof *L);
    if (!L)
        return "out of host memory";
    L->D = a->D;
    L->chunks = chunks < a->M ? chunks : a->M;
    for (int c = 0; c <= L->chunks; ++c)
        L->row0[c] = (int)((int64_t)c * a->M / L->chunks);
    const char *err = tp_setup_ranks(L, a, overlap);
    if (L->g.n > 0)
        cudaSetDevice(L->g.device[0]);
    if (err) {
        tp_teardown(L);
        return err;
    }
    *ctx = L;
    return NULL;
}

/* Rank r's GEMMs for chunk c on stream s (on rank r's GPU, which this
 * leaves current). */
static const char *tp_gemms(const tp_layer *L, int r, int c, cudaStream_t s)
{
    const tp_rank *k = &L->rank[r];
    const size_t t0 = (size_t)L->row0[c], D = L->D, Fr = L->Fr;
    const char *err = tp_cuda(cudaSetDevice(L->g.device[r]));
    if (!err)
        err = kb_lt_run(&k->p1[c], k->lt, k->b1, k->x + t0 * D, k->w1, k->h + t0 * Fr, k->workspace, s);
    if (!err)
        err = kb_lt_run(&k->p2[c], k->lt, k->b2, k->h + t0 * Fr, k->w2, k->y + t0 * D, k->workspace, s);
    return err;
}

/* The in-place sum of chunk c's partial y over every rank, rank r's on
 * streams[r].  One thread drives every rank, so the calls form one group. */
static const char *tp_all_reduce(const tp_layer *L, int c, const cudaStream_t *streams)
{
    const size_t t0 = (size_t)L->row0[c] * L->D, n = (size_t)(L->row0[c + 1] - L->row0[c]) * L->D;
    const char *err = tp_nccl(ncclGroupStart());
    if (err)
        return err;
    for (int r = 0; r < L->g.n && !err; ++r)
        err = tp_nccl(ncclAllReduce(L->rank[r].y + t0, L->rank[r].y + t0, n, kb_nccl_type(KB_BF16), ncclSum,
                                    L->comms[r], streams[r]));
    const char *end = tp_nccl(ncclGroupEnd()); /* owed after every GroupStart */
    return err ? err : end;
}

#endif
