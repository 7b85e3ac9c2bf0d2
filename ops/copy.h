/* copy contract: dst = src, fp32, N elements.  Shapes are written N.
 * The memory ceiling of the run: bytes count N read plus N written, and the
 * best copy row's GB/s becomes `ceiling_mem_gb_s`, which every other row's
 * `pct_of_ceiling` is set against.  FLOPs: 0.  The check is exact in effect
 * (an f32 tolerance over a reduction of length 1). */
#ifndef KBENCH_COPY_H
#define KBENCH_COPY_H

#include "kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t n;
    const float *src;
    float *dst;
} kb_copy_args;

extern const kb_op kb_op_copy;

#ifdef __cplusplus
}
#endif
#endif
