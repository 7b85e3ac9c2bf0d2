/* `kbench model train --data FILE.txt --cpu-only` (commands/train.c): the
 * Llama-style model trained on text by the C reference of the whole
 * training step (reference/llama_train.h), on a BPE learnt from the text,
 * with one progress line a step, a held-out loss and the loss curve in a
 * CSV.  The GPU step it will check comes with issue 47. */
#ifndef KBENCH_COMMANDS_TRAIN_H
#define KBENCH_COMMANDS_TRAIN_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The whole command (argv[0] is "train"); returns the exit code (0, 1 or 2). */
int kb_cmd_train(int argc, char **argv);
void kb_train_usage(FILE *f);

#ifdef __cplusplus
}
#endif
#endif
