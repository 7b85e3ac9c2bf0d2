/* Helpers shared by variant files: error strings for launchers and a few
 * device-side utilities.  Every launcher ends with KB_LAUNCHED(), which turns
 * the launch's error (bad configuration, missing kernel image) into the
 * status string the harness reports. */
#ifndef KBENCH_CUDA_UTIL_H
#define KBENCH_CUDA_UTIL_H

#include <cuda_runtime.h>

#define KB_CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

static inline const char *kb_cuda_status(cudaError_t e)
{
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}

/* Status of the launch just made. */
#define KB_LAUNCHED() return kb_cuda_status(cudaGetLastError())

#endif
