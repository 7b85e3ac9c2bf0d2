/* What the stages of model/stages.h share: the prompt, and their rows'
 * timing through the engine. */
#include "model/stages.h"

void kb_stage_prompt(const kb_stage_shape *shape, int *ids, int n)
{
    uint64_t x = shape->seed * 0x9E3779B97F4A7C15u + 0x2545F4914F6CDD1Du;
    for (int i = 0; i < n; ++i) { /* xorshift64*: any id, none favoured much */
        x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
        ids[i] = (int)((x * 0x2545F4914F6CDD1Du >> 33) % (uint64_t)shape->vocab);
    }
}

const char *kb_stage_time(const kb_time_opts *timing, kb_launch_fn run, void *user, cudaStream_t stream, int per_run,
                          kb_timing *out)
{
    const kb_timed w = {.launch = run, .arg = user, .stream = stream, .units = per_run};
    return kb_time(&w, timing, out);
}
