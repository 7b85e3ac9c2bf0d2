/* `kbench model generate` (commands/generate.h): flags, the model and the
 * prompt, all checked before any work (exit 2 with one line), then prefill
 * and greedy decoding on the C reference with the KV cache, timed. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/npy.h"
#include "harness/harness.h"
#include "ops/kbench.h"
#include "commands/generate.h"
#include "model/llama_gguf.h"
#include "model/llama_gpu.h"
#include "model/transformer.h"

#define MAX_SEQ (1 << 20) /* the longest prompt, and the most tokens generated */

void kb_generate_usage(FILE *f)
{
    fputs("usage: kbench model generate [--cpu-only]\n"
          "         [--weights DIR | --gguf FILE | --d-model D --layers N --heads H --kv-heads K --d-ff F --vocab V\n"
          "          --tied]\n"
          "         [--prompt-ids ID,ID,.. | --prompt-len T | --prompt TEXT] [--tokens N] [--seed N]\n"
          "         [--logits-out FILE.npy] [--save DIR [--save-dtype f32|bf16|f16]]\n"
          "         [--append RUN.csv] [--no-ceilings] [--max-time SECONDS] [--max-noise PCT] [--min-samples N]\n",
          f);
}

void kb_generate_opts_free(kb_generate_opts *o)
{
    free(o->prompt);
    o->prompt = NULL;
    o->n_prompt = 0;
}

/* ---- flags ---------------------------------------------------------------------------- */

static int parse_int(const char *flag, const char *val, long lo, long hi, int *out, char *err, size_t errlen)
{
    uint64_t v;
    if (kb_int_flag(flag, val, (uint64_t)lo, (uint64_t)hi, &v, err, errlen) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

/* Comma-separated token ids; their range against the vocabulary is
 * checked once it is known. */
static int parse_ids(kb_generate_opts *o, const char *list, char *err, size_t errlen)
{
    size_t n;
    free(o->prompt);
    o->n_prompt = 0;
    if (kb_id_list("--prompt-ids", list, INT_MAX, MAX_SEQ, &o->prompt, &n, err, errlen) != 0)
        return -1;
    o->n_prompt = (int)n;
    return 0;
}

static int parse_dtype(kb_generate_opts *o, const char *val, char *err, size_t errlen)
{
    static const char *const names[] = {"f32", "bf16", "f16"};
    char q[KB_QUOTE_LEN];
    for (int i = 0; i < 3; ++i)
        if (!strcmp(val, names[i])) {
            o->save_dtype = (kb_llama_dtype)i;
            o->save_dtype_given = 1;
            return 0;
        }
    return kb_fail(err, errlen, "unknown --save-dtype '%s' (expected f32, bf16 or f16)", kb_quote(val, q, sizeof q));
}

static int *int_slot(kb_generate_opts *o, const char *a, long *lo, long *hi)
{
    static const char *names[] = {"--d-model", "--layers", "--heads", "--kv-heads", "--d-ff", "--vocab",
                                  "--prompt-len", "--tokens"};
    int *slots[] = {&o->shape.d_model, &o->shape.layers, &o->shape.heads, &o->shape.kv_heads, &o->shape.d_ff,
                    &o->shape.vocab,
                    &o->prompt_len, &o->tokens};
    static const long highs[] = {1 << 30, 1 << 16, 1 << 16, 1 << 16, 1 << 30, 1 << 30, MAX_SEQ, MAX_SEQ};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i])) {
            *lo = 1;
            *hi = highs[i];
            return slots[i];
        }
    return NULL;
}

static const char **string_slot(kb_generate_opts *o, const char *a)
{
    static const char *names[] = {"--weights", "--logits-out", "--save", "--append", "--gguf", "--prompt"};
    const char **slots[] = {&o->weights, &o->logits_out, &o->save_dir, &o->append, &o->gguf, &o->text};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i]))
            return slots[i];
    return NULL;
}

