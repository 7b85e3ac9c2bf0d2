/* Parsing `kbench model`.  Every problem is one line in err (exit 2), found
 * before anything is loaded or run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "commands/model.h"
#include "commands/generate.h"
#include "commands/train.h"
#include "model/stages.h"
#include "model/gpu.h"

void kb_model_usage(FILE *f)
{
    fputs("usage: kbench model encoder|decoder|seq2seq\n"
          "         [--batch B] [--src-len Ts] [--tgt-len Tt] [--d-model D] [--heads H] [--d-ff F]\n"
          "         [--layers N] [--no-causal] [--seed N]\n"
          "         [--src TEXT] [--tgt TEXT] [--vocab FILE]\n"
          "         [--src-npy FILE] [--tgt-npy FILE] [--weights FILE.safetensors] [--out FILE.npy]\n"
          "         [--gemm fp32|3xtf32[,..]] [--attention NAME] [--add-norm NAME] [--norm NAME]\n"
          "         [--cpu-only] [--check-seqs N]\n"
          "         [--csv FILE | --out-dir DIR | --append FILE] [--device N] [--hot]\n"
          "         [--max-time SECONDS] [--max-noise PCT] [--min-samples N]\n",
          f);
    kb_generate_usage(f);
    kb_train_usage(f);
    kb_tokenize_usage(f);
    kb_stages_usage(f);
}

static int fail(char *err, size_t errlen, const char *fmt, const char *a, const char *b)
{
    snprintf(err, errlen, fmt, a, b);
    return -1;
}

static int parse_int(const char *flag, const char *val, uint64_t lo, uint64_t hi, int *out, char *err,
                     size_t errlen)
{
    uint64_t v;
    if (kb_int_flag(flag, val, lo, hi, &v, err, errlen) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* A comma-separated list of GEMM paths; an empty item is a mistake, not
 * "every path", and so is a path named twice. */
static int parse_gemm(kb_model_opts *o, const char *list, char *err, size_t errlen)
{
    char *copy = strdup(list), *rest = copy, *tok, q[KB_QUOTE_LEN];
    int rc = copy ? 0 : fail(err, errlen, "out of memory%s%s", "", "");
    while (rc == 0 && (tok = strsep(&rest, ","))) {
        int g = 0;
        while (g < KB_TF_GEMM_COUNT && strcmp(tok, kb_tf_gemm_name((kb_tf_gemm)g)) != 0)
            ++g;
        if (!*tok)
            rc = fail(err, errlen, "--gemm needs at least one of fp32, 3xtf32, comma-separated, got '%s'%s",
                      kb_quote(list, q, sizeof q), "");
        else if (g == KB_TF_GEMM_COUNT)
            rc = fail(err, errlen, "unknown --gemm '%s' (expected fp32 or 3xtf32)%s",
                      kb_quote(tok, q, sizeof q), "");
        else if (o->gemm_mask & 1u << g)
            rc = fail(err, errlen, "--gemm names '%s' twice%s", tok, "");
        else
            o->gemm_mask |= 1u << g;
    }
    free(copy);
    return rc;
}

/* A flag that takes a string; NULL when it is not one. */
static const char **string_slot(kb_model_opts *o, const char *a)
{
    static const char *names[] = {"--src", "--tgt", "--vocab", "--src-npy", "--tgt-npy",
                                  "--weights", "--out", "--csv", "--out-dir", "--append",
                                  "--attention", "--add-norm", "--norm"};
    const char **slots[] = {&o->src_text, &o->tgt_text, &o->vocab, &o->src_npy, &o->tgt_npy,
                            &o->weights, &o->out_npy, &o->csv_path, &o->out_dir, &o->append,
                            &o->kernels.attention, &o->kernels.add_norm, &o->kernels.norm};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i]))
            return slots[i];
    return NULL;
}

/* A flag that takes a size; NULL when it is not one. */
static int *int_slot(kb_model_opts *o, const char *a)
{
    static const char *names[] = {"--batch", "--src-len", "--tgt-len", "--d-model", "--heads",
                                  "--d-ff", "--layers", "--check-seqs", "--device"};
    int *slots[] = {&o->batch, &o->src_len, &o->tgt_len, &o->d_model, &o->heads,
                    &o->d_ff, &o->layers, &o->check_seqs, &o->device};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i]))
            return slots[i];
    return NULL;
}

