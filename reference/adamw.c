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

static const kb_adamw_hyper op_hyper = {KB_ADAMW_LR,  KB_ADAMW_BETA1,        KB_ADAMW_BETA2,
                                        KB_ADAMW_EPS, KB_ADAMW_WEIGHT_DECAY, KB_ADAMW_MAX_NORM};

double adamw_clip_for(const kb_adamw_hyper *h, double sumsq)
{
    return fmin(1.0, h->max_norm / (sqrt(sumsq) + KB_ADAMW_CLIP_EPS));
}

double adamw_clip_scale(double sumsq) { return adamw_clip_for(&op_hyper, sumsq); }

double adamw_element_step(const kb_adamw_hyper *h, double g, double master, double *m, double *v, double bc1,
                          double bc2)
{
    *m = h->beta1 * *m + (1 - h->beta1) * g;
    *v = h->beta2 * *v + (1 - h->beta2) * g * g;
    return master * (1 - h->lr * h->weight_decay) - h->lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + h->eps);
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
        double mi = m[i], vi = v[i];
        const double w = adamw_element_step(&op_hyper, scale * kb_tensor_value(grad, i, t), master[i], &mi, &vi,
                                            bc1, bc2);
        ref[i] = which == KB_ADW_M ? mi : which == KB_ADW_V ? vi : w; /* param: master' rounded */
    }
}
