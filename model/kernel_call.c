/* Variants at the models' call sites (model/kernel_call.h). */
#include <stdio.h>
#include "harness/harness.h"
#include "model/kernel_call.h"

/* The current GPU's compute capability as 10 major + minor, or -1. */
static int device_cc(void)
{
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return -1;
    return major * 10 + minor;
}

const char *kb_call_setup(kb_call *c, const char *op, const char *name, kb_dtype t, const void *args)
{
    static char why[256];
    const kb_op *o = kb_find_op(op);
    const kb_variant *v = o ? kb_find_variant(o, name, t) : NULL;
    const int cc = device_cc();
    const char *no = !v ? "not in this build" : cc < 0 ? "cannot read the GPU's compute capability"
                     : v->min_cc > cc ? "too new for this GPU"
                     : v->setup ? v->setup(args, &c->ctx) : NULL;
    if (no) {
        snprintf(why, sizeof why, "%s %s (%s): %s", op, name, kb_dtype_name(t), no);
        return why;
    }
    c->v = v;
    c->ready = 1;
    return NULL;
}

void kb_call_teardown(kb_call *c)
{
    if (c->ready && c->v->teardown)
        c->v->teardown(c->ctx);
    c->ready = 0;
    c->ctx = NULL;
}
