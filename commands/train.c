/* `kbench model train` (commands/train.h): the Llama-style model trained on
 * text by the C reference of the whole step in double (reference/
 * llama_train.h: forward, the loss, every gradient, the global-norm clip
 * and AdamW), on a BPE vocabulary learnt from the same text.  Everything
 * that can be refused is refused first, in one line (exit 2); then one
 * line a step, an evaluation on held-out text, and the loss curve in a CSV.
 * The GPU step, which this one will check, is not built yet. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "formats/fileio.h"
#include "formats/npy.h"
#include "harness/harness.h"
#include "commands/generate.h"
#include "commands/train.h"
#include "reference/llama_train.h"

#define MAX_TEXT (64u << 20)   /* bytes of training text */
#define MAX_STEPS 1000000
#define VAL_SHARE 10           /* the last tenth of the tokens is held out */

void kb_train_usage(FILE *f)
{
    fputs("usage: kbench model train --data FILE.txt --cpu-only [--vocab V] [--d-model D] [--layers N]\n"
          "         [--heads H] [--kv-heads K] [--d-ff F] [--tied] [--seq T] [--batch B] [--steps N]\n"
          "         [--lr LR] [--warmup N] [--weight-decay W] [--clip NORM] [--eval-every N] [--seed N]\n"
          "         [--loss-csv FILE] [--save-init DIR] [--batches-out FILE.npy] [--grads-out DIR]\n",
          f);
}

typedef struct {
    kb_llama_flags shape; /* vocab: the BPE's size to learn */
    const char *data, *loss_csv;
    const char *save_init, *batches_out, *grads_out; /* for a peer to replay the run (peers/torch_train.py) */
    int seq, batch, steps, warmup, eval_every, cpu_only;
    double lr, weight_decay, clip;
    uint64_t seed;
} train_opts;

/* ---- flags ---------------------------------------------------------------------------- */

static int *int_slot(train_opts *o, const char *a, long *hi)
{
    static const char *names[] = {"--d-model", "--layers", "--heads", "--kv-heads", "--d-ff", "--vocab",
                                  "--seq", "--batch", "--steps", "--warmup", "--eval-every"};
    int *slots[] = {&o->shape.d_model, &o->shape.layers, &o->shape.heads, &o->shape.kv_heads, &o->shape.d_ff,
                    &o->shape.vocab, &o->seq, &o->batch, &o->steps, &o->warmup, &o->eval_every};
    static const long highs[] = {1 << 16, 1 << 10, 1 << 10, 1 << 10, 1 << 18, 1 << 20,
                                 1 << 16, 1 << 16, MAX_STEPS, MAX_STEPS, MAX_STEPS};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i])) {
            *hi = highs[i];
            return slots[i];
        }
    return NULL;
}

static double *real_slot(train_opts *o, const char *a, double *lo, double *hi, int *lo_open)
{
    static const char *names[] = {"--lr", "--weight-decay", "--clip"};
    double *slots[] = {&o->lr, &o->weight_decay, &o->clip};
    static const double his[] = {10, 10, 1e6};
    static const int open[] = {1, 0, 1};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i])) {
            *lo = 0, *hi = his[i], *lo_open = open[i];
            return slots[i];
        }
    return NULL;
}

static const char **string_slot(train_opts *o, const char *a)
{
    static const char *names[] = {"--data", "--loss-csv", "--save-init", "--batches-out", "--grads-out"};
    const char **slots[] = {&o->data, &o->loss_csv, &o->save_init, &o->batches_out, &o->grads_out};
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
        if (!strcmp(a, names[i]))
            return slots[i];
    return NULL;
}

