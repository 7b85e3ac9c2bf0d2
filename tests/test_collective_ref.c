/* The collectives' contracts and references (ops/collective.h) for R of
 * 2, 3 and 8: hand-computed sums and concatenations in f32 and bf16, the
 * tensors' sizes and rows, bind's per-rank pointers, the byte counts that
 * make GB/s nccl-tests' bus bandwidth, and an absurd N rejected. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "harness/harness.h"
#include "ops/collective.h"
#include "tests/check.h"

enum { N = 5 };

static kb_shape shape_of(int64_t n, int ranks) { return (kb_shape){.nd = 1, .d = {n}, .ranks = ranks}; }

/* Element j of rank p's input row: small integers, exact in f32 and bf16
 * and in every sum below. */
static float value(int p, int64_t j) { return (float)(16 * p + j) - 20; }

/* The input tensor, R rows of row_len, in dtype t. */
static void *input(int ranks, int64_t row_len, kb_dtype t)
{
    void *x = malloc((size_t)(ranks * row_len) * (t == KB_BF16 ? 2 : 4));
    for (int p = 0; p < ranks; ++p)
        for (int64_t j = 0; j < row_len; ++j) {
            float v = value(p, j);
            if (t == KB_BF16)
                ((uint16_t *)x)[p * row_len + j] = kb_float_to_bf16(v);
            else
                ((float *)x)[p * row_len + j] = v;
        }
    return x;
}

/* Every rank's output row from op's reference, rows listed last to first. */
static double *reference_all(const kb_op *op, int ranks, kb_dtype t, const void *in, int64_t row_len)
{
    kb_shape s = shape_of(N, ranks);
    int64_t rows[KB_MAX_RANKS];
    for (int k = 0; k < ranks; ++k)
        rows[k] = ranks - 1 - k;
    double *ref = malloc((size_t)(ranks * row_len) * sizeof *ref);
    op->reference(&s, t, (const void *const[]){in, NULL}, 1, rows, ranks, ref);
    return ref;
}

static void allreduce_sums(int ranks, kb_dtype t)
{
    void *in = input(ranks, N, t);
    double *ref = reference_all(&kb_op_allreduce, ranks, t, in, N);
    for (int k = 0; k < ranks; ++k)
        for (int j = 0; j < N; ++j) {
            /* sum over p of 16p + j - 20 = 8 R (R - 1) + R (j - 20) */
            double want = 8.0 * ranks * (ranks - 1) + ranks * (j - 20.0);
            CHECK(ref[k * N + j] == want);
        }
    free(ref);
    free(in);
}

static void allgather_concatenates(int ranks, kb_dtype t)
{
    void *in = input(ranks, N, t);
    double *ref = reference_all(&kb_op_allgather, ranks, t, in, ranks * N);
    for (int k = 0; k < ranks; ++k)
        for (int p = 0; p < ranks; ++p)
            for (int j = 0; j < N; ++j)
                CHECK(ref[(k * ranks + p) * N + j] == value(p, j));
    free(ref);
    free(in);
}

static void reduce_scatter_sums(int ranks, kb_dtype t)
{
    void *in = input(ranks, ranks * N, t);
    double *ref = reference_all(&kb_op_reduce_scatter, ranks, t, in, N);
    for (int k = 0; k < ranks; ++k) {
        int r = ranks - 1 - k; /* the rows were asked for last to first */
        for (int j = 0; j < N; ++j) {
            double want = 0;
            for (int p = 0; p < ranks; ++p)
                want += value(p, r * N + j);
            CHECK(ref[k * N + j] == want);
        }
    }
    free(ref);
    free(in);
}

/* Tensor i of op at N, R: R rows of row_len, the right one an output. */
static void check_tensor(const kb_op *op, int ranks, int i, int64_t row_len, int is_output)
{
    kb_shape s = shape_of(N, ranks);
    kb_tensor x = op->tensor(&s, KB_BF16, i);
    CHECK(x.rows == ranks && x.row_len == row_len && x.elems == ranks * row_len);
    CHECK(kb_is_checked(&x) == is_output && x.dtype == KB_BF16);
}

static void tensors(int ranks)
{
    const kb_op *ops[] = {&kb_op_allreduce, &kb_op_allgather, &kb_op_reduce_scatter};
    for (int o = 0; o < 3; ++o) {
        kb_shape s = shape_of(N, ranks);
        CHECK(ops[o]->ntensors(&s) == 2 && ops[o]->distributed);
    }
    check_tensor(&kb_op_allreduce, ranks, 0, N, 0);
    check_tensor(&kb_op_allreduce, ranks, 1, N, 1);
    check_tensor(&kb_op_allgather, ranks, 0, N, 0);
    check_tensor(&kb_op_allgather, ranks, 1, ranks * N, 1);
    check_tensor(&kb_op_reduce_scatter, ranks, 0, ranks * N, 0);
    check_tensor(&kb_op_reduce_scatter, ranks, 1, N, 1);
}