static int parse_flag(int argc, char **argv, int *i, kb_generate_opts *o, char *err, size_t errlen)
{
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    char q[KB_QUOTE_LEN];
    long lo = 0, hi = 0;
    int *n = int_slot(o, a, &lo, &hi);
    const char **s = string_slot(o, a);
    if (!strcmp(a, "--cpu-only"))
        o->cpu_only = 1;
    else if (!strcmp(a, "--tied"))
        o->shape.tied = 1;
    else if (!strcmp(a, "--no-ceilings"))
        o->no_ceilings = 1;
    else if (n || s || !strcmp(a, "--prompt-ids") || !strcmp(a, "--seed") || !strcmp(a, "--save-dtype") ||
             kb_is_stop_flag(a)) {
        if (!val || !*val)
            return kb_fail(err, errlen, "%s needs a value", a);
        ++*i;
        if (n)
            return parse_int(a, val, lo, hi, n, err, errlen);
        if (s)
            *s = val;
        else if (!strcmp(a, "--prompt-ids"))
            return parse_ids(o, val, err, errlen);
        else if (!strcmp(a, "--seed"))
            return kb_int_flag(a, val, 0, UINT64_MAX, &o->seed, err, errlen);
        else if (kb_is_stop_flag(a))
            return kb_parse_stop_flag(a, val, &o->stop, err, errlen);
        else
            return parse_dtype(o, val, err, errlen);
    } else
        return kb_fail(err, errlen, "unknown option '%s' for kbench model generate (see kbench help)",
                       kb_quote(a, q, sizeof q));
    return 0;
}

static int check_combinations(const kb_generate_opts *o, char *err, size_t errlen)
{
    if (o->weights && o->gguf)
        return kb_fail(err, errlen, "give the model as --weights DIR or --gguf FILE, not both");
    const kb_llama_flags *f = &o->shape;
    if ((o->weights || o->gguf) && (f->d_model || f->layers || f->heads || f->kv_heads || f->d_ff || f->vocab || f->tied))
        return kb_fail(err, errlen, "the %s sets the model: drop --d-model, --layers, --heads, --kv-heads, "
                       "--d-ff, --vocab and --tied", o->gguf ? "GGUF file" : "checkpoint");
    if (o->prompt && o->prompt_len)
        return kb_fail(err, errlen, "give the prompt as --prompt-ids or its length as --prompt-len, not both");
    if (o->text && (o->prompt || o->prompt_len))
        return kb_fail(err, errlen, "give the prompt as --prompt TEXT or as ids (--prompt-ids, --prompt-len), not both");
    if (o->text && !o->gguf)
        return kb_fail(err, errlen, "--prompt needs a tokenizer: give the model as --gguf FILE");
    if (o->save_dtype_given && !o->save_dir)
        return kb_fail(err, errlen, "--save-dtype applies to --save");
    if (o->cpu_only && (o->append || o->no_ceilings))
        return kb_fail(err, errlen, "%s is for the GPU run: drop --cpu-only", o->append ? "--append" : "--no-ceilings");
    if (o->cpu_only && (o->stop.cap_s || o->stop.max_noise || o->stop.min_samples))
        return kb_fail(err, errlen, "--max-time, --max-noise and --min-samples time the GPU run: drop --cpu-only");
    return 0;
}

int kb_generate_parse(int argc, char **argv, kb_generate_opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->tokens = 32;
    for (int i = 1; i < argc; ++i)
        if (parse_flag(argc, argv, &i, o, err, errlen) != 0) {
            kb_generate_opts_free(o);
            return -1;
        }
    if (check_combinations(o, err, errlen) != 0) {
        kb_generate_opts_free(o);
        return -1;
    }
    return 0;
}

/* ---- outputs, checked before any work ------------------------------------------------ */