static int parse_flag(int argc, char **argv, int *i, train_opts *o, char *err, size_t errlen)
{
    const char *a = argv[*i], *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    char q[KB_QUOTE_LEN];
    long hi = 0;
    double rlo = 0, rhi = 0;
    int lo_open = 0, *n = int_slot(o, a, &hi);
    double *r = real_slot(o, a, &rlo, &rhi, &lo_open);
    if (!strcmp(a, "--cpu-only"))
        o->cpu_only = 1;
    else if (!strcmp(a, "--tied"))
        o->shape.tied = 1;
    else if (n || r || string_slot(o, a) || !strcmp(a, "--seed")) {
        if (!val || !*val)
            return kb_fail(err, errlen, "%s needs a value", a);
        ++*i;
        uint64_t v;
        if (n) {
            const uint64_t lo = !strcmp(a, "--warmup") || !strcmp(a, "--eval-every") ? 0 : 1;
            if (kb_int_flag(a, val, lo, (uint64_t)hi, &v, err, errlen) != 0)
                return -1;
            *n = (int)v;
        } else if (r)
            return kb_real_flag(a, val, rlo, lo_open, rhi, "", r, err, errlen);
        else if (!strcmp(a, "--seed"))
            return kb_int_flag(a, val, 0, UINT64_MAX, &o->seed, err, errlen);
        else
            *string_slot(o, a) = val;
    } else
        return kb_fail(err, errlen, "unknown option '%s' for kbench model train (see kbench help)",
                       kb_quote(a, q, sizeof q));
    return 0;
}

static int parse(int argc, char **argv, train_opts *o, char *err, size_t errlen)
{
    *o = (train_opts){.shape = {.vocab = 512, .d_model = 64, .layers = 2, .heads = 4, .kv_heads = 2},
                      .seq = 64, .batch = 4, .steps = 50, .warmup = -1, .eval_every = -1,
                      .lr = 3e-3, .weight_decay = 0.1, .clip = 1.0, .seed = 1};
    for (int i = 1; i < argc; ++i)
        if (parse_flag(argc, argv, &i, o, err, errlen) != 0)
            return -1;
    if (!o->data)
        return kb_fail(err, errlen, "kbench model train needs --data FILE.txt: the text to learn from");
    if (!o->cpu_only)
        return kb_fail(err, errlen, "the training step runs on the CPU reference only for now: add --cpu-only "
                       "(the GPU step is not built yet)");
    if (o->shape.vocab < 256)
        return kb_fail(err, errlen, "--vocab %d: the byte-level BPE starts from 256 byte tokens", o->shape.vocab);
    if (o->warmup < 0)
        o->warmup = o->steps / 10;
    if (o->eval_every < 0)
        o->eval_every = o->steps >= 5 ? o->steps / 5 : o->steps;
    if ((o->loss_csv && kb_check_output("--loss-csv", o->loss_csv, 0, err, errlen) != 0) ||
        (o->batches_out && kb_check_output("--batches-out", o->batches_out, 0, err, errlen) != 0) ||
        (o->save_init && kb_check_output("--save-init", o->save_init, 1, err, errlen) != 0) ||
        (o->grads_out && kb_check_output("--grads-out", o->grads_out, 1, err, errlen) != 0))
        return -1;
    const double batch_bytes = 4.0 * o->steps * o->batch * (o->seq + 1.0);
    if (o->batches_out && batch_bytes > (double)(1u << 30))
        return kb_fail(err, errlen, "--batches-out for %d steps of %d x %d tokens needs %.1f GiB (1 GiB at most)",
                       o->steps, o->batch, o->seq + 1, batch_bytes / (1u << 30));
    return 0;
}

/* ---- the data ------------------------------------------------------------------------- */

typedef struct {
    kb_bpe bpe;
    int *ids;
    size_t n, n_train; /* the first n_train ids train, the rest evaluate */
} corpus;

static int load_corpus(const train_opts *o, corpus *c, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    size_t len = 0;
    char *text = kb_input_read(o->data, kb_quote(o->data, q, sizeof q), MAX_TEXT, &len, err, errlen);
    if (!text)
        return -1;
    int rc = kb_bpe_train(&c->bpe, text, len, o->shape.vocab, KB_BPE_PRE_GPT2, err, errlen);
    if (rc == 0 && kb_bpe_encode(&c->bpe, text, len, &c->ids, &c->n) != 0)
        rc = kb_fail(err, errlen, "out of memory for the text's tokens");
    free(text);
    if (rc)
        return rc;
    c->n_train = c->n - c->n / VAL_SHARE;
    const size_t need = (size_t)o->seq + 1;
    if (c->n_train < need || c->n - c->n_train < need)
        return kb_fail(err, errlen, "%s gives %zu tokens: too few for --seq %d in both its first nine tenths "
                       "(training) and its last tenth (evaluation)", q, c->n, o->seq);
    return 0;
}

