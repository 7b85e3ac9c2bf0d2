/* Learning a byte-level BPE vocabulary from text (tokenizer/bpe.h's
 * kb_bpe_train): the words the pre-tokenizer gives, counted once each;
 * each word a sequence of token ids, bytes first; then, merge after merge,
 * the adjacent pair with the most occurrences (weighted by its words'
 * counts) becomes one token in every word.  The pairs are counted afresh
 * for each merge: O(merges x symbols), a second or two for a few thousand
 * merges over a few hundred KB of text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "tokenizer/bpe.h"

typedef struct {
    int *ids, n; /* the word's tokens */
    int64_t count;
} tword;

typedef struct {
    tword *words;
    size_t n, cap;
    /* words by their bytes: index + 1 into words, 0 where empty */
    size_t *slots, nslots;
    unsigned char **bytes; /* each word's bytes, for the lookup */
    size_t *len;
} word_set;

static uint64_t hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static int grow_slots(word_set *s)
{
    const size_t nslots = s->nslots ? 2 * s->nslots : 1024;
    size_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < s->n; ++i) {
        size_t j = hash_bytes(s->bytes[i], s->len[i]) & (nslots - 1);
        while (slots[j])
            j = (j + 1) & (nslots - 1);
        slots[j] = i + 1;
    }
    free(s->slots);
    s->slots = slots, s->nslots = nslots;
    return 0;
}

static int add_word(const unsigned char *w, size_t len, void *user)
{
    word_set *s = (word_set *)user;
    if (2 * (s->n + 1) > s->nslots && grow_slots(s) != 0)
        return -1;
    size_t j = hash_bytes(w, len) & (s->nslots - 1);
    for (; s->slots[j]; j = (j + 1) & (s->nslots - 1)) {
        const size_t i = s->slots[j] - 1;
        if (s->len[i] == len && !memcmp(s->bytes[i], w, len)) {
            ++s->words[i].count;
            return 0;
        }
    }
    if (s->n == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 1024;
        tword *words = realloc(s->words, cap * sizeof *words);
        unsigned char **bytes = words ? realloc(s->bytes, cap * sizeof *bytes) : NULL;
        size_t *lens = bytes ? realloc(s->len, cap * sizeof *lens) : NULL;
        if (words)
            s->words = words;
        if (bytes)
            s->bytes = bytes;
        if (!lens)
            return -1;
        s->len = lens, s->cap = cap;
    }
    tword *t = &s->words[s->n];
    t->ids = malloc(len * sizeof *t->ids);
    s->bytes[s->n] = malloc(len);
    if (!t->ids || !s->bytes[s->n]) {
        free(t->ids);
        free(s->bytes[s->n]);
        return -1;
    }
    memcpy(s->bytes[s->n], w, len);
    for (size_t i = 0; i < len; ++i)
        t->ids[i] = w[i];
    t->n = (int)len, t->count = 1;
    s->len[s->n] = len;
    s->slots[j] = ++s->n;
    return 0;
}

static void free_words(word_set *s)
{
    for (size_t i = 0; i < s->n; ++i) {
        free(s->words[i].ids);
        free(s->bytes[i]);
    }
    free(s->words);
    free(s->bytes);
    free(s->len);
    free(s->slots);
}

/* Pair counts in an open-addressing table keyed by a << 32 | b. */
typedef struct {
    uint64_t *keys; /* UINT64_MAX where empty */
    int64_t *counts;
    size_t n;       /* a power of two */
} pair_counts;

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
}

static void count_pairs(const word_set *s, pair_counts *p)
{
    memset(p->keys, 0xff, p->n * sizeof *p->keys);
    for (size_t w = 0; w < s->n; ++w) {
        const tword *t = &s->words[w];
        for (int i = 0; i + 1 < t->n; ++i) {
            const uint64_t key = (uint64_t)t->ids[i] << 32 | (uint32_t)t->ids[i + 1];
            size_t j = mix(key) & (p->n - 1);
            while (p->keys[j] != UINT64_MAX && p->keys[j] != key)
                j = (j + 1) & (p->n - 1);
            if (p->keys[j] == UINT64_MAX)
                p->keys[j] = key, p->counts[j] = 0;
            p->counts[j] += t->count;
        }
    }
}

/* The most frequent pair not merged before (ties: the lowest key), or
 * UINT64_MAX when none occurs twice. */
static uint64_t best_pair(const pair_counts *p, const uint64_t *done, int ndone)
{
    uint64_t best = UINT64_MAX;
    int64_t most = 1;
    for (size_t j = 0; j < p->n; ++j) {
        const uint64_t k = p->keys[j];
        if (k == UINT64_MAX || p->counts[j] < most || (p->counts[j] == most && k > best))
            continue;
        int seen = 0; /* a merged pair comes back only where a merge respelled an older token */
        for (int i = 0; i < ndone && !seen; ++i)
            seen = done[i] == k;
        if (!seen)
            best = k, most = p->counts[j];
    }
    return most > 1 ? best : UINT64_MAX;
}