static int output_error(char *err, size_t errlen, const char *flag, const char *path, const char *why)
{
    char q[KB_QUOTE_LEN];
    return kb_fail(err, errlen, "%s '%s' %s", flag, kb_quote(path, q, sizeof q), why);
}

/* path's parent directory must be writable; path itself absent or of the
 * given kind (a regular file, or a directory). */
int kb_check_output(const char *flag, const char *path, int want_dir, char *err, size_t errlen)
{
    struct stat st;
    char dir[PATH_MAX], why[256];
    if (stat(path, &st) == 0) {
        if (want_dir && !S_ISDIR(st.st_mode))
            return output_error(err, errlen, flag, path, "is not a directory");
        if (!want_dir && !S_ISREG(st.st_mode))
            return output_error(err, errlen, flag, path, "is not a regular file");
    }
    if (strlen(path) >= sizeof dir)
        return output_error(err, errlen, flag, path, "is too long a path");
    strcpy(dir, path);
    const char *parent = want_dir && stat(path, &st) == 0 ? path : dirname(dir);
    if (access(parent, W_OK | X_OK) != 0) {
        snprintf(why, sizeof why, "cannot be written: %s", strerror(errno));
        return output_error(err, errlen, flag, path, why);
    }
    return 0;
}

/* ---- the model and the prompt -------------------------------------------------------- */

int kb_llama_flag_config(const kb_llama_flags *o, int seq, kb_llama_config *c, char *err, size_t errlen)
{
    const int d = o->d_model ? o->d_model : 256, heads = o->heads ? o->heads : 8;
    const int kv = o->kv_heads ? o->kv_heads : heads % 4 ? heads : heads / 4;
    const int64_t ff = o->d_ff ? o->d_ff : ((int64_t)8 * d / 3 + 63) / 64 * 64;
    *c = (kb_llama_config){.d_model = d, .d_ff = (int)(ff > 1 << 30 ? 1 << 30 : ff),
                           .layers = o->layers ? o->layers : 4, .heads = heads, .kv_heads = kv,
                           .head_dim = d / heads, .vocab = o->vocab ? o->vocab : 32000,
                           .max_pos = seq > 2048 ? seq : 2048, .tied = o->tied, .eps = 1e-5, .rope_theta = 10000};
    if (ff > 1 << 30)
        return kb_fail(err, errlen, "--d-ff defaults to 8/3 x --d-model = %lld, over 2^30: give --d-ff", (long long)ff);
    if (d % heads)
        return kb_fail(err, errlen, "--d-model %d is not a multiple of --heads %d", d, heads);
    if (kv > heads || heads % kv)
        return kb_fail(err, errlen, "--heads %d is not a multiple of --kv-heads %d", heads, kv);
    if (c->head_dim % 2)
        return kb_fail(err, errlen, "--d-model / --heads = %d is odd; RoPE rotates pairs", c->head_dim);
    if (kb_llama_weight_count(c) < 0)
        return kb_fail(err, errlen, "--d-model %d, --layers %d, --d-ff %d and --vocab %d make over 2^40 weights, the "
                       "most kbench allocates", d, c->layers, c->d_ff, c->vocab);
    return kb_llama_config_check(c, "the flags", err, errlen);
}

static int prompt_tokens(const kb_generate_opts *o) { return o->prompt ? o->n_prompt : o->prompt_len ? o->prompt_len : 16; }

/* The weights, the KV cache (double), the prefill's scratch (double) and
 * the logits must fit in this host, known before they are allocated. */
