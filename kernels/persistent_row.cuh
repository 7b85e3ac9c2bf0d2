/* Long rows streamed by persistent blocks, shared by softmax/persistent_row
 * and layernorm/persistent_row: split_row (kernels/split_row.cuh) made a
 * pipeline.
 *
 * split_row gives each 8192-float chunk a block of its own, and that
 * block's life is a chain of round trips (ticket, loads, partials) during
 * which its shared memory holds data but moves none.  Here one block per
 * SM lives for the whole launch and walks its chunks in rounds:
 *
 *   - round r gives block b chunk k = r * G + b of the R * S (G, the grid,
 *     is every resident block; a multiple of S for layernorm, so that a
 *     block's chunk, and with it its gamma and beta registers, never
 *     changes).  Positions step by G each round without a division;
 *   - the chunks come into a ring of STAGES = 6 shared-memory buffers by
 *     cp.async, each thread copying the columns it will read, so no
 *     barrier is needed for the data;
 *   - in round r a block reduces chunk r and publishes the partial, then
 *     merges the partials of the row of round r - LAG (LAG = 3: they are
 *     published two rounds before their loads are issued, a round before
 *     they are needed) and writes that chunk from its buffer, which then
 *     takes round r - LAG + STAGES: two rounds of loads are always in
 *     flight; the last LAG rounds are stored after the loop;
 *   - a partial is two 64-bit words, each a float tagged with the launch's
 *     epoch, stored and loaded relaxed: a word with this launch's tag holds
 *     this launch's value, so there is no counter, no fence and nothing to
 *     reset between launches;
 *   - each of the 16 column warps merges the row's partials itself, and a
 *     17th warp owns no columns: it merges the column warps' partials of
 *     the chunk and publishes, off their path.  One barrier per round
 *     keeps the warps in step.
 *
 * Waiting on other blocks needs them resident: the launch is cooperative,
 * so it fails rather than deadlocks when G blocks do not fit at once.  A
 * block waits only on partials that every block publishes at least a round
 * before, without waiting on anything itself, so every wait ends.
 *
 * The measurements that shaped it (H100, % of the copy ceiling at
 * 512x65536, softmax / layernorm): one barrier-heavy block per round with
 * accurate expf and IEEE divisions, 67 / 66 (instruction-bound: 58
 * instructions per element); ex2.approx and one barrier per round, 85-88 /
 * 68; the row's first element by cp.async instead of a load a round ahead
 * (whose latency under load exceeds a round), 87 / 77; every warp
 * gathering for itself and a fast Welford division, 87 / 84; positions
 * stepped instead of divided, 89 / 89; the publishing warp, about +1 for
 * layernorm; the last LAG rounds stored without barriers, +0.5-1.5.
 * LAG = 2 cost 5-10 points (the partials' loads wait), and no
 * barrier at all (an mbarrier to the publisher) 2-8 points: the warps
 * drift apart.  Stages 5-7 and LAG 4 were within a point.  Shorter
 * chunks for layernorm so that S divides 132 blocks (11 chunks of 5960 at
 * C = 65536 instead of 8 of 8192 on 128 blocks) cost 8-9 points: a round
 * has a fixed cost, and more rounds pay it more often.  At 512 MB the
 * same kernels reach 92-93%: between 256 and 512 MB they run at about 96%
 * of the ceiling, and a launch costs some 7 us more than its bytes at that
 * rate (memcpy: 5.6 us), the pipeline's fill and drain. */
#ifndef KBENCH_PERSISTENT_ROW_CUH
#define KBENCH_PERSISTENT_ROW_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "kernels/reduce.cuh"
#include "kernels/cp_async.cuh"

#define KB_PERSIST_CHUNK 8192
#define KB_PERSIST_BLOCK 512 /* threads that own columns */
#define KB_PERSIST_THREADS (KB_PERSIST_BLOCK + 32) /* and one warp that merges and publishes */
#define KB_PERSIST_ITEMS (KB_PERSIST_CHUNK / KB_PERSIST_BLOCK) /* floats per thread per chunk */
#define KB_PERSIST_STAGE (KB_PERSIST_CHUNK + 32) /* floats per buffer; then a float per warp */
#define KB_PERSIST_STAGES 6 /* shared-memory buffers of a chunk each */
#define KB_PERSIST_LAG 3    /* rounds between a chunk's reduction and its store */
#define KB_PERSIST_MAX_S 32 /* one warp merges a row's partials */

