/* embedding_backward reference: plain C11 in double, the tokens in order. */
#include "ops/embedding_backward.h"

void embedding_backward_reference(int64_t T, int64_t D, const int *ids, const float *dx, const int64_t *rows,
                                  int nrows, double *ref)
{
    for (int k = 0; k < nrows; ++k) {
        double *out = ref + k * D;
        for (int64_t j = 0; j < D; ++j)
            out[j] = 0;
        for (int64_t t = 0; t < T; ++t)
            if (ids[t] == rows[k])
                for (int64_t j = 0; j < D; ++j)
                    out[j] += dx[t * D + j];
    }
}
