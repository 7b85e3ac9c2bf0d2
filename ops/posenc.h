/* posenc contract: the sinusoidal positional-encoding table, T x D, fp32:
 *
 *     PE(pos, 2i)   = sin(pos * w_i)
 *     PE(pos, 2i+1) = cos(pos * w_i),   w_i = 10000^(-s*i/D)
 *
 * s = 1 is the convention of the seed's table (shared/seeds: for T = D = 5,
 * row 1 reads 0.841471 0.540302 0.157827 0.987467 0.0251162), which
 * `kbench pe` reproduces.  The paper's formula, 10000^(-2i/D), is s = 2
 * (`kbench pe --paper`).  Shapes are written TxD; any T, D >= 1 (an odd D
 * ends with a sine column).
 *
 * Bytes: the table written once (4*T*D).  FLOPs: 0 counted (it is bound by
 * stores and the sin/cos units).
 * Tolerance: the angle pos * w_i is rounded to fp32 before sin/cos, an
 * error up to pos * 2^-24, so the check's reduction length is T^2: its
 * sqrt(L) term is T.  No inputs. */
#ifndef KBENCH_POSENC_H
#define KBENCH_POSENC_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_POSENC_SEED_SCALE 1.0f
#define KB_POSENC_PAPER_SCALE 2.0f

typedef struct {
    int T, D;
    float scale;   /* s above */
    float *pe;     /* T x D */
} kb_posenc_args;

extern const kb_op kb_op_posenc;

/* Reference rows in double. */
void posenc_reference_rows(int D, double scale, const int64_t *rows, int nrows, double *pe);
/* The table in fp32 arithmetic, as the GPU computes it (for `kbench pe`). */
void posenc_table_f32(int T, int D, float scale, float *pe);

#ifdef __cplusplus
}
#endif
#endif
