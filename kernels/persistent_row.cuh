/* Long rows streamed by persistent blocks, shared by softmax/persistent_row
 * and layernorm/persistent_row.
 *
 * The rung below is split_row (kernels/split_row.cuh): a short-lived block
 * per 8192-float chunk, whose shared memory holds data but moves none while
 * it waits on its row.  Here one block per SM lives for the whole launch
 * and walks its chunks in rounds, so loads for later rounds are always in
 * flight:
 *
 *   - the grid G is a multiple of S (the chunks per row): block b always
 *     takes chunk b % S of its rows, so its columns (and layernorm's gamma
 *     and beta registers) never change.  The G / S blocks of one chunk (a
 *     class) share the R rows: first a static split, then rows dealt one a
 *     round by the class's counter, so a faster SM takes more rows.
 *     Classes of fewer than 16 blocks deal only their last 4 rounds;
 *   - chunks come into a ring of shared-memory buffers three rounds ahead
 *     (KbPersistPlan): softmax's by cp.async, layernorm's by one bulk copy
 *     a round (TMA), signalled on the buffer's mbarrier;
 *   - in round r a block reduces chunk r and publishes its partial, then
 *     merges the partials of the row of round r - LAG (LAG = 3) and writes
 *     that chunk from its buffer; the last LAG rounds are stored after the
 *     loop;
 *   - a partial is two 64-bit words, each a float tagged with the launch's
 *     epoch, stored and loaded relaxed: no fence, nothing to reset between
 *     launches (the class counters come in two sets, one zeroed for the
 *     next launch);
 *   - 16 column warps each merge the row's partials over the fewest lanes
 *     that hold S; a 17th warp merges the chunk's partials and publishes.
 *     One barrier per round keeps the warps in step.
 *
 * The launch is cooperative, so it fails rather than deadlocks when G
 * blocks do not fit at once.  A block's rows rise round by round, so every
 * wait ends: the lowest row with a partial missing is held by a block whose
 * earlier rows are complete, or not dealt yet by a class whose blocks wait
 * only on lower rows.  Dynamic shared memory starts on a 128-byte line.
 *
 * Each variant's header has its measured line (the reference run,
 * results/h100/kbench-20261126-084316.csv) and its gap to the limit; the
 * experiments that shaped this file are in docs/notes/softmax-layernorm.md.
 *
 * This header holds the kernel and a variant's setup; the rest is in
 * persistent_row_host.cuh (geometry, context, host checks and launch),
 * persistent_chunk.cuh (a thread's moves of a chunk) and tagged_pair.cuh
 * (the epoch-tagged partials). */
#ifndef KBENCH_PERSISTENT_ROW_CUH
#define KBENCH_PERSISTENT_ROW_CUH

#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include "kernels/cp_async.cuh"
#include "kernels/persistent_chunk.cuh"
#include "kernels/persistent_row_host.cuh"
#include "kernels/reduce.cuh"
#include "kernels/row_cfg.cuh"
#include "kernels/tagged_pair.cuh"

/* The partial a lane merges: each aligned group of p.width lanes holds
 * the S partials in the same places, so every lane's butterfly over its
 * group gives the same statistics (log2 width levels, not five: at S = 4,
 * two); none when the slot is past S. */
__device__ __forceinline__ int kb_persist_slot(const KbPersistRow &p)
{
    const int slot = (int)threadIdx.x & (p.width - 1);
    return slot < p.S ? slot : -1;
}

/* One warp: the row's S partials (w: this lane's pair, loaded early), waited
 * for until they carry this launch's epoch, then merged in a fixed order so
 * that every block of the row gets bit-identical statistics. */
