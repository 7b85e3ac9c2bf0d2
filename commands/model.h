/* `kbench model encoder|decoder|seq2seq`: the transformer from kbench's
 * kernels, run on the GPU beside its C reference on the same weights and
 * inputs, with a CPU vs GPU time breakdown and CSV rows. */
#ifndef KBENCH_MODEL_COMMAND_H
#define KBENCH_MODEL_COMMAND_H

#include <stdint.h>
#include <stdio.h>
#include "harness/timing.h"
#include "model/gpu.h"
#include "model/transformer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    kb_tf_mode mode;
    /* 0 where not given: the default, or the weights' and inputs' own. */
    int batch, src_len, tgt_len, d_model, heads, d_ff, layers;
    int no_causal;
    const char *src_text, *tgt_text, *vocab;   /* --src, --tgt, --vocab */
    const char *src_npy, *tgt_npy, *weights, *out_npy;
    unsigned gemm_mask;                        /* bit per kb_tf_gemm; 0 = all */
    kb_tf_kernels kernels;                     /* --attention, --add-norm, --norm; NULL: defaults */
    uint64_t seed;
    int cpu_only;
    int check_seqs;                            /* 0 = as many as the CPU budget allows */
    int hot, device;
    const char *csv_path, *out_dir, *append;   /* --append: add rows to that CSV */
    kb_stop_rule stop;                         /* --max-time, --max-noise, --min-samples */
} kb_model_opts;

/* Parse `model MODE [flags]` (argv[0] is "model").  0, or -1 with one line
 * in err. */
int kb_model_parse(int argc, char **argv, kb_model_opts *o, char *err, size_t errlen);
void kb_model_usage(FILE *f);

/* The whole command; returns the process exit code (0, 1 or 2). */
int kb_cmd_model(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
