/* A deliberately broken allreduce for the GPU suite: it must be reported
 * FAIL, proving that every rank's output is checked against the sum. */
#include <cstdlib>
#include "ops/collective.h"
#include "kernels/cuda_util.h"

static const char *setup(const void *args, void **ctx)
{
    kb_ranks *g = (kb_ranks *)calloc(1, sizeof *g);
    (void)args;
    if (!g)
        return "out of host memory";
    const char *why = kb_ranks_open(g);
    if (why) {
        kb_ranks_close(g);
        free(g);
        return why;
    }
    *ctx = g;
    return NULL;
}

static void teardown(void *ctx)
{
    kb_ranks_close((kb_ranks *)ctx);
    free(ctx);
}

/* Each rank copies only its own input: out_r = in_r, not the sum. */
static const char *launch_local(const void *args, void *ctx, cudaStream_t stream)
{
    const kb_collective_args *a = (const kb_collective_args *)args;
    kb_ranks *g = (kb_ranks *)ctx;
    const char *e = kb_ranks_fork(g, stream);
    for (int r = 0; r < a->ranks && !e; ++r) {
        e = kb_cuda_status(cudaSetDevice(g->device[r]));
        if (!e)
            e = kb_cuda_status(cudaMemcpyAsync(a->out[r], a->in[r], (size_t)a->n * sizeof(float),
                                               cudaMemcpyDeviceToDevice, g->stream[r]));
    }
    const char *joined = kb_ranks_join(g, stream);
    return e ? e : joined;
}

extern "C" const kb_variant broken_allreduce_local = {
    .name = "broken_local", .summary = "each GPU copies only its own input",
    .dtype = KB_F32, .math = KB_MATH_F32, .setup = setup, .teardown = teardown, .launch = launch_local};
