/* The run's NCCL communicators (nccl_comm.h). */
#include <stdio.h>
#include <stdlib.h>
#include "kernels/nccl_comm.h"

/* Kept until the process exits, which frees them with its contexts:
 * destroying them at exit added 0.1-0.2 s to every run that made them. */
static ncclComm_t comms[KB_MAX_RANKS];
static int ncomms;

const char *kb_nccl_comms(ncclComm_t **out)
{
    static char why[160];
    const int *ids;
    int n = kb_run_devices(&ids);
    *out = comms;
    if (ncomms || why[0])
        return why[0] ? why : NULL;
    /* NVLink SHARP (multicast) stays off unless the user asked for it: on
     * shared hosts a fault in it can take the GPUs out of service. */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    ncclResult_t e = ncclCommInitAll(comms, n, ids);
    cudaSetDevice(ids[0]);
    if (e != ncclSuccess) {
        snprintf(why, sizeof why, "NCCL could not make its communicators: %s", ncclGetErrorString(e));
        return why;
    }
    ncomms = n;
    return NULL;
}

ncclDataType_t kb_nccl_type(kb_dtype t)
{
    return t == KB_BF16 ? ncclBfloat16 : t == KB_I32 ? ncclInt32 : ncclFloat32;
}
