/* matmul_backward reference: plain C11 in double, from A, B and dC as they
 * are stored (f32, or the bf16 values a bf16 variant reads).
 *   dA row r: dA[r][k] = dC[r] . B[k], a dot of two stored rows; the block's
 *   rows of dC are widened once and each row of B once per block.
 *   dB row k: dB[k] = sum_m A[m][k] dC[m], rows of dC scaled and added, m
 *   outermost so that dC streams once per block of rows. */
#include <stdlib.h>
#include <string.h>
#include "ops/matmul_backward.h"

enum { ROW_BLOCK = 16 };

static void da_rows(int64_t N, int64_t K, kb_dtype t, const void *b, const void *dc, const int64_t *rows,
                    int nrows, double *ref)
{
    double *dcr = malloc((size_t)ROW_BLOCK * N * sizeof *dcr);
    for (int r0 = 0; r0 < nrows; r0 += ROW_BLOCK) {
        const int nb = nrows - r0 < ROW_BLOCK ? nrows - r0 : ROW_BLOCK;
        for (int r = 0; r < nb; ++r)
            kb_widen(dc, rows[r0 + r] * N, N, t, dcr + (size_t)r * N);
#pragma omp parallel
        {
            double *brow = malloc((size_t)N * sizeof *brow);
#pragma omp for schedule(static)
            for (int64_t k = 0; k < K; ++k) {
                kb_widen(b, k * N, N, t, brow);
                for (int r = 0; r < nb; ++r) {
                    const double *x = dcr + (size_t)r * N;
                    double s = 0;
                    for (int64_t j = 0; j < N; ++j)
                        s += x[j] * brow[j];
                    ref[(size_t)(r0 + r) * K + k] = s;
                }
            }
            free(brow);
        }
    }
    free(dcr);
}

static void db_rows(int64_t M, int64_t N, int64_t K, kb_dtype t, const void *a, const void *dc,
                    const int64_t *rows, int nrows, double *ref)
{
    double *dcrow = malloc((size_t)N * sizeof *dcrow);
    memset(ref, 0, (size_t)nrows * N * sizeof *ref);
    for (int r0 = 0; r0 < nrows; r0 += ROW_BLOCK) {
        const int nb = nrows - r0 < ROW_BLOCK ? nrows - r0 : ROW_BLOCK;
        for (int64_t m = 0; m < M; ++m) {
            kb_widen(dc, m * N, N, t, dcrow);
            for (int r = 0; r < nb; ++r) {
                const double av = kb_tensor_value(a, m * K + rows[r0 + r], t);
                double *out = ref + (size_t)(r0 + r) * N;
                for (int64_t j = 0; j < N; ++j)
                    out[j] += av * dcrow[j];
            }
        }
    }
    free(dcrow);
}

void matmul_backward_reference(int64_t M, int64_t N, int64_t K, kb_dtype t, const void *a, const void *b,
                               const void *dc, int which, const int64_t *rows, int nrows, double *ref)
{
    if (which == KB_MMB_DA)
        da_rows(N, K, t, b, dc, rows, nrows, ref);
    else
        db_rows(M, N, K, t, a, dc, rows, nrows, ref);
}
