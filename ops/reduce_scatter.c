/* reduce_scatter contract: rank r ends with out_r = sum over ranks p of
 * in_p[r*N, r*N + N), its block of the sum.  Shapes are written N; R is the
 * run's --devices.
 * Tensors: in, R rows of R*N; out, R rows of N (row r on GPU r).
 * FLOPs: the R * N * (R - 1) additions the R blocks' sums need once.
 * Bytes: nccl-tests' bus bandwidth, size * (R-1)/R with size = R*N elements
 * (each rank's whole input, as nccl-tests counts it), so GB/s is
 * nccl-tests' busbw.
 * Tolerance: a reduction of length R (one bf16 rounding at the end in our
 * kernels; NCCL's ring may round at each of its R - 1 hops). */
#include "ops/collective.h"

extern const kb_variant *const reduce_scatter_variants[];

static double flops(const kb_shape *s)
{
    double r = kb_collective_ranks(s);
    return s->d[0] * r * (r - 1);
}

static double bytes(const kb_shape *s, kb_dtype t)
{
    return s->d[0] * kb_dtypes[t].bytes * (kb_collective_ranks(s) - 1);
}

static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int ranks = kb_collective_ranks(s);
    return i == 0 ? kb_collective_tensor("in", ranks, kb_mul_dims(ranks, s->d[0]), t, KB_IN, 0)
                  : kb_collective_tensor("out", ranks, s->d[0], t, KB_OUT, kb_collective_ranks(s));
}

static void bind(const kb_shape *s, void *const *dev, void *args) { kb_collective_bind(s, dev, args); }

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    reduce_scatter_reference_rows(s->d[0], kb_collective_ranks(s), t, in[0], rows, nrows, ref);
}

const kb_op kb_op_reduce_scatter = {
    .name = "reduce_scatter",
    .summary = "out = this GPU's block of the sum of every GPU's in (--devices); GB/s is nccl-tests' bus bandwidth",
    .shape_fields = "N",
    .nd = 1,
    /* 8 KB to 512 MB of bf16 per rank's output block (a 1 GB input on 2 GPUs). */
    .families = (const kb_family[]){{"size", "N", "4096,65536,524288,4194304,33554432,134217728,268435456", 1,
                                     /* --quick: one latency-bound message and one of 16 MB
                                        in f32; a large one uploads GBs */
                                     "65536,4194304"}, {NULL}},
    .test_sizes = "1,3,1000,4097,65537,1048579",
    .baseline = {[KB_F32] = "nccl", [KB_BF16] = "nccl"},
    .variants = reduce_scatter_variants,
    .distributed = 1,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_collective_args),
};
