/* matmul_fp8 reference: plain C11 in double from the stored e4m3 values
 * (exact as doubles) and the two scales. */
#include "ops/matmul_fp8.h"

void matmul_fp8_reference_rows(int N, int K, kb_dtype t, const void *A, const void *B, double sa, double sb,
                               const int64_t *rows, int nrows, double *ref)
{
#pragma omp parallel for schedule(static) collapse(2) if ((int64_t)nrows * N * K > (1 << 20))
    for (int r = 0; r < nrows; ++r)
        for (int j = 0; j < N; ++j) {
            double acc = 0;
            for (int k = 0; k < K; ++k)
                acc += kb_tensor_value(A, rows[r] * K + k, t) * kb_tensor_value(B, (int64_t)j * K + k, t);
            ref[(int64_t)r * N + j] = sa * sb * acc;
        }
}