/* ---- the step ------------------------------------------------------------------------- */

/* Linear warm-up to lr, then a cosine down to lr / 10 at the last step. */
static double lr_at(const train_opts *o, int step)
{
    if (step < o->warmup)
        return o->lr * (step + 1) / o->warmup;
    const double span = o->steps - o->warmup, t = span > 1 ? (step - o->warmup) / (span - 1) : 1;
    return o->lr * (0.1 + 0.45 * (1 + cos(M_PI * t)));
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* B windows of T + 1 tokens from ids[0..n) at seeded offsets: inputs and
 * the targets one token on. */
static void sample(const int *ids, size_t n, int B, int T, uint64_t *rng, int *in, int *tgt)
{
    for (int b = 0; b < B; ++b) {
        const size_t at = next_random(rng) % (n - (size_t)T);
        memcpy(in + (size_t)b * T, ids + at, sizeof(int) * (size_t)T);
        memcpy(tgt + (size_t)b * T, ids + at + 1, sizeof(int) * (size_t)T);
    }
}

/* The held-out loss: the mean over consecutive windows of the last tenth. */
static int evaluate(const kb_llama_model *m, const corpus *c, const train_opts *o, kb_llama_grads *scratch,
                    double *loss)
{
    const size_t T = (size_t)o->seq, windows = (c->n - c->n_train - 1) / T;
    const size_t use = windows < 8 ? windows : 8;
    double sum = 0;
    for (size_t w = 0; w < use; ++w) {
        const int *at = c->ids + c->n_train + w * T;
        double l;
        if (kb_llama_loss_backward(m, at, at + 1, 1, (int)T, &l, scratch) != 0)
            return -1;
        sum += l;
    }
    *loss = sum / (double)use;
    return 0;
}

typedef struct {
    int step;
    double loss, norm, lr, wall_s, val; /* val NaN where not evaluated */
} curve_row;

static int write_curve(const char *path, const train_opts *o, const kb_llama_config *cfg, const curve_row *rows,
                       int n, char *err, size_t errlen)
{
    char target[4096], tmp[4200];
    if (kb_output_target(path, target, sizeof target, err, errlen) != 0)
        return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", target, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return kb_fail(err, errlen, "cannot write %s", tmp);
    fprintf(f, "# kbench model train: CPU reference (double)\n# data: %s\n", o->data);
    fprintf(f, "# model: d_model %d, layers %d, heads %d, kv_heads %d, d_ff %d, vocab %d, tied %d\n", cfg->d_model,
            cfg->layers, cfg->heads, cfg->kv_heads, cfg->d_ff, cfg->vocab, cfg->tied);
    fprintf(f, "# batch %d x seq %d, lr %g (warm-up %d, cosine to lr/10), weight_decay %g, clip %g, seed %llu\n",
            o->batch, o->seq, o->lr, o->warmup, o->weight_decay, o->clip, (unsigned long long)o->seed);
    fprintf(f, "step,loss,grad_norm,lr,tokens,wall_s,val_loss\n");
    for (int i = 0; i < n; ++i) {
        fprintf(f, "%d,%.10g,%.10g,%.10g,%lld,%.3f,", rows[i].step, rows[i].loss, rows[i].norm, rows[i].lr,
                (long long)rows[i].step * o->batch * o->seq, rows[i].wall_s);
        if (isfinite(rows[i].val))
            fprintf(f, "%.10g", rows[i].val);
        fputc('\n', f);
    }
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, target) != 0) {
        unlink(tmp);
        return kb_fail(err, errlen, "cannot write %s", path);
    }
    return 0;
}

typedef struct {
    kb_llama_model m;
    kb_llama_grads g, scratch;
    kb_llama_adam_state adam;
    int *in, *tgt;
    curve_row *curve;
    float *windows; /* --batches-out: steps x batch x (seq + 1) ids */
} train_state;

static void free_state(train_state *s)
{
    kb_llama_free(&s->m);
    kb_llama_grads_free(&s->g);
    kb_llama_grads_free(&s->scratch);
    kb_llama_adam_free(&s->adam);
    free(s->in);
    free(s->tgt);
    free(s->curve);
    free(s->windows);
}

