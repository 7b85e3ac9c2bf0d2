/* adamw reference: plain C11 in double, from the stored gradient (bf16
 * widened exactly) and the fp32 master, m and v, the norm's sum over the
 * whole gradient spread over the threads. */
#include <math.h>
#include "ops/adamw.h"

double adamw_grad_sumsq(int64_t n, kb_dtype t, const void *grad)
{
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
        const double g = kb_tensor_value(grad, i, t);
        sum += g * g;
    }
    return sum;
}

double adamw_clip_scale(double sumsq) { return fmin(1.0, KB_ADAMW_MAX_NORM / (sqrt(sumsq) + KB_ADAMW_CLIP_EPS)); }

typedef struct {
    double master, m, v;
} adamw_state;

/* One element's step from its clipped gradient g; bc1 and bc2 are the
 * bias corrections 1 - beta^t. */
static adamw_state step(double g, double master, double m, double v, double bc1, double bc2)
{
    adamw_state s;
    s.m = KB_ADAMW_BETA1 * m + (1 - KB_ADAMW_BETA1) * g;
    s.v = KB_ADAMW_BETA2 * v + (1 - KB_ADAMW_BETA2) * g * g;
    s.master = master * (1 - KB_ADAMW_LR * KB_ADAMW_WEIGHT_DECAY) -
               KB_ADAMW_LR / bc1 * s.m / (sqrt(s.v) / sqrt(bc2) + KB_ADAMW_EPS);
    return s;
}

void adamw_reference(int64_t n, kb_dtype t, const void *grad, const float *master, const float *m, const float *v,
                     int which, double *ref)
{
    const double sumsq = adamw_grad_sumsq(n, t, grad);
    if (which == KB_ADW_NORM) {
        ref[0] = sqrt(sumsq);
        return;
    }
    const double scale = adamw_clip_scale(sumsq);
    const double bc1 = 1 - pow(KB_ADAMW_BETA1, KB_ADAMW_STEP), bc2 = 1 - pow(KB_ADAMW_BETA2, KB_ADAMW_STEP);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const adamw_state s = step(scale * kb_tensor_value(grad, i, t), master[i], m[i], v[i], bc1, bc2);
        ref[i] = which == KB_ADW_M ? s.m : which == KB_ADW_V ? s.v : s.master; /* param: master' rounded */
    }
}