template <class Op>
__device__ __forceinline__ typename Op::Stat kb_persist_gather(const Op &op, const KbPersistRow &p,
                                                               const unsigned long long *row_parts, ulonglong2 w)
{
    const int slot = kb_persist_slot(p);
    for (;;) {
        const bool ready = slot < 0 || kb_pair_is(w, p.epoch);
        if (__all_sync(KB_FULL_MASK, ready))
            break;
        __nanosleep(32);
        if (!ready)
            w = kb_load_pair(row_parts + 2 * slot);
    }
    typename Op::Stat v =
        slot >= 0 ? op.from_words(slot, __uint_as_float((unsigned)w.x), __uint_as_float((unsigned)w.y))
                  : Op::identity();
    for (int o = p.width / 2; o > 0; o >>= 1)
        v = typename Op::Merge{}(v, kb_shfl_xor(v, o));
    return v;
}

/* How chunks come in.  Rows of whole 16-byte packs can come by bulk copies
 * (Op::BULK): the dealer issues one per round, after the round's barrier,
 * into the buffer stored in the round before, and the warps wait on that
 * buffer's mbarrier; a seventh buffer keeps three rounds in flight.  Else
 * each thread copies its own columns by cp.async right after storing them,
 * and six buffers keep three rounds in flight.  FULL: every chunk is
 * 8192 floats, a kernel of its own for bulk copies (layernorm measured
 * 0.5-1 point faster with n a constant).
 *
 * The buffers start on a 128-byte boundary: dynamic shared memory follows
 * the static variables, whose size moved it to 288-480 bytes in, so a
 * warp's 512-byte accesses spanned five 128-byte lines instead of four,
 * and small edits that changed the static size moved both ops by 2-5
 * points (measured: MIO-throttle stalls tripled in the slow builds). */
template <class Op, int VEC, bool FULL>
struct KbPersistPlan {
    static constexpr bool BULK = Op::BULK && VEC == 4;
    static_assert(!FULL || BULK, "whole chunks are a separate kernel only for bulk copies");
    static constexpr int STAGES = BULK ? 7 : 6; /* shared-memory buffers of a chunk each */
    static constexpr int AHEAD = 3;             /* rounds in flight */
    static constexpr size_t SMEM = (size_t)STAGES * KB_PERSIST_STAGE * sizeof(float);
    static_assert(STAGES == KB_PERSIST_LAG + AHEAD + (BULK ? 1 : 0), "LAG held, AHEAD in flight");
};

/* The pipeline.  Op supplies the statistic (Stat, Merge, identity,
 * to_words, from_words), LEAD (whether take needs the row's first
 * element), BULK (whether its chunks may come by bulk copies) and, for a
 * thread's columns: init (per-block constants), take (the chunk in shared
 * memory -> the warp's statistic, and one float to keep until the store;
 * it may rewrite its own columns) and store (the chunk, the kept float and
 * the row's statistic -> y).  A chunk stays in its buffer LAG rounds after
 * its reduction, until its row's partials are surely published; AHEAD
 * rounds of loads are in flight.  The rows of rounds r - LAG .. r + AHEAD
 * + 1 sit in a shared ring that the publishing warp's lane 0 (the dealer)
 * fills.  One barrier per round: a thread touches only its own columns of
 * a buffer (bulk copies wait for the barrier after a buffer's last read),
 * and every warp gathers the row's partials for itself, so the warps share
 * only their partials of the chunk.  (Without the barrier, the warps'
 * partials passed through an mbarrier to the publishing warp, measured 2-8
 * points slower: the warps drift apart.) */
