/* allreduce p2p_lamport in T (float or __nv_bfloat16): the code of
 * p2p_lamport.cu and p2p_lamport.cu, whose headers say why.
 *
 * Each GPU owns three receive buffers of R slots; slot q of buffer k holds
 * rank q's input at the launches whose epoch is k mod 3.  An empty element
 * holds -0.0, which no sent element does (senders turn -0.0 into +0.0), so
 * a reader knows an element has arrived when it is not -0.0: the data is
 * its own flag.  A launch writes buffer e mod 3 of every peer, reads its
 * own, and empties its own (e - 1) mod 3, which no GPU can be writing: a
 * peer is at most one launch ahead, writing (e + 1) mod 3. */
#ifndef KBENCH_ALLREDUCE_P2P_LAMPORT_CUH
#define KBENCH_ALLREDUCE_P2P_LAMPORT_CUH

#include <cstddef>
#include "kernels/p2p.cuh"

/* Messages above this SKIP: the buffers hold three copies of every peer's. */
#define KB_LAMPORT_MAX_BYTES (16 << 20)

typedef struct {
    void *recv[KB_MAX_RANKS]; /* on GPU r: 3 buffers x R slots x `slot` elements */
    int64_t slot;             /* N rounded up to whole 16-byte vectors */
} kb_lamport_bufs;

typedef struct {
    kb_p2p_ctx p2p; /* first, so kb_p2p_teardown frees the whole struct; its flags go unused */
    kb_lamport_bufs bufs;
} kb_lamport_ctx;

/* An element's bits: the sign bit alone is -0.0, the empty mark. */
template <typename T> struct kb_bits;
template <> struct kb_bits<float> { typedef unsigned type; };
template <> struct kb_bits<__nv_bfloat16> { typedef unsigned short type; };
template <typename T> using kb_bits_t = typename kb_bits<T>::type;
template <typename T> constexpr kb_bits_t<T> kb_empty_bits = (kb_bits_t<T>)(1u << (8 * sizeof(T) - 1));
/* Elements of T in a 16-byte vector, as their bits. */
template <typename T> struct kb_lanes { kb_bits_t<T> x[kb_vec_len<T>]; };

template <typename T> __device__ __forceinline__ kb_bits_t<T> kb_lamport_clean(kb_bits_t<T> b)
{
    return b == kb_empty_bits<T> ? 0 : b;
}

template <typename T> __device__ __forceinline__ uint4 kb_lamport_clean(uint4 v)
{
    kb_lanes<T> l = *reinterpret_cast<kb_lanes<T> *>(&v);
#pragma unroll
    for (int k = 0; k < kb_vec_len<T>; ++k)
        l.x[k] = kb_lamport_clean<T>(l.x[k]);
    return *reinterpret_cast<uint4 *>(&l);
}

template <typename T> __device__ __forceinline__ bool kb_lamport_arrived(uint4 v)
{
    const kb_lanes<T> l = *reinterpret_cast<kb_lanes<T> *>(&v);
    bool all = true;
#pragma unroll
    for (int k = 0; k < kb_vec_len<T>; ++k)
        all &= l.x[k] != kb_empty_bits<T>;
    return all;
}

template <typename T> __device__ __forceinline__ uint4 kb_lamport_empty_vec()
{
    kb_lanes<T> l;
#pragma unroll
    for (int k = 0; k < kb_vec_len<T>; ++k)
        l.x[k] = kb_empty_bits<T>;
    return *reinterpret_cast<uint4 *>(&l);
}

