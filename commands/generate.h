/* `kbench model generate`: greedy generation with the Llama-style model
 * (reference/llama.h), from seeded weights, a Hugging Face checkpoint or a
 * GGUF file (whose tokenizer then also takes --prompt TEXT and decodes the
 * output): prefill over a prompt of token ids, then one decode step per new token
 * through the KV cache.  For now only the C reference on the CPU runs it
 * (--cpu-only); the GPU forward comes with issue 17's `fast` stage. */
#ifndef KBENCH_MODEL_GENERATE_H
#define KBENCH_MODEL_GENERATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "harness/timing.h"
#include "tokenizer/bpe.h"
#include "model/llama.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The flags of a seeded Llama-style model, 0 where not given (generate's
 * and train's --d-model, --layers, --heads, --kv-heads, --d-ff, --vocab,
 * --tied). */
typedef struct {
    int d_model, layers, heads, kv_heads, d_ff, vocab;
    int tied;
} kb_llama_flags;

/* The model they describe at seq positions, the rest defaulted (d_model
 * 256, 8 heads, KV heads a quarter of them where that divides, d_ff 8/3
 * d_model rounded up to 64, 4 layers, vocab 32000) and checked.  0, or -1
 * with one line in err in the flags' words. */
int kb_llama_flag_config(const kb_llama_flags *f, int seq, kb_llama_config *c, char *err, size_t errlen);

/* An output flag's path: its parent writable, the path absent or of the
 * kind wanted (a directory, or a regular file).  0, or -1 with one line in
 * err naming the flag. */
int kb_check_output(const char *flag, const char *path, int want_dir, char *err, size_t errlen);

typedef struct {
    kb_llama_flags shape; /* 0 where not given: the default, or the checkpoint's */
    uint64_t seed;
    const char *weights;       /* a checkpoint directory */
    const char *gguf;          /* --gguf FILE: the model (and its tokenizer) from a GGUF file */
    const char *text;          /* --prompt TEXT: tokenized with the GGUF's tokenizer */
    const kb_bpe *bpe;         /* that tokenizer once loaded, else NULL */
    int *prompt, n_prompt;     /* --prompt-ids, parsed (malloc'd; kb_generate_opts_free) */
    int prompt_len;            /* --prompt-len: a seeded random prompt */
    int tokens;                /* --tokens: how many to generate */
    int cpu_only;
    const char *logits_out;    /* --logits-out FILE.npy */
    const char *save_dir;      /* --save DIR */
    const char *append;        /* --append RUN.csv: the GPU run's rows go to this kbench CSV */
    int no_ceilings;           /* --no-ceilings: skip measuring them (and the shares of them) */
    kb_stop_rule stop;         /* --max-time, --max-noise, --min-samples: the GPU rows' stop rule */
    kb_llama_dtype save_dtype; /* --save-dtype */
    int save_dtype_given;
} kb_generate_opts;

/* Parse `generate [flags]` (argv[0] is "generate").  0, or -1 with one line
 * in err. */
int kb_generate_parse(int argc, char **argv, kb_generate_opts *o, char *err, size_t errlen);
void kb_generate_opts_free(kb_generate_opts *o);
void kb_generate_usage(FILE *f);

/* The GPU run (commands/generate_gpu.c): rounds m's weights to bf16, checks
 * the GPU forward against the C reference, times prefill and decode through
 * the timing engine (o->stop), and adds their rows to the kbench CSV
 * `append` (may be NULL).
 * Returns the exit code (0, or 1 on a failed check or a GPU error). */
int kb_generate_gpu(kb_llama_model *m, const int *prompt, int T, const kb_generate_opts *o);

/* "generated text: ..." with the decoded ids, when o has a tokenizer. */
void kb_generate_print_text(const kb_generate_opts *o, const int *ids, int n);

/* The whole command; returns the process exit code (0, 1 or 2). */
int kb_cmd_generate(int argc, char **argv);

/* `kbench model tokenize --gguf FILE (--text TEXT | --ids ID,..)`
 * (commands/tokenize.c): a GGUF's tokenizer on its own. */
int kb_cmd_tokenize(int argc, char **argv);
void kb_tokenize_usage(FILE *f);

#ifdef __cplusplus
}
#endif
#endif