template <class Op, int VEC, bool FULL>
__global__ void __launch_bounds__(KB_PERSIST_THREADS, 1) kb_persist_row_kernel(KbPersistRow p, typename Op::Args a)
{
    using Cfg = KbRowCfg<VEC, KB_PERSIST_ITEMS / VEC, KB_PERSIST_BLOCK>;
    using Stat = typename Op::Stat;
    using Merge = typename Op::Merge;
    using Plan = KbPersistPlan<Op, VEC, FULL>;
    constexpr bool BULK = Plan::BULK;
    constexpr int STAGES = Plan::STAGES, LAG = KB_PERSIST_LAG, AHEAD = Plan::AHEAD;
    constexpr int WARPS = KB_PERSIST_BLOCK / 32, RING = 8;
    static_assert(RING >= LAG + AHEAD + 2 && (RING & (RING - 1)) == 0, "rows of rounds r - LAG .. r + AHEAD + 1");
    extern __shared__ __align__(128) float stages[]; /* see KbPersistPlan */
    __shared__ Stat warp_stat[2][WARPS]; /* by round parity: the round's barrier separates writers from readers */
    __shared__ int row_of[RING];         /* round r's row at r % RING; R: none */
    __shared__ unsigned long long landed[BULK ? STAGES : 1]; /* a buffer's mbarrier: its bulk copy is in */
    const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, slot = kb_persist_slot(p);
    const bool owner = warp < WARPS, dealer = threadIdx.x == KB_PERSIST_BLOCK; /* else the publishing warp */
    const int chunk = (int)blockIdx.x % p.S, begin = chunk * KB_PERSIST_CHUNK;
    const int n = FULL ? KB_PERSIST_CHUNK : min(KB_PERSIST_CHUNK, a.C - begin);
    unsigned long long *tickets = p.tickets + (p.epoch & 1) * KB_PERSIST_MAX_S + chunk;
    Op op;
    auto buffer = [&](int r) { return stages + (r % STAGES) * KB_PERSIST_STAGE; };
    auto row = [&](int r) { return row_of[r % RING]; };
    auto parts = [&](int q) { return p.partials + 2 * (size_t)q * p.S; };
    auto fetch = [&](int r) {
        const int q = row(r);
        if constexpr (BULK) {
            if (q < p.R)
                kb_persist_bulk_fetch<Op::LEAD>(buffer(r), a.x + (size_t)q * a.C, begin, n, landed + r % STAGES);
        } else {
            kb_persist_fetch<Cfg, Op::LEAD>(buffer(r), a.x + (size_t)min(q, p.R - 1) * a.C, begin, n, q < p.R);
        }
    };
    /* Rounds before p.dealt take rows as a static split would; from then on
     * the dealer asks the class's counter for one row a round, two rounds
     * before it writes it (an atomic's latency under load nears a round). */
    const int per_class = (int)p.grid / p.S, place = (int)blockIdx.x / p.S;
    auto static_row = [&](int k) { return min(k * per_class + place, p.R); };
    auto ask = [&](int k) { return k >= p.dealt ? atomicAdd(tickets, 1) : 0ull; };
    unsigned long long next[2] = {0, 0}; /* the tickets of rounds r + AHEAD + 1 and + 2 */
    if (dealer) {
        if (blockIdx.x < (unsigned)p.S) /* the next launch's counters */
            p.tickets[((p.epoch + 1) & 1) * KB_PERSIST_MAX_S + blockIdx.x] = 0;
        for (int i = 0; i <= AHEAD; ++i)
            row_of[i] = static_row(i);
        next[0] = ask(AHEAD + 1);
        next[1] = ask(AHEAD + 2);
        if constexpr (BULK) {
            for (int i = 0; i < STAGES; ++i)
                kb_mbar_init(landed + i, 1);
            kb_mbar_init_fence();
        }
    }
    __syncthreads();
    for (int r = 0; r < AHEAD && (BULK ? dealer : owner); ++r)
        fetch(r);
    if (owner)
        op.template init<Cfg>(a, chunk);

    float kept[LAG]; /* take's float of rounds r - LAG .. r - 1 */
    ulonglong2 w = {0, 0}; /* this lane's partial of round r - LAG, loaded a round early */
    int r = 0;
    for (;; ++r) {
        const int q = row(r), done = r - LAG;
        if (q >= p.R)
            break;
        Stat row_stat = Op::identity(); /* every warp merges the row's partials itself: no warp waits for another */
        if (owner && done >= 0)
            row_stat = kb_persist_gather(op, p, parts(row(done)), w);
        if (owner && slot >= 0 && done + 1 >= 0)
            w = kb_load_pair(parts(row(done + 1)) + 2 * slot);
        float keep = 0.0f;
        if (owner) {
            if constexpr (BULK) {
                kb_mbar_wait(landed + r % STAGES, (unsigned)(r / STAGES) & 1);
            } else {
                kb_cp_async_wait<AHEAD - 1>(); /* round r's copies are group r */
                __syncwarp();                  /* lane 0's copy of the row's first element */
            }
            const float lead = buffer(r)[KB_PERSIST_CHUNK + (BULK ? 0 : warp)];
            const Stat mine = op.template take<Cfg>(buffer(r), n, lead, keep);
            if (lane == 0)
                warp_stat[r & 1][warp] = mine;
        }
        __syncthreads();
        if (BULK && dealer) /* into the buffer of round r + AHEAD - STAGES, stored before this barrier */
            fetch(r + AHEAD);
        if (!owner) { /* off the owners' path: they go on to the store */
            Stat mine = kb_warp_allreduce<WARPS>(warp_stat[r & 1][lane % WARPS], Merge{});
            if (lane == 0) {
                float wa, wb;
                Op::to_words(mine, wa, wb);
                kb_publish_pair(parts(q) + 2 * chunk, wa, wb, p.epoch);
            }
            if (dealer) { /* round k's row, read after the next barrier */
                const int k = r + AHEAD + 1;
                const int q_new = k < p.dealt ? static_row(k)
                                              : (int)min(next[0] + (unsigned long long)p.dealt * per_class,
                                                         (unsigned long long)p.R);
                row_of[k % RING] = q_new;
                next[0] = next[1];
                if (q_new < p.R) /* a block's rows rise: past R, all are */
                    next[1] = ask(k + 2);
            }
        }
        if (owner && done >= 0)
            op.template store<Cfg>(buffer(done), n, kept[0], row_stat, a.y + (size_t)row(done) * a.C + begin);
        /* each thread refills only the columns it has just read */
        if (!BULK && owner)
            fetch(r + AHEAD);
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
#pragma unroll
    for (int i = 0; i < LAG; ++i) {
        const int d = r - LAG + i;
        last[i] = w;
        if (i > 0 && slot >= 0 && d >= 0)
            last[i] = kb_load_pair(parts(row(d)) + 2 * slot);
    }
#pragma unroll
    for (int i = 0; i < LAG; ++i) {
        const int d = r - LAG + i;
        if (d >= 0)
            op.template store<Cfg>(buffer(d), n, kept[i], kb_persist_gather(op, p, parts(row(d)), last[i]),
                                   a.y + (size_t)row(d) * a.C + begin);
    }
}

/* One instantiation, with the shared memory and prologue it plans. */
template <class Op, int VEC, bool FULL>
static inline void kb_persist_row_use(KbPersistRow *p)
{
    using Plan = KbPersistPlan<Op, VEC, FULL>;
    p->kernel = (const void *)kb_persist_row_kernel<Op, VEC, FULL>;
    p->smem = Plan::SMEM, p->ahead = Plan::AHEAD;
}

/* The instantiation for rows of C floats: whole chunks of 16-byte packs,
 * packs, or single floats. */
template <class Op>
static inline void kb_persist_row_pick(int64_t C, KbPersistRow *p)
{
    if (Op::BULK && C % KB_PERSIST_CHUNK == 0)
        kb_persist_row_use<Op, 4, Op::BULK>(p);
    else if (C % 4 == 0)
        kb_persist_row_use<Op, 4, false>(p);
    else
        kb_persist_row_use<Op, 1, false>(p);
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
    kb_persist_row_pick<Op>(C, p);
    why = kb_persist_row_alloc(R, C, p);
    if (why) {
        free(p);
        return why;
    }
    *ctx = p;
    return NULL;
}

#endif