/* bind: rank r's input from dev[r], its output from dev[R + r]. */
static void binds(int ranks)
{
    kb_shape s = shape_of(N, ranks);
    char bufs[2 * KB_MAX_RANKS];
    void *dev[2 * KB_MAX_RANKS];
    for (int i = 0; i < 2 * ranks; ++i)
        dev[i] = &bufs[i];
    kb_collective_args a;
    CHECK(kb_op_allreduce.args_size == sizeof a && sizeof a <= 256); /* run.c's argument buffer */
    kb_op_reduce_scatter.bind(&s, dev, &a);
    CHECK(a.n == N && a.ranks == ranks);
    for (int r = 0; r < ranks; ++r)
        CHECK(a.in[r] == dev[r] && a.out[r] == dev[ranks + r]);
}

/* GB/s is nccl-tests' busbw: allreduce size N * elsize times 2 (R - 1) / R;
 * allgather and reduce_scatter size R * N * elsize times (R - 1) / R. */
static void bus_bytes(int ranks)
{
    const int64_t n = 1 << 20;
    kb_shape s = shape_of(n, ranks);
    const double R = ranks;
    for (int t = KB_F32; t <= KB_BF16; ++t) {
        double es = t == KB_BF16 ? 2 : 4;
        CHECK_NEAR(kb_op_allreduce.bytes(&s, t), n * es * 2 * (R - 1) / R, 1e-6);
        CHECK_NEAR(kb_op_allgather.bytes(&s, t), R * n * es * (R - 1) / R, 1e-6);
        CHECK_NEAR(kb_op_reduce_scatter.bytes(&s, t), R * n * es * (R - 1) / R, 1e-6);
    }
    if (ranks == 2) /* a ring of two moves each rank's whole buffer once */
        CHECK(kb_op_allreduce.bytes(&s, KB_F32) == n * 4.0);
    if (ranks == 8)
        CHECK(kb_op_allreduce.bytes(&s, KB_BF16) == 2 * 7.0 / 8 * n * 2);
    CHECK(kb_op_allreduce.flops(&s) == n * (R - 1));
    CHECK(kb_op_allgather.flops(&s) == 0);
    CHECK(kb_op_reduce_scatter.flops(&s) == R * n * (R - 1));
    CHECK(kb_op_allreduce.tensor(&s, KB_F32, 1).reduction_len == ranks &&
          kb_op_reduce_scatter.tensor(&s, KB_F32, 1).reduction_len == ranks);
    CHECK(kb_op_allgather.tensor(&s, KB_F32, 1).reduction_len == 1);
}

/* N = 2^61: R * N elements (or their bytes) overflow 63 bits. */
static void absurd_n(int ranks)
{
    const kb_op *ops[] = {&kb_op_allreduce, &kb_op_allgather, &kb_op_reduce_scatter};
    kb_shape s = shape_of(INT64_C(1) << 61, ranks);
    for (int o = 0; o < 3; ++o) {
        int64_t bytes = 0;
        char err[256];
        CHECK(kb_shape_bytes(ops[o], &s, KB_F32, &bytes, err, sizeof err) == -1);
    }
    /* A shape parsed alone (ranks unset) counts as one rank. */
    kb_shape alone = shape_of(7, 0);
    CHECK(kb_op_allgather.tensor(&alone, KB_F32, 1).elems == 7 && kb_op_allreduce.bytes(&alone, KB_F32) == 0);
}

/* The sweeps parse, and the ops are in the table. */
static void sweeps(void)
{
    const kb_op *ops[] = {&kb_op_allreduce, &kb_op_allgather, &kb_op_reduce_scatter};
    for (int o = 0; o < 3; ++o) {
        const char *lists[] = {ops[o]->families[0].sizes, ops[o]->test_sizes};
        int counts[] = {7, 6};
        CHECK(kb_find_op(ops[o]->name) == ops[o]);
        CHECK(ops[o]->families[0].quick && !ops[o]->families[1].name);
        for (int l = 0; l < 2; ++l) {
            kb_shape *shapes = NULL;
            char err[256];
            CHECK(kb_parse_shape_list(ops[o], lists[l], &shapes, err, sizeof err) == counts[l]);
            free(shapes);
        }
    }
}

int main(void)
{
    const int rank_counts[] = {2, 3, 8};
    for (int i = 0; i < 3; ++i) {
        int ranks = rank_counts[i];
        for (int t = KB_F32; t <= KB_BF16; ++t) {
            allreduce_sums(ranks, t);
            allgather_concatenates(ranks, t);
            reduce_scatter_sums(ranks, t);
        }
        tensors(ranks);
        binds(ranks);
        bus_bytes(ranks);
        absurd_n(ranks);
    }
    sweeps();
    return CHECK_DONE();
}
