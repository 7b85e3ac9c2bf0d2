/* The collectives over the run's GPUs: allreduce, allgather and
 * reduce_scatter (ops/allreduce.c, allgather.c, reduce_scatter.c hold
 * each op's contract).  Shapes are written N; the run's --devices give R,
 * the shape's `ranks`.  Every tensor has one row per rank, row r on GPU r.
 * Two dtypes, as the variant's: f32, or bf16 storage (our kernels sum in
 * fp32 and round once; NCCL may round at every hop of its ring).
 *
 * GB/s is nccl-tests' bus bandwidth: the byte counts are nccl-tests' size
 * times its bus factor, so one row's figure compares with the link's speed
 * whatever R is (docs/ops.md). */
#ifndef KBENCH_COLLECTIVE_H
#define KBENCH_COLLECTIVE_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One argument struct for the three ops.  in[r] and out[r] live on GPU r
 * (the run's r-th); their lengths are the op's (allreduce N and N,
 * allgather N and R*N, reduce_scatter R*N and N), their type the variant's
 * dtype (bf16 as __nv_bfloat16 on the device). */
typedef struct {
    int64_t n;                       /* N */
    int ranks;                       /* R */
    const void *in[KB_MAX_RANKS];
    void *out[KB_MAX_RANKS];
} kb_collective_args;

extern const kb_op kb_op_allreduce, kb_op_allgather, kb_op_reduce_scatter;

/* R of a shape: 1 where the sweep set none (kbench list, a shape parsed alone). */
int kb_collective_ranks(const kb_shape *s);
/* N and R into args from dev[i * R + r] (tensor 0 the input, 1 the output). */
void kb_collective_bind(const kb_shape *s, void *const *dev, void *args);
/* An R-row tensor of rows of row_len elements, as an output each element
 * the end of a reduction of reduction_len; elems -1 on overflow, which
 * kb_shape_bytes rejects. */
kb_tensor kb_collective_tensor(const char *name, int ranks, int64_t row_len, kb_dtype t, kb_role role,
                               int64_t reduction_len);

/* References in double.  `in` is the input tensor, its R rows one after
 * the other (each rank's row as stored, f32 or bf16); ref receives the
 * listed output rows (rows[k] is a rank), nrows * row_len values. */
/* out_r = sum over p of in_p (row_len N). */
void allreduce_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                              int nrows, double *ref);
/* out_r = in_0 | in_1 | ... | in_{R-1} (row_len R*N). */
void allgather_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                              int nrows, double *ref);
/* out_r = sum over p of in_p[r*N, r*N + N) (input rows R*N, row_len N). */
void reduce_scatter_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                                   int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