static int init_state(const train_opts *o, const kb_llama_config *cfg, train_state *s)
{
    const size_t tokens = (size_t)o->batch * o->seq;
    s->in = malloc(sizeof(int) * tokens);
    s->tgt = malloc(sizeof(int) * tokens);
    s->curve = malloc(sizeof(curve_row) * (size_t)o->steps);
    s->windows = o->batches_out ? malloc(sizeof(float) * (size_t)o->steps * o->batch * (o->seq + 1)) : NULL;
    return s->in && s->tgt && s->curve && (!o->batches_out || s->windows) && kb_llama_init_random(&s->m, cfg, o->seed) == 0 &&
                   kb_llama_grads_init(&s->g, cfg) == 0 && kb_llama_grads_init(&s->scratch, cfg) == 0 &&
                   kb_llama_adam_init(&s->adam, cfg) == 0
               ? 0
               : -1;
}

/* Step `step`'s windows, as ids (exact in float below 2^24), for --batches-out. */
static void record_windows(const train_opts *o, train_state *s, int step)
{
    const int T = o->seq;
    float *w = s->windows + (size_t)step * o->batch * (T + 1);
    for (int b = 0; b < o->batch; ++b, w += T + 1) {
        for (int t = 0; t < T; ++t)
            w[t] = (float)s->in[b * T + t];
        w[T] = (float)s->tgt[b * T + T - 1];
    }
}

/* The first step's gradients in the checkpoint's layout (each rounded to
 * fp32), for a peer to compare with autograd's. */
static int save_grads(const train_opts *o, const kb_llama_config *cfg, const kb_llama_grads *g, char *err,
                      size_t errlen)
{
    kb_llama_model t;
    if (kb_llama_init_random(&t, cfg, 0) != 0)
        return kb_fail(err, errlen, "out of host memory for the gradients' checkpoint");
    const int64_t n = kb_llama_weight_count(cfg);
    for (int64_t i = 0; i < n; ++i)
        t.storage[i] = (float)g->storage[i];
    const int rc = kb_llama_save(&t, o->grads_out, KB_LLAMA_F32, err, errlen);
    kb_llama_free(&t);
    return rc;
}

/* --save-init, before the first step. */
static int save_init(const train_opts *o, const train_state *s, char *err, size_t errlen)
{
    if (!o->save_init)
        return 0;
    if (kb_llama_save(&s->m, o->save_init, KB_LLAMA_F32, err, errlen) != 0)
        return -1;
    printf("wrote %s (the initial weights, F32)\n", o->save_init);
    return 0;
}

/* --batches-out and --loss-csv, after the last step. */
static int write_outputs(const train_opts *o, const kb_llama_config *cfg, const train_state *s, char *err,
                         size_t errlen)
{
    const int64_t shape[3] = {o->steps, o->batch, o->seq + 1};
    if (o->batches_out && kb_npy_write(o->batches_out, 3, shape, s->windows, err, errlen) != 0)
        return -1;
    if (o->batches_out)
        printf("wrote %s (every step's windows: %d x %d x %d token ids)\n", o->batches_out, o->steps, o->batch,
               o->seq + 1);
    if (o->loss_csv && write_curve(o->loss_csv, o, cfg, s->curve, o->steps, err, errlen) != 0)
        return -1;
    if (o->loss_csv)
        printf("wrote %s (the loss curve, %d steps)\n", o->loss_csv, o->steps);
    return 0;
}

