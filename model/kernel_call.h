/* One call site of a variant from the op tables, as the models run them:
 * found by (op, name, dtype) as a sweep finds it, refused on a GPU older
 * than it needs, set up once with the site's arguments; the context its
 * setup made goes to every launch and is torn down at the end. */
#ifndef KBENCH_MODEL_KERNEL_CALL_H
#define KBENCH_MODEL_KERNEL_CALL_H

#include <cuda_runtime_api.h>
#include "ops/kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const kb_variant *v;
    void *ctx;
    int ready; /* set up: teardown owed */
} kb_call;

/* Find the form and run its setup with args (as a launch's, or a bound on
 * them the variant documents, such as the widest K).  NULL, or one line
 * naming the op and variant. */
const char *kb_call_setup(kb_call *c, const char *op, const char *name, kb_dtype t, const void *args);
void kb_call_teardown(kb_call *c);

static inline const char *kb_call_launch(const kb_call *c, const void *args, cudaStream_t s)
{
    return c->v->launch(args, c->ctx, s);
}

#ifdef __cplusplus
}
#endif
#endif
