/* A start gate for several GPUs (harness.h): a one-thread kernel per
 * stream spins on a word of pinned host memory that every GPU reads over
 * the bus, until the host bumps it.  Work queued behind the gates then
 * starts on all GPUs within a bus round trip of each other. */
#include <stdlib.h>
#include "harness/harness.h"
#include "kernels/cuda_util.h"

#define GATE_TIMEOUT_NS 2000000000ull

struct kb_gate {
    volatile unsigned *word; /* [0]: openings so far; [1]: set by a gate that timed out */
    unsigned opened;
};

__global__ void gate_kernel(volatile unsigned *word, unsigned want)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    while ((int)(word[0] - want) < 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > GATE_TIMEOUT_NS) {
            word[1] = 1;
            return;
        }
    }
}

extern "C" const char *kb_gate_create(kb_gate **g)
{
    kb_gate *n = (kb_gate *)calloc(1, sizeof *n);
    if (!n)
        return "out of host memory";
    void *p = NULL;
    /* Portable and mapped: one pointer that every GPU can read (UVA). */
    cudaError_t e = cudaHostAlloc(&p, 2 * sizeof(unsigned), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
        free(n);
        return cudaGetErrorString(e);
    }
    n->word = (volatile unsigned *)p;
    n->word[0] = 0;
    n->word[1] = 0;
    *g = n;
    return NULL;
}

extern "C" void kb_gate_destroy(kb_gate *g)
{
    if (!g)
        return;
    cudaFreeHost((void *)g->word);
    free(g);
}

extern "C" const char *kb_gate_close(kb_gate *g, cudaStream_t stream)
{
    gate_kernel<<<1, 1, 0, stream>>>(g->word, g->opened + 1);
    return kb_cuda_status(cudaGetLastError());
}

extern "C" void kb_gate_open(kb_gate *g)
{
    __atomic_store_n((unsigned *)&g->word[0], ++g->opened, __ATOMIC_RELEASE);
}

extern "C" int kb_gate_timed_out(const kb_gate *g) { return g->word[1] != 0; }