static int parse_flag(int argc, char **argv, int *i, kb_model_opts *o, char *err, size_t errlen)
{
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    const char **s = string_slot(o, a);
    int *n = int_slot(o, a);
    if (!strcmp(a, "--no-causal")) o->no_causal = 1;
    else if (!strcmp(a, "--cpu-only")) o->cpu_only = 1;
    else if (!strcmp(a, "--hot")) o->hot = 1;
    else if (s || n || !strcmp(a, "--gemm") || !strcmp(a, "--seed") || kb_is_stop_flag(a)) {
        if (!val || !*val)
            return fail(err, errlen, "%s needs a value%s", a, "");
        ++*i;
        if (s)
            *s = val;
        else if (n)
            return parse_int(a, val, !strcmp(a, "--device") ? 0 : 1, !strcmp(a, "--device") ? 1024 : 1 << 30, n,
                             err, errlen);
        else if (!strcmp(a, "--gemm"))
            return parse_gemm(o, val, err, errlen);
        else if (kb_is_stop_flag(a))
            return kb_parse_stop_flag(a, val, &o->stop, err, errlen);
        else
            return kb_int_flag(a, val, 0, UINT64_MAX, &o->seed, err, errlen);
    } else {
        char q[KB_QUOTE_LEN];
        return fail(err, errlen, "unknown option '%s' for kbench model (see kbench help)%s",
                    kb_quote(a, q, sizeof q), "");
    }
    return 0;
}

/* Combinations that cannot mean anything. */
static int check_combinations(const kb_model_opts *o, char *err, size_t errlen)
{
    const int enc = o->mode == KB_TF_ENCODER;
    if ((o->src_text || o->tgt_text) && (o->src_npy || o->tgt_npy))
        return fail(err, errlen, "give the inputs as text (--src/--tgt) or as .npy (--src-npy/--tgt-npy), not both%s%s", "", "");
    if (enc && (o->tgt_text || o->tgt_npy || o->tgt_len))
        return fail(err, errlen, "the encoder reads no target: drop --tgt, --tgt-npy and --tgt-len%s%s", "", "");
    if (!enc && (!o->src_text != !o->tgt_text))
        return fail(err, errlen, "%s needs both --src and --tgt text%s", o->mode == KB_TF_DECODER ? "decoder" : "seq2seq", "");
    if (!enc && (!o->src_npy != !o->tgt_npy))
        return fail(err, errlen, "%s needs both --src-npy and --tgt-npy%s", o->mode == KB_TF_DECODER ? "decoder" : "seq2seq", "");
    if (o->vocab && !o->src_text)
        return fail(err, errlen, "--vocab applies to text inputs (--src, --tgt)%s%s", "", "");
    if ((o->src_text || o->src_npy) && (o->batch || o->src_len || o->tgt_len))
        return fail(err, errlen, "the inputs set the batch and lengths: drop --batch, --src-len and --tgt-len%s%s", "", "");
    if (o->weights && o->mode != KB_TF_SEQ2SEQ)
        return fail(err, errlen, "--weights loads a torch.nn.Transformer: use it with seq2seq%s%s", "", "");
    if (o->weights && (o->d_model || o->d_ff || o->layers))
        return fail(err, errlen, "the weights set d_model, d_ff and the layers: drop --d-model, --d-ff and --layers%s%s", "", "");
    if (enc && o->no_causal)
        return fail(err, errlen, "--no-causal applies to the decoder's self-attention%s%s", "", "");
    if (!!o->csv_path + !!o->out_dir + !!o->append > 1)
        return fail(err, errlen, "--csv, --out-dir and --append each name the output; give one%s%s", "", "");
    if (o->cpu_only && (o->csv_path || o->out_dir || o->append))
        return fail(err, errlen, "--cpu-only writes no CSV: drop --csv, --out-dir and --append%s%s", "", "");
    if (o->kernels.norm && o->mode != KB_TF_SEQ2SEQ)
        return fail(err, errlen, "--norm picks the final norms' variant, which only seq2seq has%s%s", "", "");
    char why[256];
    if (kb_tf_kernels_check(&o->kernels, why, sizeof why))
        return fail(err, errlen, "%s%s", why, "");
    return 0;
}

int kb_model_parse(int argc, char **argv, kb_model_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o); /* and so the default stop rule */
    o->seed = 1;
    const char *modes[] = {"encoder", "decoder", "seq2seq"};
    if (argc < 2)
        return fail(err, errlen, "model needs a mode: encoder, decoder, seq2seq or generate%s%s", "", "");
    int m = 0;
    while (m < 3 && strcmp(argv[1], modes[m]) != 0)
        ++m;
    char q[KB_QUOTE_LEN];
    if (m == 3)
        return fail(err, errlen, "unknown model '%s' (expected encoder, decoder, seq2seq or generate)%s",
                    kb_quote(argv[1], q, sizeof q), "");
    o->mode = (kb_tf_mode)m;
    for (int i = 2; i < argc; ++i)
        if (parse_flag(argc, argv, &i, o, err, errlen) != 0)
            return -1;
    return check_combinations(o, err, errlen);
}