typedef struct {
    unsigned long long *partials; /* R * S pairs of tagged words */
    int R, S, rounds;
    unsigned grid, epoch;
    const void *kernel; /* the instantiation for this C */
    size_t smem;
} KbPersistRow;

/* A variant's teardown. */
static inline void kb_persist_row_teardown(void *ctx)
{
    KbPersistRow *p = (KbPersistRow *)ctx;
    cudaFree(p->partials);
    free(p);
}

/* Why rows of C floats are not for persistent_row, or NULL. */
static inline const char *kb_persist_row_unsupported(int64_t C)
{
    if (C < KB_LONG_ROW_MIN_C)
        return "persistent_row is for C >= 32768 (shorter rows fit one block's registers)";
    if (C > (int64_t)KB_PERSIST_MAX_S * KB_PERSIST_CHUNK)
        return "persistent_row is for C <= 262144 (one warp merges a row's partials)";
    return NULL;
}

/* Grid and partials for R rows of C floats, checked against what the
 * device holds at once; NULL or a reason (and nothing left allocated). */
static inline const char *kb_persist_row_alloc(int64_t R, int64_t C, bool fixed_chunk, KbPersistRow *p)
{
    int dev = 0, sms = 0, per_sm = 0, coop = 0;
    const void *kernel = p->kernel;
    const size_t smem = p->smem;
    p->R = (int)R;
    p->S = (int)KB_CEIL_DIV(C, KB_PERSIST_CHUNK);
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, KB_PERSIST_THREADS, smem) != cudaSuccess) {
        cudaGetLastError();
        return "cannot query the device";
    }
    if (!coop)
        return "the device has no cooperative launch";
    p->grid = (unsigned)(fixed_chunk ? sms * per_sm / p->S * p->S : sms * per_sm);
    if ((int)p->grid < p->S)
        return "too few resident blocks for the chunks of one row";
    p->rounds = (int)KB_CEIL_DIV(R * p->S, (int64_t)p->grid);
    p->epoch = 0;
    const size_t bytes = (size_t)R * (size_t)p->S * 2 * sizeof(unsigned long long);
    if (cudaMalloc((void **)&p->partials, bytes) != cudaSuccess) {
        cudaGetLastError();
        return "out of device memory for the persistent-row partials";
    }
    if (cudaMemset(p->partials, 0, bytes) != cudaSuccess) { /* epoch 0: never a launch's */
        cudaFree(p->partials);
        return "cudaMemset of the persistent-row partials failed";
    }
    return NULL;
}

/* ---- device side ----------------------------------------------------------- */

/* Where a round's chunk is: its row, and its first column. */
struct KbPersistPos {
    int row, begin;
};

__device__ __forceinline__ unsigned long long kb_tag(float v, unsigned epoch)
{
    return (unsigned long long)epoch << 32 | __float_as_uint(v);
}

__device__ __forceinline__ void kb_publish_pair(unsigned long long *p, float a, float b, unsigned epoch)
{
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};\n" ::"l"(p), "l"(kb_tag(a, epoch)),
                 "l"(kb_tag(b, epoch))
                 : "memory");
}

__device__ __forceinline__ ulonglong2 kb_load_pair(const unsigned long long *p)
{
    ulonglong2 w;
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];\n" : "=l"(w.x), "=l"(w.y) : "l"(p) : "memory");
    return w;
}

__device__ __forceinline__ bool kb_pair_is(ulonglong2 w, unsigned epoch)
{
    return (unsigned)(w.x >> 32) == epoch && (unsigned)(w.y >> 32) == epoch;
}

/* This thread's packs of chunk `begin` (n floats) of the row at x_row into
 * the same columns of buf, and with LEAD, the row's first element into its
 * warp's slot after the chunk; one commit group per round, even an empty
 * one, so that wait_group counts rounds. */
