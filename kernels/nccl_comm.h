/* One NCCL communicator per GPU of the run, made once a process
 * (ncclCommInitAll takes about a second) and shared by every NCCL variant:
 * the collectives' baseline and the tensor-parallel layers. */
#ifndef KBENCH_NCCL_COMM_H
#define KBENCH_NCCL_COMM_H

#include <nccl.h>
#include "ops/kbench.h"

#ifdef __cplusplus
extern "C" {
#endif

/* comms[r] is GPU r's of the run (kb_run_devices order); NULL, or why not. */
const char *kb_nccl_comms(ncclComm_t **comms);
/* NCCL's type for a kbench storage type. */
ncclDataType_t kb_nccl_type(kb_dtype t);

#ifdef __cplusplus
}
#endif
#endif