static int train(const train_opts *o, const corpus *c, const kb_llama_config *cfg, train_state *s)
{
    char err[512];
    uint64_t rng = o->seed;
    const size_t tokens = (size_t)o->batch * o->seq;
    const int64_t n_weights = kb_llama_weight_count(cfg);
    /* The count: 6 FLOPs a weight a token (forward and backward),
     * and causal attention's two products, half the square, 3 times over. */
    const double flops_per_token = 6.0 * (double)n_weights + 6.0 * cfg->layers * cfg->heads * cfg->head_dim * o->seq;
    const double t0 = omp_get_wtime();
    for (int step = 0; step < o->steps; ++step) {
        const double ts = omp_get_wtime();
        double loss, val = NAN;
        sample(c->ids, c->n_train, o->batch, o->seq, &rng, s->in, s->tgt);
        if (s->windows)
            record_windows(o, s, step);
        memset(s->g.storage, 0, sizeof(double) * (size_t)n_weights);
        if (kb_llama_loss_backward(&s->m, s->in, s->tgt, o->batch, o->seq, &loss, &s->g) != 0) {
            fprintf(stderr, "kbench: the reference's step failed (out of host memory)\n");
            return KB_EXIT_FAIL;
        }
        if (step == 0 && o->grads_out) {
            if (save_grads(o, cfg, &s->g, err, sizeof err) != 0) {
                fprintf(stderr, "kbench: %s\n", err);
                return KB_EXIT_FAIL;
            }
            printf("wrote %s (the first step's gradients, in the checkpoint's layout)\n", o->grads_out);
        }
        const kb_adamw_hyper h = {.lr = lr_at(o, step), .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                                  .weight_decay = o->weight_decay, .max_norm = o->clip};
        const double norm = kb_llama_adamw_step(&s->m, &s->g, &s->adam, &h);
        const double step_s = omp_get_wtime() - ts;
        const int eval = o->eval_every && ((step + 1) % o->eval_every == 0 || step + 1 == o->steps);
        if (eval && evaluate(&s->m, c, o, &s->scratch, &val) != 0) {
            fprintf(stderr, "kbench: the held-out evaluation failed (out of host memory)\n");
            return KB_EXIT_FAIL;
        }
        s->curve[step] = (curve_row){step + 1, loss, norm, h.lr, omp_get_wtime() - t0, val};
        printf("step %*d/%d  loss %.4f  grad norm %.3f  lr %.2e  %.0f tokens/s  %.2f GFLOP/s",
               o->steps >= 1000 ? 6 : 3, step + 1, o->steps, loss, norm, h.lr, (double)tokens / step_s,
               (double)tokens * flops_per_token / step_s * 1e-9);
        if (eval)
            printf("  held-out loss %.4f", val);
        putchar('\n');
        fflush(stdout);
    }
    if (write_outputs(o, cfg, s, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        return KB_EXIT_FAIL;
    }
    return 0;
}

int kb_cmd_train(int argc, char **argv)
{
    if (kb_asks_help(argc, argv)) {
        kb_train_usage(stdout);
        return 0;
    }
    train_opts o;
    corpus c = {0};
    kb_llama_config cfg;
    char err[512];
    if (parse(argc, argv, &o, err, sizeof err) != 0 || load_corpus(&o, &c, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        kb_bpe_free(&c.bpe);
        free(c.ids);
        return KB_EXIT_USAGE;
    }
    kb_llama_flags shape = o.shape;
    shape.vocab = c.bpe.n_tokens; /* what the text gave, at most --vocab */
    if (kb_llama_flag_config(&shape, o.seq, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "kbench: %s\n", err);
        kb_bpe_free(&c.bpe);
        free(c.ids);
        return KB_EXIT_USAGE;
    }
    train_state s = {0};
    int rc = init_state(&o, &cfg, &s) == 0 ? 0 : KB_EXIT_FAIL;
    if (rc)
        fprintf(stderr, "kbench: out of host memory for the model, its gradients and AdamW's moments\n");
    else {
        printf("training on %s: %zu tokens of a %d-token BPE learnt from it (%zu to train on, %zu held out); "
               "%lld weights (d_model %d, %d layer%s, %d/%d heads, d_ff %d%s); batch %d x %d; CPU reference "
               "(double, %d threads)\n",
               o.data, c.n, c.bpe.n_tokens, c.n_train, c.n - c.n_train, (long long)kb_llama_weight_count(&cfg),
               cfg.d_model, cfg.layers, cfg.layers == 1 ? "" : "s", cfg.heads, cfg.kv_heads, cfg.d_ff,
               cfg.tied ? ", tied" : "", o.batch, o.seq,
               omp_get_max_threads());
        fflush(stdout);
        if (save_init(&o, &s, err, sizeof err) != 0) {
            fprintf(stderr, "kbench: %s\n", err);
            rc = KB_EXIT_FAIL;
        } else
            rc = train(&o, &c, &cfg, &s);
    }
    free_state(&s);
    kb_bpe_free(&c.bpe);
    free(c.ids);
    return rc;
}