template <class Cfg, bool LEAD>
__device__ __forceinline__ void kb_persist_fetch(float *buf, const float *x_row, int begin, int n, bool any)
{
    if (any) {
#pragma unroll
        for (int k = 0; k < Cfg::PACKS; ++k) {
            const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
            if (col < n) {
                if constexpr (Cfg::VEC == 4)
                    kb_cp_async16(buf + col, x_row + begin + col, 16);
                else
                    kb_cp_async4(buf + col, x_row + begin + col, 4);
            }
        }
        if (LEAD && threadIdx.x % 32 == 0)
            kb_cp_async4(buf + KB_PERSIST_CHUNK + threadIdx.x / 32, x_row, 4);
    }
    kb_cp_async_commit();
}

/* This thread's floats of the chunk in buf (n of them valid), in pack
 * order; `fill` past the end. */
template <class Cfg>
__device__ __forceinline__ void kb_persist_read(float (&v)[KB_PERSIST_ITEMS], const float *buf, int n, float fill)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        float *dst = v + k * Cfg::VEC;
        if constexpr (Cfg::VEC == 4) {
            const float4 t = col < n ? *reinterpret_cast<const float4 *>(buf + col)
                                     : make_float4(fill, fill, fill, fill);
            dst[0] = t.x, dst[1] = t.y, dst[2] = t.z, dst[3] = t.w;
        } else {
            dst[0] = col < n ? buf[col] : fill;
        }
    }
}

/* How many of this thread's floats are in a chunk of n. */
template <class Cfg>
__device__ __forceinline__ int kb_persist_count(int n)
{
    int count = 0;
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k)
        count += kb_pack_col<Cfg>(k, (int)threadIdx.x) < n ? Cfg::VEC : 0;
    return count;
}

/* The thread's floats back to its columns of buf (shared memory). */
template <class Cfg>
__device__ __forceinline__ void kb_persist_write(float *buf, const float (&v)[KB_PERSIST_ITEMS], int n)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        if (col < n) {
            if constexpr (Cfg::VEC == 4)
                *reinterpret_cast<float4 *>(buf + col) =
                    make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
            else
                buf[col] = v[k];
        }
    }
}

/* The thread's floats to its columns of y's chunk (evict-first stores). */
template <class Cfg>
__device__ __forceinline__ void kb_persist_store(float *y, const float (&v)[KB_PERSIST_ITEMS], int n)
{
#pragma unroll
    for (int k = 0; k < Cfg::PACKS; ++k) {
        const int col = kb_pack_col<Cfg>(k, (int)threadIdx.x);
        if (col < n) {
            float t[Cfg::VEC];
#pragma unroll
            for (int j = 0; j < Cfg::VEC; ++j)
                t[j] = v[k * Cfg::VEC + j];
            kb_store_stream(y + col, t);
        }
    }
}

/* One warp: the row's S partials (w: this lane's pair, loaded early), waited
 * for until they carry this launch's epoch, then merged in a fixed order so
 * that every block of the row gets bit-identical statistics. */
template <class Op>
__device__ __forceinline__ typename Op::Stat kb_persist_gather(const Op &op, const unsigned long long *row_parts,
                                                               int S, unsigned epoch, ulonglong2 w)
{
    const int lane = (int)threadIdx.x & 31;
    for (;;) {
        const bool ready = lane >= S || kb_pair_is(w, epoch);
        if (__all_sync(KB_FULL_MASK, ready))
            break;
        __nanosleep(32);
        if (!ready)
            w = kb_load_pair(row_parts + 2 * lane);
    }
    const typename Op::Stat v =
        lane < S ? op.from_words(lane, __uint_as_float((unsigned)w.x), __uint_as_float((unsigned)w.y))
                 : Op::identity();
    return kb_warp_allreduce<32>(v, typename Op::Merge{});
}

/* The pipeline.  Op supplies the statistic (Stat, Merge, identity,
 * to_words, from_words) and, for a thread's columns: init (per-block
 * constants), LEAD (whether take needs the row's first element), take
 * (the chunk in shared memory -> the thread's
 * statistic and one float to keep until the store; it may rewrite its own
 * columns) and store (the chunk, the kept float and the row's statistic ->
 * y).  A chunk stays in its buffer LAG rounds after its reduction, until
 * its row's partials are surely published; STAGES - LAG - 1 rounds of loads
 * are in flight.  One barrier per round: a thread touches only its own
 * columns of a buffer, and every warp gathers the row's partials for
 * itself, so the warps share only their partials of the chunk.  (Without
 * the barrier, the warps' partials passed through an mbarrier to the
 * publishing warp, measured 2-8 points slower: the warps drift apart.) */
