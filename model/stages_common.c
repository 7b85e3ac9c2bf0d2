/* What the stages of model/stages.h share: the prompt and the timing. */
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "ops/kbench.h"
#include "model/stages.h"
#include "kernels/cuda_util.h"

void kb_stage_prompt(const kb_stage_shape *shape, int *ids, int n)
{
    uint64_t x = shape->seed * 0x9E3779B97F4A7C15u + 0x2545F4914F6CDD1Du;
    for (int i = 0; i < n; ++i) { /* xorshift64*: any id, none favoured much */
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        ids[i] = (int)((x * 0x2545F4914F6CDD1Du >> 33) % (uint64_t)shape->vocab);
    }
}

static kb_nvml_window clocks; /* since the last kb_stage_take_clocks */

void kb_stage_take_clocks(kb_nvml_window *out)
{
    *out = clocks;
    memset(&clocks, 0, sizeof clocks);
}


static const char *time_runs(kb_stage_fn run, void *user, cudaStream_t s, cudaEvent_t t0, cudaEvent_t t1, int runs,
                             double per_run, double *ms)
{
    const char *err = run(user, s); /* warm-up: first-touch, lazy module loads */
    for (int i = 0; !err && i < runs; ++i) {
        float t;
        if ((err = kb_cuda_status(cudaEventRecord(t0, s))) || (err = run(user, s)) || (err = kb_cuda_status(cudaEventRecord(t1, s))) ||
            (err = kb_cuda_status(cudaEventSynchronize(t1))) || (err = kb_cuda_status(cudaEventElapsedTime(&t, t0, t1))))
            break;
        ms[i] = t / per_run;
        kb_nvml_sample(&clocks);
    }
    return err ? err : kb_cuda_status(cudaStreamSynchronize(s));
}

const char *kb_stage_time(kb_stage_fn run, void *user, void *stream, int runs, double per_run, kb_stats *st)
{
    cudaEvent_t t0 = NULL, t1 = NULL;
    double *ms = malloc(sizeof(double) * (size_t)(runs > 0 ? runs : 1));
    const char *err = !ms ? "out of host memory" : kb_cuda_status(cudaEventCreate(&t0));
    if (!err && !(err = kb_cuda_status(cudaEventCreate(&t1))))
        err = time_runs(run, user, (cudaStream_t)stream, t0, t1, runs, per_run, ms);
    if (!err)
        kb_stats_compute(ms, runs, st);
    if (t0)
        cudaEventDestroy(t0);
    if (t1)
        cudaEventDestroy(t1);
    free(ms);
    return err;
}
