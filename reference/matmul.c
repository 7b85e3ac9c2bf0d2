/* matmul reference: plain C11, accumulating in double.
 * Loops run i-k-j so B is read along its rows, which keeps sampled rows of
 * an 8192^3 product to about a second on one core. */
#include <string.h>
#include "kernels/matmul.h"

void matmul_reference_rows(int M, int N, int K, const float *A, const float *B,
                           const int64_t *rows, int nrows, double *ref)
{
    (void)M;
    for (int r = 0; r < nrows; ++r) {
        double *out = ref + (size_t)r * N;
        const float *a = A + (size_t)rows[r] * K;
        memset(out, 0, (size_t)N * sizeof *out);
        for (int k = 0; k < K; ++k) {
            double av = a[k];
            const float *b = B + (size_t)k * N;
            for (int j = 0; j < N; ++j)
                out[j] += av * b[j];
        }
    }
}