template <class Op, int VEC>
__global__ void __launch_bounds__(KB_PERSIST_THREADS, 1) kb_persist_row_kernel(KbPersistRow p, typename Op::Args a)
{
    using Cfg = KbRowCfg<VEC, KB_PERSIST_ITEMS / VEC, KB_PERSIST_BLOCK>;
    using Stat = typename Op::Stat;
    using Merge = typename Op::Merge;
    constexpr int STAGES = KB_PERSIST_STAGES, LAG = KB_PERSIST_LAG;
    constexpr int WARPS = KB_PERSIST_BLOCK / 32;
    static_assert(LAG >= 1 && STAGES > LAG + 1, "a buffer in flight besides the LAG + 1 held");
    static_assert(Op::FIXED_CHUNK || LAG >= 2, "a row that wraps into the next round is published a round later");
    extern __shared__ __align__(16) float stages[];
    __shared__ Stat warp_stat[2][WARPS]; /* by round parity: the round's barrier separates writers from readers */
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
    const bool owner = warp < WARPS; /* else the publishing warp */
    Op op;
    if (owner)
        op.template init<Cfg>(a, (int)blockIdx.x % p.S); /* the block's chunk when it never changes */
    /* Round r: chunk k = r * grid + blockIdx.x of the R * S, tracked by
     * (row, column offset) and stepped without a division per round */
    const int step_rows = (int)p.grid / p.S, step_begin = (int)p.grid % p.S * KB_PERSIST_CHUNK;
    const int row_len = p.S * KB_PERSIST_CHUNK;
    auto at = [&](int r) { /* floor division: rounds before 0 step into the right places too */
        const long long k = (long long)r * p.grid + blockIdx.x;
        const long long row = k >= 0 ? k / p.S : -((-k + p.S - 1) / p.S);
        return KbPersistPos{(int)row, (int)(k - row * p.S) * KB_PERSIST_CHUNK};
    };
    auto step = [&](KbPersistPos &q) {
        q.row += step_rows, q.begin += step_begin;
        if (q.begin >= row_len)
            q.begin -= row_len, q.row += 1;
    };
    auto has_row = [&](int r, KbPersistPos q) { return r >= 0 && r < p.rounds && q.row < p.R; };
    auto n_of = [&](KbPersistPos q) { return min(KB_PERSIST_CHUNK, a.C - q.begin); };
    auto buffer = [&](int r) { return stages + (r % STAGES) * KB_PERSIST_STAGE; };
    auto parts = [&](KbPersistPos q) { return p.partials + 2 * (size_t)q.row * p.S; };
    auto fetch = [&](int r, KbPersistPos q, bool any) {
        const size_t row = (size_t)min(q.row, p.R - 1);
        kb_persist_fetch<Cfg, Op::LEAD>(buffer(r), a.x + row * a.C, q.begin, n_of(q), any);
    };
    for (int r = 0; r < STAGES && owner; ++r)
        fetch(r, at(r), has_row(r, at(r)));

    KbPersistPos cur = at(0), done_at = at(-LAG), next_at = at(1 - LAG), fetch_at = at(STAGES);
    float kept[LAG]; /* take's float of rounds r - LAG .. r - 1 */
    ulonglong2 w = {0, 0}; /* this lane's partial of round r - LAG, loaded a round early */
    for (int r = 0; r < p.rounds; ++r) {
        const int done = r - LAG;
        Stat row = Op::identity(); /* every warp merges the row's partials itself: no warp waits for another */
        if (owner && has_row(done, done_at))
            row = kb_persist_gather(op, parts(done_at), p.S, p.epoch, w);
        if (owner && lane < p.S && has_row(done + 1, next_at))
            w = kb_load_pair(parts(next_at) + 2 * lane);
        float keep = 0.0f;
        if (owner) {
            /* Round r's copies are group r up to STAGES - 1 and group r + LAG after (the
             * first LAG rounds commit empty groups): wait for round r only. */
            if (r < STAGES)
                kb_cp_async_wait<STAGES - 1>();
            else
                kb_cp_async_wait<STAGES - LAG - 1>();
            __syncwarp(); /* lane 0's copy of the row's first element */
            Stat mine = Op::identity();
            if (has_row(r, cur))
                mine = op.template take<Cfg>(buffer(r), n_of(cur), buffer(r)[KB_PERSIST_CHUNK + warp], keep);
            mine = kb_warp_allreduce<32>(mine, Merge{});
            if (lane == 0)
                warp_stat[r & 1][warp] = mine;
        }
        __syncthreads();
        if (!owner && has_row(r, cur)) { /* off the owners' path: they go on to the store */
            Stat mine = lane < WARPS ? warp_stat[r & 1][lane] : Op::identity();
            mine = kb_warp_allreduce<32>(mine, Merge{});
            if (lane == 0) {
                float wa, wb;
                Op::to_words(mine, wa, wb);
                kb_publish_pair(parts(cur) + 2 * (cur.begin / KB_PERSIST_CHUNK), wa, wb, p.epoch);
            }
        }
        if (owner && has_row(done, done_at))
            op.template store<Cfg>(buffer(done), n_of(done_at), kept[0], row,
                                   a.y + (size_t)done_at.row * a.C + done_at.begin);
        /* each thread refills only the columns it has just read */
        if (owner)
            fetch(max(done, 0) + STAGES, fetch_at, done >= 0 && has_row(done + STAGES, fetch_at));
        step(cur), step(done_at), step(next_at);
        if (done >= 0)
            step(fetch_at);
#pragma unroll
        for (int i = 0; i < LAG - 1; ++i)
            kept[i] = kept[i + 1];
        kept[LAG - 1] = keep;
    }
    if (!owner)
        return;
    /* The last LAG rounds' rows: nothing left to reduce, so no barrier; all
     * their partials are asked for at once and their stores go out back to
     * back (run as loop rounds, a barrier each, this tail measured 0.5-2 us
     * longer at 256 MB: 1-2 points). */
    ulonglong2 last[LAG];
    KbPersistPos last_at[LAG];
#pragma unroll
    for (int i = 0; i < LAG; ++i) {
        const int d = p.rounds - LAG + i;
        last_at[i] = done_at;
        step(done_at);
        last[i] = w;
        if (i > 0 && lane < p.S && has_row(d, last_at[i]))
            last[i] = kb_load_pair(parts(last_at[i]) + 2 * lane);
    }
#pragma unroll
    for (int i = 0; i < LAG; ++i) {
        const int d = p.rounds - LAG + i;
        if (has_row(d, last_at[i]))
            op.template store<Cfg>(buffer(d), n_of(last_at[i]), kept[i],
                                   kb_persist_gather(op, parts(last_at[i]), p.S, p.epoch, last[i]),
                                   a.y + (size_t)last_at[i].row * a.C + last_at[i].begin);
    }
}

