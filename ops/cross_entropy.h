/* cross_entropy contract: a language model's loss and its gradient in one
 * op, as a training step needs them (the head's product is not in it: see
 * the linear_cross_entropy issue).  For each row r of logits z (R x V) with
 * target t_r, label smoothing eps = 0.1 and ignore index -100 (torch's):
 *     lse     = log sum_j exp(z_j)
 *     loss_r  = (1 - eps) (lse - z_t) + eps (lse - mean_j z_j)
 *     dz_rj   = (softmax(z)_j - (1 - eps) [j == t] - eps / V) / N
 * where N is the number of rows whose target is not ignored: dz is the
 * gradient of the mean of the losses over those rows (torch's
 * cross_entropy with reduction 'mean').  An ignored row has loss 0 and
 * dz 0.  Shapes are written RxV; any R, V >= 1.  Two dtypes, as the
 * variant's: f32, or z and dz in bf16 with fp32 arithmetic; the loss is
 * fp32 in both.
 *
 * Tensors: z (R x V) and targets (R, i32) in; loss (R rows of one value)
 * and dz (R rows of V) out, each the end of a reduction over its row (V
 * long).  Bytes: z read and dz written once, targets and loss.  FLOPs:
 * counted as 5 per element.
 * Inputs: z uniform in [-4, 4]; targets spread over [0, V); ignored rows
 * are those cross_entropy_ignored names (row 1 when R >= 4, and every row
 * r with r % 97 == 50); when R >= 4 row 0's target is 0 and its logit
 * there is raised by 1000 (a certain prediction: softmax_t = 1 and
 * dz_t = -eps (1 - 1/V) / N). */
#ifndef KBENCH_CROSS_ENTROPY_H
#define KBENCH_CROSS_ENTROPY_H

#include <stdint.h>
#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_CE_SMOOTHING 0.1f
#define KB_CE_IGNORE (-100)

/* z and dz are float for the f32 form, bf16 bit patterns for the bf16 one. */
typedef struct {
    int R, V;
    float inv_n; /* 1 / N, N the rows not ignored */
    const void *z;
    const int *targets;
    float *loss;
    void *dz;
} kb_cross_entropy_args;

extern const kb_op kb_op_cross_entropy;

enum { KB_CE_Z, KB_CE_TARGETS, KB_CE_LOSS, KB_CE_DZ, KB_CE_TENSORS };

/* Whether row r of R is given the ignore index; the rows not ignored. */
int cross_entropy_ignored(int64_t r, int64_t R);
int64_t cross_entropy_counted(int64_t R);
/* Reference rows of the loss (one value a row) or, for KB_CE_DZ, of dz, in
 * double, from z of dtype t and the targets. */
void cross_entropy_reference(int64_t R, int64_t V, kb_dtype t, const void *z, const int *targets, int which,
                             const int64_t *rows, int nrows, double *ref);

#ifdef __cplusplus
}
#endif
#endif
