/* allgather contract: every rank r ends with out_r = in_0 | in_1 | ... |
 * in_{R-1}, rank p's N elements at p*N.  Shapes are written N; R is the
 * run's --devices.
 * Tensors: in, R rows of N; out, R rows of R*N (row r on GPU r).
 * FLOPs: 0.
 * Bytes: nccl-tests' bus bandwidth, size * (R-1)/R with size = R*N elements
 * (the gathered total, as nccl-tests counts it), so GB/s is nccl-tests'
 * busbw.
 * Tolerance: a copy, a reduction of length 1. */
#include "ops/collective.h"

extern const kb_variant *const allgather_variants[];

static double flops(const kb_shape *s) { (void)s; return 0; }

static double bytes(const kb_shape *s, kb_dtype t)
{
    return s->d[0] * kb_dtypes[t].bytes * (kb_collective_ranks(s) - 1);
}

static int ntensors(const kb_shape *s) { (void)s; return 2; }

static kb_tensor tensor(const kb_shape *s, kb_dtype t, int i)
{
    int ranks = kb_collective_ranks(s);
    return i == 0 ? kb_collective_tensor("in", ranks, s->d[0], t, KB_IN, 0)
                  : kb_collective_tensor("out", ranks, kb_mul_dims(ranks, s->d[0]), t, KB_OUT, 1);
}

static void bind(const kb_shape *s, void *const *dev, void *args) { kb_collective_bind(s, dev, args); }

static void reference(const kb_shape *s, kb_dtype t, const void *const *in, int out, const int64_t *rows,
                      int nrows, double *ref)
{
    (void)out;
    allgather_reference_rows(s->d[0], kb_collective_ranks(s), t, in[0], rows, nrows, ref);
}

const kb_op kb_op_allgather = {
    .name = "allgather",
    .summary = "out = every GPU's in, concatenated, on every GPU (--devices); GB/s is nccl-tests' bus bandwidth",
    .shape_fields = "N",
    .nd = 1,
    /* 8 KB to 512 MB of bf16 per rank's input (1 GB gathered on 2 GPUs; the
     * reference holds R rows of R*N doubles on the host). */
    .families = (const kb_family[]){{"size", "N", "4096,65536,524288,4194304,33554432,134217728,268435456", 1,
                                     /* --quick: one latency-bound message and one of 16 MB
                                        in f32; a large one uploads GBs */
                                     "65536,4194304"}, {NULL}},
    .test_sizes = "1,3,1000,4097,65537,1048579",
    .baseline = {[KB_F32] = "nccl", [KB_BF16] = "nccl"},
    .variants = allgather_variants,
    .distributed = 1,
    .bytes = bytes,
    KB_OP_CONTRACT(kb_collective_args),
};