static int check_host_memory(const kb_generate_opts *o, const kb_llama_config *c, int T, int seq, char *err,
                             size_t errlen)
{
    const double kv = 2.0 * 8 * c->layers * (double)seq * c->kv_heads * c->head_dim;
    const double width = 2.0 * c->d_model + 2.0 * c->heads * c->head_dim + 2.0 * c->d_ff;
    const double scratch = 8 * ((double)T * width + (double)omp_get_max_threads() * seq + c->vocab);
    const double logits = (o->logits_out ? (double)o->tokens : 1) * c->vocab * 4;
    const double need =
        ((o->weights || o->gguf ? 0 : 4.0 * (double)kb_llama_weight_count(c)) + kv + scratch + logits) / (1 << 30);
    const double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE) / (1 << 30);
    if (have <= 0 || need <= have)
        return 0;
    return kb_fail(err, errlen, "the weights, KV cache, activations and logits need %.1f GiB of host memory; this host has %.1f GiB",
                   need, have);
}

typedef struct {
    kb_llama_model m;
    kb_bpe bpe;
    char no_bpe[512]; /* why a GGUF's tokenizer is not used, when it is not */
    int *prompt, T;
} run_setup;

/* The model and its tokenizer; --prompt's text becomes o->prompt, the ids
 * a --prompt-ids would give.  A tokenizer kbench cannot read is an error
 * only for --prompt: ids still run, without the generated text. */
static int load_gguf(kb_generate_opts *o, run_setup *r, char *err, size_t errlen)
{
    kb_gguf_file f;
    if (kb_gguf_open(o->gguf, &f, err, errlen) != 0)
        return -1;
    int rc = kb_llama_from_gguf(&r->m, &f, err, errlen);
    if (rc == 0 && !kb_bpe_in_gguf(&f))
        snprintf(r->no_bpe, sizeof r->no_bpe, "%s has no tokenizer", f.path);
    else if (rc == 0 && kb_bpe_from_gguf(&r->bpe, &f, r->no_bpe, sizeof r->no_bpe) == 0)
        o->bpe = &r->bpe;
    if (rc == 0 && o->text && !o->bpe)
        rc = kb_fail(err, errlen, "--prompt needs the tokenizer: %s", r->no_bpe);
    kb_gguf_close(&f);
    size_t n = 0;
    if (rc != 0 || !o->text)
        return rc;
    if (kb_bpe_encode(&r->bpe, o->text, strlen(o->text), &o->prompt, &n) != 0)
        return kb_fail(err, errlen, "out of memory for the prompt's tokens");
    if (n < 1 || n > MAX_SEQ)
        return kb_fail(err, errlen, "--prompt gives %zu tokens (1 to %d allowed)", n, MAX_SEQ);
    o->n_prompt = (int)n;
    return 0;
}

/* Everything that can be refused, in order, before any work. */
static int prepare(int argc, char **argv, kb_generate_opts *o, run_setup *r, char *err, size_t errlen)
{
    kb_llama_config c;
    if (kb_generate_parse(argc, argv, o, err, errlen) != 0)
        return -1;
    if ((o->logits_out && kb_check_output("--logits-out", o->logits_out, 0, err, errlen) != 0) ||
        (o->save_dir && kb_check_output("--save", o->save_dir, 1, err, errlen) != 0))
        return -1;
    if (o->append) { /* a kbench CSV that can be rewritten */
        char *text = kb_check_output("--append", o->append, 0, err, errlen) == 0
                         ? kb_csv_read_for_append(o->append, err, errlen) : NULL;
        if (!text)
            return -1;
        free(text);
    }
    if (o->gguf && load_gguf(o, r, err, errlen) != 0)
        return -1;
    r->T = prompt_tokens(o);
    const int seq = r->T + o->tokens - 1;
    if (!o->gguf &&
        (o->weights ? kb_llama_load(&r->m, o->weights, err, errlen) != 0 : kb_llama_flag_config(&o->shape, seq, &c, err, errlen) != 0))
        return -1;
    if (o->weights || o->gguf)
        c = r->m.cfg;
    if (seq > c.max_pos)
        return kb_fail(err, errlen, "the prompt (%d tokens) and --tokens %d need %d positions; the model has "
                       "max_position_embeddings %d", r->T, o->tokens, seq, c.max_pos);
    for (int i = 0; i < o->n_prompt; ++i)
        if (o->prompt[i] >= c.vocab)
            return kb_fail(err, errlen, "--prompt-ids: id %d is outside the vocabulary of %d", o->prompt[i], c.vocab);
    const char *unfit = o->cpu_only ? NULL : kb_llama_gpu_unfit(&c);
    if (unfit)
        return kb_fail(err, errlen, "%s; this model has d_model %d, d_ff %d, heads %d, head_dim %d (--cpu-only runs it)",
                       unfit, c.d_model, c.d_ff, c.heads, c.head_dim);
    if (check_host_memory(o, &c, r->T, seq, err, errlen) != 0)
        return -1;
    if (!o->weights && !o->gguf && kb_llama_init_random(&r->m, &c, o->seed) != 0)
        return kb_fail(err, errlen, "out of host memory for %lld weights", (long long)kb_llama_weight_count(&c));
    if (!(r->prompt = malloc(sizeof(int) * (size_t)r->T)))
        return kb_fail(err, errlen, "out of host memory for the prompt");
    if (o->prompt)
        memcpy(r->prompt, o->prompt, sizeof(int) * (size_t)r->T);
    else {
        /* Seeded ids, uniform over the vocabulary. */
        uint64_t s = o->seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
        for (int i = 0; i < r->T; ++i) {
            s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
            r->prompt[i] = (int)((s * 0x2545F4914F6CDD1Dull >> 33) % (uint64_t)c.vocab);
        }
    }
    return 0;
}