/* Every (a, b) of every word, left to right, becomes ab. */
static void apply_merge(word_set *s, int a, int b, int ab)
{
    for (size_t w = 0; w < s->n; ++w) {
        tword *t = &s->words[w];
        int out = 0;
        for (int i = 0; i < t->n; ++i)
            t->ids[out++] = i + 1 < t->n && t->ids[i] == a && t->ids[i + 1] == b ? (++i, ab) : t->ids[i];
        t->n = out;
    }
}

typedef struct {
    char **tokens, **merges;
    int ntokens, nmerges;
} vocab_text;

static int token_of(const vocab_text *v, const char *s)
{
    for (int i = 0; i < v->ntokens; ++i)
        if (!strcmp(v->tokens[i], s))
            return i;
    return -1;
}

/* The merge (a, b): its "A B" line, and its token, new unless another merge
 * already spelled the same bytes.  The token's id, or -1 out of memory. */
static int add_merge_text(vocab_text *v, int a, int b)
{
    const size_t la = strlen(v->tokens[a]), lb = strlen(v->tokens[b]);
    char *line = malloc(la + lb + 2), *tok = malloc(la + lb + 1);
    if (!line || !tok) {
        free(line);
        free(tok);
        return -1;
    }
    snprintf(line, la + lb + 2, "%s %s", v->tokens[a], v->tokens[b]);
    snprintf(tok, la + lb + 1, "%s%s", v->tokens[a], v->tokens[b]);
    v->merges[v->nmerges++] = line;
    const int id = token_of(v, tok);
    if (id >= 0) {
        free(tok);
        return id;
    }
    v->tokens[v->ntokens] = tok;
    return v->ntokens++;
}

static int learn(word_set *s, int vocab, vocab_text *v, char *err, size_t errlen)
{
    size_t symbols = 0;
    for (size_t w = 0; w < s->n; ++w)
        symbols += (size_t)s->words[w].n;
    pair_counts p = {NULL, NULL, 16};
    while (p.n < 2 * symbols + 16)
        p.n *= 2;
    p.keys = malloc(p.n * sizeof *p.keys);
    p.counts = malloc(p.n * sizeof *p.counts);
    uint64_t *done = malloc((size_t)vocab * sizeof *done);
    int rc = p.keys && p.counts && done ? 0 : kb_fail(err, errlen, "out of memory for the BPE's pair counts");
    for (int b = 0; b < 256 && rc == 0; ++b) {
        char sp[3];
        kb_bpe_byte_spelling(b, sp);
        v->tokens[v->ntokens++] = strdup(sp);
        if (!v->tokens[b])
            rc = kb_fail(err, errlen, "out of memory for the vocabulary");
    }
    while (rc == 0 && v->ntokens < vocab && v->nmerges < vocab) {
        count_pairs(s, &p);
        const uint64_t k = best_pair(&p, done, v->nmerges);
        if (k == UINT64_MAX)
            break;
        const int a = (int)(k >> 32), b = (int)(uint32_t)k;
        done[v->nmerges] = k;
        const int ab = add_merge_text(v, a, b);
        if (ab < 0)
            rc = kb_fail(err, errlen, "out of memory for the vocabulary");
        else
            apply_merge(s, a, b, ab);
    }
    free(p.keys);
    free(p.counts);
    free(done);
    return rc;
}

int kb_bpe_train(kb_bpe *t, const char *text, size_t len, int vocab, kb_bpe_pre pre, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (vocab < 256 || vocab > 1 << 20)
        return kb_fail(err, errlen, "a BPE vocabulary of %d tokens (256 to 2^20 allowed)", vocab);
    word_set s = {0};
    vocab_text v = {calloc((size_t)vocab, sizeof(char *)), calloc((size_t)vocab, sizeof(char *)), 0, 0};
    int rc = v.tokens && v.merges ? 0 : kb_fail(err, errlen, "out of memory for the vocabulary");
    if (rc == 0 && kb_bpe_each_word(pre, text, len, add_word, &s) != 0)
        rc = kb_fail(err, errlen, "out of memory for the text's words");
    if (rc == 0)
        rc = learn(&s, vocab, &v, err, errlen);
    if (rc == 0)
        rc = kb_bpe_init(t, (const char *const *)v.tokens, NULL, v.ntokens, (const char *const *)v.merges,
                         v.nmerges, pre, err, errlen);
    free_words(&s);
    for (int i = 0; i < v.ntokens; ++i)
        free(v.tokens[i]);
    for (int i = 0; i < v.nmerges; ++i)
        free(v.merges[i]);
    free(v.tokens);
    free(v.merges);
    return rc;
}
