/* allreduce naive in T (float or __nv_bfloat16): the code of naive.cu and
 * naive.cu, whose headers say why. */
#ifndef KBENCH_ALLREDUCE_NAIVE_CUH
#define KBENCH_ALLREDUCE_NAIVE_CUH

#include "kernels/p2p.cuh"

/* out = in0 + the R - 1 peers' inputs gathered in `gathered`, one element a
 * thread, in fp32 in rank order. */
template <typename T>
__global__ void allreduce_naive_sum(int64_t n, int ranks, const T *in0, const T *gathered, T *out)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = kb_to_f32(in0[i]);
    for (int p = 1; p < ranks; ++p)
        acc += kb_to_f32(gathered[(p - 1) * n + i]);
    out[i] = kb_from_f32<T>(acc);
}

typedef struct {
    kb_ranks ranks;
    void *gathered;                    /* on GPU 0: the peers' inputs, one after the other */
    cudaEvent_t ready[KB_MAX_RANKS];   /* on GPU p: its input is ready */
    cudaEvent_t reduced;               /* on GPU 0: the sum is in its output */
} allreduce_naive_ctx;

static inline void allreduce_naive_teardown(void *ctx)
{
    allreduce_naive_ctx *c = (allreduce_naive_ctx *)ctx;
    for (int r = 0; r < c->ranks.n; ++r) {
        cudaSetDevice(c->ranks.device[r]);
        if (c->ready[r])
            cudaEventDestroy(c->ready[r]);
    }
    if (c->ranks.n)
        cudaSetDevice(c->ranks.device[0]);
    if (c->reduced)
        cudaEventDestroy(c->reduced);
    cudaFree(c->gathered);
    kb_ranks_close(&c->ranks);
    free(c);
}

static inline const char *allreduce_naive_open(allreduce_naive_ctx *c, const kb_collective_args *a,
                                               size_t elsize)
{
    const char *why = kb_ranks_open(&c->ranks);
    if (why)
        return why;
    if (c->ranks.n != a->ranks)
        return "the shape's ranks differ from the run's GPUs";
    /* Direct copies over NVLink or PCIe where the GPUs allow it (the p2p
     * variants need it anyway); cudaMemcpyPeerAsync stages through the host
     * where not, which is slower but still right. */
    kb_enable_peers();
    cudaError_t e = cudaSuccess;
    for (int r = 1; r < a->ranks && e == cudaSuccess; ++r) {
        e = cudaSetDevice(c->ranks.device[r]);
        if (e == cudaSuccess)
            e = cudaEventCreateWithFlags(&c->ready[r], cudaEventDisableTiming);
    }
    if (e == cudaSuccess)
        e = cudaSetDevice(c->ranks.device[0]);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&c->reduced, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaMalloc(&c->gathered, (size_t)(a->ranks - 1) * (size_t)a->n * elsize);
    return kb_cuda_status(e);
}

template <typename T>
static const char *allreduce_naive_setup(const void *args, void **ctx)
{
    allreduce_naive_ctx *c = (allreduce_naive_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *why = allreduce_naive_open(c, (const kb_collective_args *)args, sizeof(T));
    if (why) {
        allreduce_naive_teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

/* GPU 0 pulls each peer's input once that peer's stream has it ready. */
static inline cudaError_t allreduce_naive_gather(allreduce_naive_ctx *c, const kb_collective_args *a,
                                                 size_t bytes)
{
    cudaError_t e = cudaSuccess;
    for (int p = 1; p < a->ranks && e == cudaSuccess; ++p) {
        e = cudaSetDevice(c->ranks.device[p]);
        if (e == cudaSuccess)
            e = cudaEventRecord(c->ready[p], c->ranks.stream[p]);
    }
    if (e == cudaSuccess)
        e = cudaSetDevice(c->ranks.device[0]);
    for (int p = 1; p < a->ranks && e == cudaSuccess; ++p) {
        e = cudaStreamWaitEvent(c->ranks.stream[0], c->ready[p], 0);
        if (e == cudaSuccess)
            e = cudaMemcpyPeerAsync((char *)c->gathered + (p - 1) * bytes, c->ranks.device[0], a->in[p],
                                    c->ranks.device[p], bytes, c->ranks.stream[0]);
    }
    return e;
}

/* Each peer pulls GPU 0's output once GPU 0 has recorded `reduced`. */
static inline cudaError_t allreduce_naive_broadcast(allreduce_naive_ctx *c, const kb_collective_args *a,
                                                    size_t bytes)
{
    cudaError_t e = cudaEventRecord(c->reduced, c->ranks.stream[0]);
    for (int p = 1; p < a->ranks && e == cudaSuccess; ++p) {
        e = cudaSetDevice(c->ranks.device[p]);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(c->ranks.stream[p], c->reduced, 0);
        if (e == cudaSuccess)
            e = cudaMemcpyPeerAsync(a->out[p], c->ranks.device[p], a->out[0], c->ranks.device[0], bytes,
                                    c->ranks.stream[p]);
    }
    return e;
}

template <typename T>
static const char *allreduce_naive_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    allreduce_naive_ctx *c = (allreduce_naive_ctx *)ctx;
    const size_t bytes = (size_t)a->n * sizeof(T);
    const char *e = kb_ranks_fork(&c->ranks, stream);
    if (!e)
        e = kb_cuda_status(allreduce_naive_gather(c, a, bytes));
    if (!e) {
        allreduce_naive_sum<T><<<(unsigned)KB_CEIL_DIV(a->n, 256), 256, 0, c->ranks.stream[0]>>>(
            a->n, a->ranks, (const T *)a->in[0], (const T *)c->gathered, (T *)a->out[0]);
        e = kb_cuda_status(cudaGetLastError());
    }
    if (!e)
        e = kb_cuda_status(allreduce_naive_broadcast(c, a, bytes));
    const char *joined = kb_ranks_join(&c->ranks, stream);
    return e ? e : joined;
}

#endif