/* ---- the run --------------------------------------------------------------------------- */

static void print_ids(const char *what, const int *ids, int n)
{
    printf("%s", what);
    for (int i = 0; i < n; ++i)
        printf(i ? ",%d" : " %d", ids[i]);
    putchar('\n');
}

static void print_setup(const kb_generate_opts *o, const run_setup *r)
{
    const kb_llama_config *c = &r->m.cfg;
    char q[KB_QUOTE_LEN];
    printf("kbench model generate: Llama d_model=%d layers=%d heads=%d kv_heads=%d head_dim=%d d_ff=%d vocab=%d "
           "%s, rms_norm_eps %g, rope_theta %g, %.1fM weights, ", c->d_model, c->layers, c->heads, c->kv_heads,
           c->head_dim, c->d_ff, c->vocab, c->tied ? "tied" : "untied", c->eps, c->rope_theta,
           kb_llama_weight_count(c) / 1e6);
    if (o->weights || o->gguf)
        printf("from %s%s\n", kb_quote(o->weights ? o->weights : o->gguf, q, sizeof q), o->gguf ? " (GGUF)" : "");
    else
        printf("seeded (seed %llu)\n", (unsigned long long)o->seed);
    if (o->gguf && !o->bpe)
        printf("no generated text: %s\n", r->no_bpe);
    print_ids(o->text ? "prompt ids (tokenized):" : o->prompt ? "prompt ids:" : "prompt ids (seeded):", r->prompt, r->T);
}

void kb_generate_print_text(const kb_generate_opts *o, const int *ids, int n)
{
    char *text;
    size_t len;
    if (!o->bpe || kb_bpe_decode(o->bpe, ids, (size_t)n, &text, &len) != 0)
        return;
    fputs("generated text: ", stdout);
    kb_put_escaped(stdout, text, len); /* one line, as tokenize --ids prints it */
    putchar('\n');
    free(text);
}

/* Prefill, then greedy decode steps; each step's logits into all (tokens x
 * vocab) when it is not NULL. */