/* Launch p->kernel on `stream` with the next epoch; NULL or the error. */
template <class Args>
static inline const char *kb_persist_row_launch(KbPersistRow *p, Args a, cudaStream_t stream)
{
    p->epoch++;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(p->grid);
    cfg.blockDim = dim3(KB_PERSIST_THREADS);
    cfg.dynamicSmemBytes = p->smem;
    cfg.stream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    void *params[] = {p, &a};
    return kb_cuda_status(cudaLaunchKernelExC(&cfg, p->kernel, params));
}

/* A variant's setup: *ctx gets a KbPersistRow, or a reason comes back. */
template <class Op>
static inline const char *kb_persist_row_setup(int64_t R, int64_t C, void **ctx)
{
    const char *why = kb_persist_row_unsupported(C);
    if (why)
        return why;
    KbPersistRow *p = (KbPersistRow *)calloc(1, sizeof *p);
    if (!p)
        return "out of host memory";
    p->kernel = C % 4 == 0 ? (const void *)kb_persist_row_kernel<Op, 4> : (const void *)kb_persist_row_kernel<Op, 1>;
    p->smem = (size_t)KB_PERSIST_STAGES * KB_PERSIST_STAGE * sizeof(float);
    why = kb_persist_row_alloc(R, C, Op::FIXED_CHUNK, p);
    if (why) {
        free(p);
        return why;
    }
    *ctx = p;
    return NULL;
}

#endif
