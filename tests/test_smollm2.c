/* SmolLM2-135M-Instruct's real GGUF file, where tools/smollm2.sh has put
 * it (${KBENCH_MODELS:-$HOME/.cache/kbench}/smollm2/); exit 77 (skip)
 * without it.
 *
 *   - The tokenizer's ids of every string of tests/data/smollm2_ids.txt
 *     equal the fixture's, which the `tokenizers` package gave
 *     (peers/smollm2_parity.py --fixture-out): each line the string's
 *     UTF-8 in hex, a tab, the ids.  Decoding gives the string back, less
 *     the bytes the vocabulary lacks.
 *   - The model's hyperparameters, and the greedy token after a chat
 *     prompt: "The" (504), as transformers' forward of the same file gives
 *     (peers/smollm2_parity.py checks all 32 tokens and the logits). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/llama_gguf.h"
#include "tests/check.h"
#include "tokenizer/bpe.h"

static int hex(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* One fixture line into text (bytes) and ids; 0, or -1 at the end. */
static int read_case(FILE *f, char *text, size_t *len, int *ids, size_t *n)
{
    static char line[1 << 16];
    if (!fgets(line, sizeof line, f))
        return -1;
    char *tab = strchr(line, '\t'), *s;
    if (!tab)
        return -1;
    *len = 0;
    for (s = line; s + 1 < tab; s += 2)
        text[(*len)++] = (char)(hex(s[0]) << 4 | hex(s[1]));
    *n = 0;
    for (s = tab + 1; *s && *s != '\n'; s += *s == ',')
        ids[(*n)++] = (int)strtol(s, &s, 10);
    return 0;
}

/* The text less the bytes without a token. */
static size_t kept(const kb_bpe *t, const char *text, size_t len, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < len; ++i)
        if (t->byte_id[(unsigned char)text[i]] >= 0)
            out[k++] = text[i];
    return k;
}

static void test_tokenizer(const kb_bpe *t, const char *fixture)
{
    FILE *f = fopen(fixture, "r");
    static char text[1 << 15], want_text[1 << 15];
    static int want[1 << 15];
    size_t len, n, cases = 0, equal = 0;
    CHECK(f != NULL);
    while (f && read_case(f, text, &len, want, &n) == 0) {
        int *ids;
        size_t got, back_len;
        char *back;
        CHECK(kb_bpe_encode(t, text, len, &ids, &got) == 0);
        const int same = got == n && !memcmp(ids, want, sizeof(int) * n);
        if (!same)
            fprintf(stderr, "case %zu ('%.*s'): the ids differ from the fixture's\n", cases, (int)len, text);
        equal += same;
        CHECK(kb_bpe_decode(t, ids, got, &back, &back_len) == 0);
        const size_t k = kept(t, text, len, want_text);
        CHECK(back_len == k && !memcmp(back, want_text, k));
        free(ids);
        free(back);
        ++cases;
    }
    printf("tokenizer: %zu/%zu fixture strings give the fixture's ids\n", equal, cases);
    CHECK(cases >= 30 && equal == cases);
    if (f)
        fclose(f);
}

static void test_model(const kb_gguf_file *f, const kb_bpe *t)
{
    static const char prompt[] = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                                 "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>"
                                 "\n<|im_start|>assistant\n";
    kb_llama_model m;
    char err[512];
    CHECK(kb_llama_from_gguf(&m, f, err, sizeof err) == 0);
    const kb_llama_config *c = &m.cfg;
    CHECK(c->layers == 30 && c->d_model == 576 && c->heads == 9 && c->kv_heads == 3 && c->head_dim == 64);
    CHECK(c->d_ff == 1536 && c->vocab == 49152 && c->tied && c->max_pos == 8192);
    CHECK(c->eps == (double)1e-5f && c->rope_theta == 100000.0);
    int *ids;
    size_t n;
    kb_llama_cache cache;
    float *logits = malloc(sizeof(float) * 49152);
    CHECK(kb_bpe_encode(t, prompt, strlen(prompt), &ids, &n) == 0 && n == 37 && ids[0] == 1);
    CHECK(kb_llama_cache_init(&cache, c, (int)n) == 0);
    CHECK(kb_llama_forward(&m, &cache, ids, (int)n, logits, NULL) == 0);
    CHECK(kb_llama_argmax(logits, c->vocab) == 504);
    kb_llama_cache_free(&cache);
    free(logits);
    free(ids);
    kb_llama_free(&m);
}

int main(int argc, char **argv)
{
    char path[4096], err[512];
    const char *models = getenv("KBENCH_MODELS"), *home = getenv("HOME");
    if (argc != 2)
        return 1;
    if (models && *models)
        snprintf(path, sizeof path, "%s/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", models);
    else
        snprintf(path, sizeof path, "%s/.cache/kbench/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
    if (access(path, R_OK) != 0) {
        printf("skipping: no %s (bash tools/smollm2.sh fetches it)\n", path);
        return 77;
    }
    kb_gguf_file f;
    kb_bpe t;
    if (kb_gguf_open(path, &f, err, sizeof err) != 0 || kb_bpe_from_gguf(&t, &f, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    CHECK(t.bos == 1 && t.eos == 2 && t.pre == KB_BPE_PRE_DIGITS);
    test_tokenizer(&t, argv[1]);
    test_model(&f, &t);
    kb_bpe_free(&t);
    kb_gguf_close(&f);
    return CHECK_DONE();
}
