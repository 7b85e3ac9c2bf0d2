/* `kbench model tokenize` (commands/generate.h): a GGUF file's byte-level BPE
 * tokenizer on its own, so that scripts can hold its ids against another
 * tokenizer's (peers/smollm2_parity.py).  --text prints the ids,
 * comma-separated, on one line; --ids prints the decoded bytes as one line
 * of text, escaped as kb_quote escapes (harness.h), since a token's bytes
 * need not be UTF-8 or printable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "harness/harness.h"
#include "commands/generate.h"
#include "tokenizer/bpe.h"

void kb_tokenize_usage(FILE *f)
{
    fputs("usage: kbench model tokenize --gguf FILE (--text TEXT | --ids ID,ID,..)\n", f);
}

typedef struct {
    const char *gguf, *text, *ids;
} tokenize_opts;

static int parse(int argc, char **argv, tokenize_opts *o, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; ++i) {
        const char **slot = !strcmp(argv[i], "--gguf") ? &o->gguf : !strcmp(argv[i], "--text") ? &o->text
                            : !strcmp(argv[i], "--ids") ? &o->ids : NULL;
        if (!slot)
            return kb_report(err, errlen, "unknown option '%s' for kbench model tokenize (see kbench help)",
                             kb_quote(argv[i], q, sizeof q));
        /* An empty --text is a text, that has no ids; an empty list of ids is a slip. */
        if (i + 1 >= argc || (slot != &o->text && !argv[i + 1][0]))
            return kb_report(err, errlen, "%s needs a value", argv[i]);
        *slot = argv[++i];
    }
    if (!o->gguf)
        return kb_report(err, errlen, "kbench model tokenize needs --gguf FILE");
    if (!o->text == !o->ids)
        return kb_report(err, errlen, "give one of --text TEXT and --ids ID,ID,..");
    return 0;
}

static int load(const char *path, kb_bpe *t, char *err, size_t errlen)
{
    kb_gguf_file f;
    if (kb_gguf_open(path, &f, err, errlen) != 0)
        return -1;
    const int rc = kb_bpe_from_gguf(t, &f, err, errlen);
    kb_gguf_close(&f);
    return rc;
}

static void print_ids(const int *ids, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        printf(i ? ",%d" : "%d", ids[i]);
    putchar('\n');
}

int kb_cmd_tokenize(int argc, char **argv)
{
    if (kb_asks_help(argc, argv)) {
        kb_tokenize_usage(stdout);
        return 0;
    }
    tokenize_opts o;
    kb_bpe t = {0};
    int *ids = NULL;
    size_t n = 0, len = 0;
    char err[512], *text = NULL;
    int rc = parse(argc, argv, &o, err, sizeof err) || load(o.gguf, &t, err, sizeof err) ||
             (o.ids && kb_id_list("--ids", o.ids, (uint64_t)t.n_tokens - 1, SIZE_MAX /* argv bounds it */, &ids, &n, err,
                                  sizeof err))
             ? KB_EXIT_USAGE : 0;
    if (rc == 0 && (o.text ? kb_bpe_encode(&t, o.text, strlen(o.text), &ids, &n)
                           : kb_bpe_decode(&t, ids, n, &text, &len)) != 0) {
        snprintf(err, sizeof err, "out of memory");
        rc = KB_EXIT_FAIL;
    }
    if (rc)
        fprintf(stderr, "kbench: %s\n", err);
    else if (o.text)
        print_ids(ids, n);
    else {
        kb_put_escaped(stdout, text, len);
        putchar('\n');
    }
    free(ids);
    free(text);
    kb_bpe_free(&t);
    return rc;
}
