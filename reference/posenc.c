/* posenc reference: plain C11 in double, and the same table in fp32
 * arithmetic for `kbench pe`. */
#include <math.h>
#include "ops/posenc.h"

void posenc_reference_rows(int D, double scale, const int64_t *rows, int nrows, double *pe)
{
    for (int r = 0; r < nrows; ++r)
        for (int j = 0; j < D; ++j) {
            double angle = (double)rows[r] * pow(10000.0, -scale * (j / 2) / D);
            pe[(int64_t)r * D + j] = j % 2 ? cos(angle) : sin(angle);
        }
}

void posenc_table_f32(int T, int D, float scale, float *pe)
{
    for (int pos = 0; pos < T; ++pos)
        for (int j = 0; j < D; ++j) {
            float w = expf(-logf(10000.0f) * scale * (float)(j / 2) / (float)D);
            float angle = (float)pos * w;
            pe[(int64_t)pos * D + j] = j % 2 ? cosf(angle) : sinf(angle);
        }
}