/* Volatile: past L1, from the L2 that the peers' NVLink writes land in. */
__device__ __forceinline__ uint4 kb_load_volatile(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

/* The vector at p once every lane has arrived; a peer lost for 10 s traps. */
template <typename T> __device__ __forceinline__ uint4 kb_lamport_wait(const uint4 *p)
{
    uint4 v = kb_load_volatile(p);
    if (kb_lamport_arrived<T>(v))
        return v;
    const unsigned long long t0 = kb_globaltimer_ns();
    while (!kb_lamport_arrived<T>(v = kb_load_volatile(p)))
        if (kb_globaltimer_ns() - t0 > KB_P2P_TIMEOUT_NS)
            __trap();
    return v;
}

template <typename T> __device__ __forceinline__ kb_bits_t<T> kb_lamport_wait(const kb_bits_t<T> *p)
{
    const volatile kb_bits_t<T> *q = p;
    kb_bits_t<T> b;
    const unsigned long long t0 = kb_globaltimer_ns();
    while ((b = *q) == kb_empty_bits<T>)
        if (kb_globaltimer_ns() - t0 > KB_P2P_TIMEOUT_NS)
            __trap();
    return b;
}

template <typename T> __device__ __forceinline__ T kb_from_bits(kb_bits_t<T> b)
{
    return *reinterpret_cast<T *>(&b);
}

/* Slot q of buffer k on the GPU that owns `recv`. */
template <typename T>
__device__ __forceinline__ T *kb_lamport_slot(void *recv, const kb_lamport_bufs &b, int ranks, int k, int q)
{
    return (T *)recv + ((int64_t)k * ranks + q) * b.slot;
}

template <typename T>
__global__ void __launch_bounds__(KB_P2P_THREADS)
    allreduce_lamport_kernel(kb_collective_args a, kb_lamport_bufs b, int rank, unsigned epoch)
{
    typedef kb_bits_t<T> B;
    constexpr int V = kb_vec_len<T>;
    const int R = a.ranks, cur = epoch % 3, old = (epoch + 2) % 3;
    const int64_t n = a.n, nv = n / V;
    const kb_p2p_share sh;
    const T *in = (const T *)a.in[rank];
    T *out = (T *)a.out[rank];

    /* Push: our input into slot `rank` of every peer's current buffer. */
    for (int64_t i = sh.first; i < nv; i += sh.stride) {
        const uint4 v = kb_lamport_clean<T>(reinterpret_cast<const uint4 *>(in)[i]);
        for (int q = 0; q < R; ++q)
            if (q != rank)
                reinterpret_cast<uint4 *>(kb_lamport_slot<T>(b.recv[q], b, R, cur, rank))[i] = v;
    }
    for (int64_t i = nv * V + sh.first; i < n; i += sh.stride) {
        const B x = kb_lamport_clean<T>(reinterpret_cast<const B *>(in)[i]);
        for (int q = 0; q < R; ++q)
            if (q != rank)
                reinterpret_cast<B *>(kb_lamport_slot<T>(b.recv[q], b, R, cur, rank))[i] = x;
    }
    /* Empty our previous buffer for the launch after next. */
    uint4 *prev = reinterpret_cast<uint4 *>(kb_lamport_slot<T>(b.recv[rank], b, R, old, 0));
    const uint4 empty = kb_lamport_empty_vec<T>();
    for (int64_t i = sh.first; i < R * b.slot / V; i += sh.stride)
        prev[i] = empty;
    /* Sum every rank's vector, in rank order, our own straight from `in`. */
    for (int64_t i = sh.first; i < nv; i += sh.stride) {
        float acc[V] = {};
        for (int p = 0; p < R; ++p) {
            const uint4 *src = p == rank ? reinterpret_cast<const uint4 *>(in) + i
                                         : reinterpret_cast<const uint4 *>(
                                               kb_lamport_slot<T>(b.recv[rank], b, R, cur, p)) + i;
            const uint4 v = p == rank ? kb_lamport_clean<T>(*src) : kb_lamport_wait<T>(src);
            kb_vec_add<T>(acc, v);
        }
        kb_vec_store(out + i * V, acc);
    }
    for (int64_t i = nv * V + sh.first; i < n; i += sh.stride) {
        float acc = 0;
        for (int p = 0; p < R; ++p) {
            const B x = p == rank ? kb_lamport_clean<T>(reinterpret_cast<const B *>(in)[i])
                                  : kb_lamport_wait<T>(
                                        reinterpret_cast<const B *>(kb_lamport_slot<T>(b.recv[rank], b, R, cur, p)) + i);
            acc += kb_to_f32(kb_from_bits<T>(x));
        }
        out[i] = kb_from_f32<T>(acc);
    }
}

template <typename T> __global__ void lamport_fill_empty(uint4 *p, int64_t nvec)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = kb_lamport_empty_vec<T>();
}

template <typename T> static const char *allreduce_lamport_unsupported(const kb_shape *s)
{
    return s->d[0] > KB_LAMPORT_MAX_BYTES / (int64_t)sizeof(T)
               ? "keeps three copies of every peer's message: messages up to 16 MB"
               : NULL;
}

static void allreduce_lamport_teardown(void *ctx)
{
    kb_lamport_ctx *c = (kb_lamport_ctx *)ctx;
    for (int r = 0; r < c->p2p.ranks.n; ++r)
        if (c->bufs.recv[r]) {
            cudaSetDevice(c->p2p.ranks.device[r]);
            cudaFree(c->bufs.recv[r]);
        }
    static_assert(offsetof(kb_lamport_ctx, p2p) == 0, "kb_p2p_teardown frees the context");
    kb_p2p_teardown(&c->p2p);
}

/* The p2p state, then three empty buffers of R slots on every GPU. */
template <typename T> static const char *allreduce_lamport_setup(const void *args, void **ctx)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_lamport_ctx *c = (kb_lamport_ctx *)calloc(1, sizeof *c);
    if (!c)
        return "out of host memory";
    const char *why = kb_p2p_open(&c->p2p, a, (const void *)allreduce_lamport_kernel<T>);
    c->bufs.slot = KB_CEIL_DIV(a->n, kb_vec_len<T>) * kb_vec_len<T>;
    const int64_t nvec = 3 * a->ranks * c->bufs.slot / kb_vec_len<T>;
    for (int r = 0; r < a->ranks && !why; ++r) {
        why = kb_cuda_status(cudaSetDevice(c->p2p.ranks.device[r]));
        if (!why)
            why = kb_cuda_status(cudaMalloc(&c->bufs.recv[r], nvec * sizeof(uint4)));
        if (!why) {
            lamport_fill_empty<T><<<256, 256>>>((uint4 *)c->bufs.recv[r], nvec);
            why = kb_cuda_status(cudaDeviceSynchronize());
        }
    }
    if (c->p2p.ranks.n)
        cudaSetDevice(c->p2p.ranks.device[0]);
    if (why) {
        allreduce_lamport_teardown(c);
        return why;
    }
    *ctx = c;
    return NULL;
}

template <typename T> static const char *allreduce_lamport_launch(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_lamport_ctx *c = (kb_lamport_ctx *)ctx;
    const int grid = kb_p2p_grid(&c->p2p, KB_CEIL_DIV(a->n, kb_vec_len<T>));
    return kb_p2p_launch(&c->p2p, stream, 1, [&](kb_p2p_sync s, unsigned epoch, cudaStream_t st) {
        allreduce_lamport_kernel<T><<<grid, KB_P2P_THREADS, 0, st>>>(*a, c->bufs, s.rank, epoch);
    });
}

#endif