static int generate(const run_setup *r, int tokens, int *out, float *all, double *prefill_ms, double *decode_ms)
{
    const int V = r->m.cfg.vocab;
    kb_llama_cache cache;
    float *logits = malloc(sizeof(float) * (size_t)V);
    if (!logits || kb_llama_cache_init(&cache, &r->m.cfg, r->T + tokens - 1) != 0) {
        free(logits);
        return -1;
    }
    int rc = 0;
    double t0 = omp_get_wtime();
    rc = kb_llama_forward(&r->m, &cache, r->prompt, r->T, logits, NULL);
    double t1 = omp_get_wtime();
    *prefill_ms = (t1 - t0) * 1e3;
    for (int k = 0; rc == 0 && k < tokens; ++k) {
        if (k)
            rc = kb_llama_forward(&r->m, &cache, &out[k - 1], 1, logits, NULL);
        out[k] = kb_llama_argmax(logits, V);
        if (all)
            memcpy(all + (int64_t)k * V, logits, sizeof(float) * (size_t)V);
    }
    *decode_ms = (omp_get_wtime() - t1) * 1e3;
    kb_llama_cache_free(&cache);
    free(logits);
    return rc;
}

static int run(const kb_generate_opts *o, run_setup *r)
{
    const int V = r->m.cfg.vocab;
    char err[512], q[KB_QUOTE_LEN];
    if (o->save_dir) {
        if (kb_llama_save(&r->m, o->save_dir, o->save_dtype, err, sizeof err) != 0) {
            fprintf(stderr, "kbench: %s\n", err);
            return KB_EXIT_FAIL;
        }
        printf("wrote %s (config.json, model.safetensors in %s)\n", kb_quote(o->save_dir, q, sizeof q),
               (const char *[]){"F32", "BF16", "F16"}[o->save_dtype]);
    }
    if (!o->cpu_only)
        return kb_generate_gpu(&r->m, r->prompt, r->T, o);
    int *out = malloc(sizeof(int) * (size_t)o->tokens);
    float *all = o->logits_out ? malloc(sizeof(float) * (size_t)o->tokens * (size_t)V) : NULL;
    double prefill_ms = 0, decode_ms = 0;
    int rc = 0;
    if (!out || (o->logits_out && !all) || generate(r, o->tokens, out, all, &prefill_ms, &decode_ms) != 0) {
        fprintf(stderr, "kbench: out of host memory for the KV cache and logits\n");
        rc = KB_EXIT_FAIL;
    } else {
        print_ids("generated ids:", out, o->tokens);
        kb_generate_print_text(o, out, o->tokens);
        printf("CPU reference (double, %d threads): prefill %.3f ms (%d tokens)", omp_get_max_threads(), prefill_ms,
               r->T);
        if (o->tokens > 1)
            printf(", decode %.3f ms/token over %d steps, %.1f tokens/s\n", decode_ms / (o->tokens - 1),
                   o->tokens - 1, 1e3 * (o->tokens - 1) / decode_ms);
        else
            printf(", no decode steps (--tokens 1)\n");
        const int64_t shape[2] = {o->tokens, V};
        if (all && kb_npy_write(o->logits_out, 2, shape, all, err, sizeof err) != 0) {
            fprintf(stderr, "kbench: %s\n", err);
            rc = KB_EXIT_FAIL;
        } else if (all)
            printf("wrote %s (%d x %d logits, one row per generated token)\n",
                   kb_quote(o->logits_out, q, sizeof q), o->tokens, V);
    }
    free(out);
    free(all);
    return rc;
}

int kb_cmd_generate(int argc, char **argv)
{
    if (kb_asks_help(argc, argv)) {
        kb_generate_usage(stdout);
        return 0;
    }
    kb_generate_opts o;
    run_setup r = {0};
    char err[512];
    int rc = prepare(argc, argv, &o, &r, err, sizeof err);
    if (rc) {
        fprintf(stderr, "kbench: %s\n", err);
        rc = KB_EXIT_USAGE;
    } else {
        print_setup(&o, &r);
        fflush(stdout);
        rc = run(&o, &r);
    }
    kb_llama_free(&r.m);
    kb_bpe_free(&r.bpe);
    free(r.prompt);
    kb_generate_opts_free(&o);
    return rc;
}
