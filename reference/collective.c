/* The collectives' references (collective.h): plain C11, sums in double
 * over the ranks in order.  A collective has a handful of rows of up to a
 * gigabyte each, so each reference spreads its elements over the CPU's
 * threads itself (case.c calls it once, outside its own row chunks). */
#include "ops/collective.h"

void allreduce_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                              int nrows, double *ref)
{
    (void)rows; /* every rank's output is the same sum: computed once, copied per row */
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int p = 0; p < ranks; ++p)
            sum += kb_tensor_value(in, p * n + j, t);
        for (int k = 0; k < nrows; ++k)
            ref[k * n + j] = sum;
    }
}

void allgather_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                              int nrows, double *ref)
{
    (void)rows; /* every rank's output is the same concatenation */
    int64_t total = ranks * n; /* the input tensor's size: kb_shape_bytes checked it */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < total; ++i)
        for (int k = 0; k < nrows; ++k)
            ref[k * total + i] = kb_tensor_value(in, i, t);
}

void reduce_scatter_reference_rows(int64_t n, int ranks, kb_dtype t, const void *in, const int64_t *rows,
                                   int nrows, double *ref)
{
    int64_t row_len = ranks * n; /* each rank's input row */
    for (int k = 0; k < nrows; ++k)
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (int p = 0; p < ranks; ++p)
                sum += kb_tensor_value(in, p * row_len + rows[k] * n + j, t);
            ref[k * n + j] = sum;
        }
}
