/* Byte-level BPE (tokenizer/bpe.h): the byte alphabet, a hand-written matcher
 * for GPT-2's pre-tokenizer expression over UTF-8, and merges by rank
 * through a heap of candidate pairs. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "harness/harness.h"
#include "tokenizer/bpe.h"
#include "tokenizer/unicode_classes.h"

#define NO_CP UINT32_MAX /* a byte that is no UTF-8 character */

/* ---- the byte alphabet ----------------------------------------------------------------------- */

static int printable(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

#define N_SPELLED (256 + 68) /* the code points that spell bytes: below 256 + the 68 unprintable ones */

/* The code point that spells each byte, and the byte of each such code
 * point (-1 for the others below N_SPELLED). */
static void alphabet(uint32_t cp_of[256], int byte_of[N_SPELLED])
{
    uint32_t next = 256;
    for (int i = 0; i < N_SPELLED; ++i)
        byte_of[i] = -1;
    for (int b = 0; b < 256; ++b) {
        cp_of[b] = printable(b) ? (uint32_t)b : next++;
        byte_of[cp_of[b]] = b;
    }
}

/* Code point cp (below 0x800) in UTF-8, NUL-terminated. */
static void spell_byte(uint32_t cp, char s[3])
{
    s[0] = (char)(cp < 128 ? cp : 0xC0 | cp >> 6);
    s[1] = (char)(cp < 128 ? 0 : 0x80 | (cp & 0x3F));
    s[2] = 0;
}

void kb_bpe_byte_spelling(int b, char s[3])
{
    uint32_t cp_of[256];
    int byte_of[N_SPELLED];
    alphabet(cp_of, byte_of);
    spell_byte(cp_of[b & 0xFF], s);
}

/* ---- UTF-8 and character classes ------------------------------------------------------------ */

/* The character at s (n > 0 bytes left): its byte count, and its code point
 * in *cp, or NO_CP for a byte that starts no valid character (overlong
 * forms and surrogates included), which then stands alone. */
static int utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    const size_t len = kb_utf8_next(s, n, cp);
    if (!len)
        *cp = NO_CP;
    return len ? (int)len : 1;
}

/* The offset of the first byte of s[0..n) that is not UTF-8, or n. */
static size_t not_utf8_at(const char *s, size_t n)
{
    uint32_t cp;
    size_t i = 0, len;
    while (i < n && (len = kb_utf8_next((const unsigned char *)s + i, n - i, &cp)))
        i += len;
    return i;
}

static int in_ranges(uint32_t cp, const kb_cp_range *r, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* Unicode White_Space, which is what \s matches in tokenizers' expressions. */
static int is_space(uint32_t cp)
{
    return (cp >= 9 && cp <= 13) || cp == 32 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

typedef enum { C_LETTER, C_NUMBER, C_SPACE, C_OTHER } cclass;

static cclass class_of(uint32_t cp)
{
    if (cp == NO_CP)
        return C_OTHER;
    if (cp < 128)
        return (cp | 32) - 'a' < 26 ? C_LETTER : cp - '0' < 10 ? C_NUMBER : is_space(cp) ? C_SPACE : C_OTHER;
    if (is_space(cp))
        return C_SPACE;
    return in_ranges(cp, kb_letters, sizeof kb_letters / sizeof *kb_letters)   ? C_LETTER
           : in_ranges(cp, kb_numbers, sizeof kb_numbers / sizeof *kb_numbers) ? C_NUMBER
                                                                               : C_OTHER;
}

/* The class of the character at s[i] (i < n) and its length. */
static cclass class_at(const unsigned char *s, size_t i, size_t n, int *len)
{
    uint32_t cp;
    *len = utf8_next(s + i, n - i, &cp);
    return class_of(cp);
}

/* ---- pre-tokenization ----------------------------------------------------------------------- */

/* The end of the run of class k from i. */
static size_t run_end(const unsigned char *s, size_t i, size_t n, cclass k)
{
    int len;
    while (i < n && class_at(s, i, n, &len) == k)
        i += (size_t)len;
    return i;
}

/* 's 't 're 've 'm 'll 'd at s[i]: their length, else 0. */
static size_t contraction(const unsigned char *s, size_t i, size_t n)
{
    if (s[i] != '\'' || i + 1 >= n)
        return 0;
    const unsigned char a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}

/* The length of GPT-2's expression's match at s[i] (i < n): the first
 * alternative that matches, as a backtracking engine takes them. */
static size_t match_at(const unsigned char *s, size_t i, size_t n)
{
    int len, len2;
    const size_t c = contraction(s, i, n);
    if (c)
        return c;
    const cclass k = class_at(s, i, n, &len);
    if (k != C_SPACE)
        return run_end(s, i, n, k) - i;
    if (s[i] == ' ' && i + 1 < n) { /* " ?" before a letter, number or other run */
        const cclass k2 = class_at(s, i + 1, n, &len2);
        if (k2 != C_SPACE)
            return run_end(s, i + 1, n, k2) - i;
    }
    /* \s+(?!\S) takes the run up to its last character when a non-space
     * follows it, the whole run at the end; \s+ takes a single one. */
    size_t end = i, last = i;
    while (end < n && class_at(s, end, n, &len) == C_SPACE) {
        last = end;
        end += (size_t)len;
    }
    return end == n || last == i ? end - i : last - i;
}

/* ---- merges --------------------------------------------------------------------------------- */

static uint64_t pair_key(int a, int b) { return (uint64_t)a << 32 | (uint32_t)b; }

static size_t pair_slot(const kb_bpe *t, uint64_t key)
{
    size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & (t->n_pair_slots - 1);
    while (t->pairs[h].key != UINT64_MAX && t->pairs[h].key != key)
        h = (h + 1) & (t->n_pair_slots - 1);
    return h;
}

static const kb_bpe_pair *pair_find(const kb_bpe *t, int a, int b)
{
    const kb_bpe_pair *p = &t->pairs[pair_slot(t, pair_key(a, b))];
    return p->key == UINT64_MAX ? NULL : p;
}

/* Scratch for one word: symbols as a linked list over byte positions, and
 * a min-heap of candidate merges by (rank, left position). */
typedef struct {
    int *id, *next, *prev;
    struct cand { int rank, left; } *heap;
    size_t n_heap, cap;
} word;

static int word_reserve(word *w, size_t n)
{
    if (n <= w->cap)
        return 0;
    if (n > INT_MAX / 3)
        return -1; /* positions are ints */
    const size_t cap = n < 64 ? 64 : n;
    int *id = realloc(w->id, sizeof(int) * cap), *next = id ? realloc(w->next, sizeof(int) * cap) : NULL;
    if (id)
        w->id = id;
    if (next)
        w->next = next;
    int *prev = next ? realloc(w->prev, sizeof(int) * cap) : NULL;
    if (prev)
        w->prev = prev;
    struct cand *heap = prev && cap <= SIZE_MAX / 3 / sizeof *heap ? realloc(w->heap, sizeof *heap * 3 * cap) : NULL;
    if (!heap)
        return -1;
    w->heap = heap;
    w->cap = cap;
    return 0;
}

static int cand_less(struct cand a, struct cand b) { return a.rank < b.rank || (a.rank == b.rank && a.left < b.left); }

static void heap_push(word *w, struct cand c)
{
    size_t i = w->n_heap++;
    while (i && cand_less(c, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = c;
}

static struct cand heap_pop(word *w)
{
    const struct cand top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= w->n_heap)
            break;
        if (k + 1 < w->n_heap && cand_less(w->heap[k + 1], w->heap[k]))
            ++k;
        if (!cand_less(w->heap[k], last))
            break;
        w->heap[i] = w->heap[k];
        i = k;
    }
    w->heap[i] = last;
    return top;
}

/* The pair starting at symbol left, if it has a merge, as a candidate. */
static void consider(const kb_bpe *t, word *w, int left)
{
    if (left < 0 || w->next[left] < 0)
        return;
    const kb_bpe_pair *p = pair_find(t, w->id[left], w->id[w->next[left]]);
    if (p)
        heap_push(w, (struct cand){p->rank, left});
}

/* BPE over one word's bytes; its ids appended to out[*n..].  A byte
 * without a token is dropped, as tokenizers does without an unknown token,
 * and its neighbours then meet. */
static void bpe_word(const kb_bpe *t, word *w, const unsigned char *s, size_t len, int *out, size_t *n)
{
    int k = 0;
    w->n_heap = 0;
    for (size_t i = 0; i < len; ++i)
        if (t->byte_id[s[i]] >= 0) {
            w->id[k] = t->byte_id[s[i]];
            w->prev[k] = k - 1;
            w->next[k] = k + 1;
            ++k;
        }
    if (k)
        w->next[k - 1] = -1;
    for (int i = 0; i + 1 < k; ++i)
        consider(t, w, i);
    while (w->n_heap) {
        const struct cand c = heap_pop(w);
        const int right = w->next[c.left];
        /* Stale when either symbol has changed since: then the pair's rank differs. */
        const kb_bpe_pair *p = w->id[c.left] >= 0 && right >= 0 ? pair_find(t, w->id[c.left], w->id[right]) : NULL;
        if (!p || p->rank != c.rank)
            continue;
        w->id[c.left] = p->id;
        w->id[right] = -1;
        w->next[c.left] = w->next[right];
        if (w->next[right] >= 0)
            w->prev[w->next[right]] = c.left;
        consider(t, w, w->prev[c.left]);
        consider(t, w, c.left);
    }
    for (int i = k ? 0 : -1; i >= 0; i = w->next[i])
        out[(*n)++] = w->id[i];
}

/* ---- encoding and decoding ------------------------------------------------------------------ */

/* fn on each word of one stretch of text between special tokens, as the
 * pre-tokenizer splits it; stops at fn's first non-zero return. */
static int each_word(kb_bpe_pre pre, const unsigned char *s, size_t n,
                     int (*fn)(const unsigned char *w, size_t len, void *user), void *user)
{
    size_t i = 0;
    while (i < n) {
        int len;
        size_t piece = n; /* the end of the piece the expression runs on */
        if (pre == KB_BPE_PRE_DIGITS) {
            if (class_at(s, i, n, &len) == C_NUMBER)
                piece = i + (size_t)len;
            else
                for (piece = i; piece < n && class_at(s, piece, n, &len) != C_NUMBER; piece += (size_t)len) {
                }
        }
        while (i < piece) {
            const size_t m = match_at(s, i, piece);
            const int rc = fn(s + i, m, user);
            if (rc)
                return rc;
            i += m;
        }
    }
    return 0;
}

int kb_bpe_each_word(kb_bpe_pre pre, const char *text, size_t len,
                     int (*fn)(const unsigned char *w, size_t n, void *user), void *user)
{
    return each_word(pre, (const unsigned char *)text, len, fn, user);
}

struct plain {
    const kb_bpe *t;
    word *w;
    int *out;
    size_t *count;
};

static int encode_word(const unsigned char *s, size_t m, void *user)
{
    struct plain *p = (struct plain *)user;
    if (word_reserve(p->w, m) != 0)
        return -1;
    bpe_word(p->t, p->w, s, m, p->out, p->count);
    return 0;
}

/* Words of one stretch of text between special tokens. */
static int encode_plain(const kb_bpe *t, word *w, const unsigned char *s, size_t n, int *out, size_t *count)
{
    struct plain p = {t, w, out, count};
    return each_word(t->pre, s, n, encode_word, &p);
}

/* The longest special token at s[0..n), or -1. */
static int special_at(const kb_bpe *t, const unsigned char *s, size_t n, size_t *len)
{
    const int *ids = t->special_by_byte[s[0]];
    int best = -1;
    *len = 0;
    for (; ids && *ids >= 0; ++ids) {
        const size_t k = (size_t)t->n_bytes[*ids];
        if (k <= n && k > *len && !memcmp(s, t->bytes[*ids], k)) {
            best = *ids;
            *len = k;
        }
    }
    return best;
}

int kb_bpe_encode(const kb_bpe *t, const char *text, size_t len, int **ids, size_t *n)
{
    const unsigned char *s = (const unsigned char *)text;
    word w = {0};
    *n = 0;
    *ids = len <= SIZE_MAX / sizeof(int) ? malloc(sizeof(int) * (len ? len : 1)) : NULL;
    int rc = *ids ? 0 : -1;
    size_t start = 0;
    for (size_t i = 0; rc == 0 && i <= len; ++i) {
        size_t k = 0;
        const int id = i < len ? special_at(t, s + i, len - i, &k) : -1;
        if (id < 0 && i < len)
            continue;
        rc = encode_plain(t, &w, s + start, i - start, *ids, n);
        if (id >= 0) {
            (*ids)[(*n)++] = id;
            i += k - 1;
            start = i + 1;
        }
    }
    free(w.id);
    free(w.next);
    free(w.prev);
    free(w.heap);
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int kb_bpe_decode(const kb_bpe *t, const int *ids, size_t n, char **out, size_t *len)
{
    size_t total = 0;
    *out = NULL;
    *len = 0;
    for (size_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= t->n_tokens)
            return -1;
        total += (size_t)t->n_bytes[ids[i]]; /* each at most 2^30 tokens of a file's bytes: no overflow */
    }
    if (!(*out = malloc(total + 1)))
        return -1;
    for (size_t i = 0; i < n; ++i) {
        memcpy(*out + *len, t->bytes[ids[i]], (size_t)t->n_bytes[ids[i]]);
        *len += (size_t)t->n_bytes[ids[i]];
    }
    (*out)[*len] = '\0';
    return 0;
}

/* ---- building it ----------------------------------------------------------------------------- */

static size_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; ++s)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h ^ h >> 29);
}

static size_t vocab_slot(const kb_bpe *t, const char *s)
{
    size_t h = hash_str(s) & (t->n_vocab_slots - 1);
    while (t->vocab_slots[h] >= 0 && strcmp(t->spelling[t->vocab_slots[h]], s))
        h = (h + 1) & (t->n_vocab_slots - 1);
    return h;
}

int kb_bpe_token_id(const kb_bpe *t, const char *spelling)
{
    return t->vocab_slots[vocab_slot(t, spelling)];
}

/* A power of two at least twice n. */
static size_t table_size(size_t n)
{
    size_t s = 16;
    while (s < 2 * n)
        s *= 2;
    return s;
}

/* The bytes a normal token's spelling stands for into dst; its count. */
static int spelled_bytes(const char *s, const int byte_of[N_SPELLED], unsigned char *dst)
{
    const size_t n = strlen(s);
    int k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        const int len = utf8_next((const unsigned char *)s + i, n - i, &cp);
        const int b = cp < N_SPELLED ? byte_of[cp] : -1;
        if (b >= 0)
            dst[k++] = (unsigned char)b;
        else
            for (int j = 0; j < len; ++j)
                dst[k++] = (unsigned char)s[i + j];
        i += (size_t)len;
    }
    return k;
}

/* Spellings and bytes into one arena, and the spelling hash. */
static int add_tokens(kb_bpe *t, const char *const *tokens, const int *types, char *err, size_t errlen)
{
    size_t total = 0;
    for (int i = 0; i < t->n_tokens; ++i) {
        const size_t n = strlen(tokens[i]);
        if (n == 0)
            return kb_report(err, errlen, "token %d is empty", i);
        /* Spellings are text (a byte-level one spells each byte as a character),
         * so one that is not UTF-8 is a damaged vocabulary, not raw bytes. */
        const size_t bad = not_utf8_at(tokens[i], n);
        if (bad < n)
            return kb_report(err, errlen, "token %d is not UTF-8 (byte %zu)", i, bad);
        if (n > (SIZE_MAX / 4 - total) / 2)
            return kb_report(err, errlen, "the tokens are too long");
        total += 2 * (n + 1);
        if (types && (types[i] < 0 || types[i] >= KB_TOKEN_TYPES))
            return kb_report(err, errlen, "token %d has type %d (0 to %d allowed)", i, types[i], KB_TOKEN_TYPES - 1);
    }
    t->arena = malloc(total ? total : 1);
    t->n_vocab_slots = table_size((size_t)t->n_tokens);
    t->vocab_slots = malloc(sizeof(int) * t->n_vocab_slots);
    if (!t->arena || !t->vocab_slots)
        return kb_report(err, errlen, "out of memory for %d tokens", t->n_tokens);
    memset(t->vocab_slots, 0xff, sizeof(int) * t->n_vocab_slots);
    char *p = t->arena;
    char q[KB_QUOTE_LEN];
    uint32_t cp_of[256];
    int byte_of[N_SPELLED];
    alphabet(cp_of, byte_of);
    for (int i = 0; i < t->n_tokens; ++i) {
        const size_t n = strlen(tokens[i]);
        t->spelling[i] = memcpy(p, tokens[i], n + 1);
        t->bytes[i] = (unsigned char *)p + n + 1;
        t->special[i] = types && (types[i] == KB_TOKEN_CONTROL || types[i] == KB_TOKEN_USER_DEFINED);
        if (t->special[i]) {
            memcpy(t->bytes[i], tokens[i], n);
            t->n_bytes[i] = (int)n;
        } else
            t->n_bytes[i] = spelled_bytes(tokens[i], byte_of, t->bytes[i]);
        p += 2 * (n + 1);
        const size_t slot = vocab_slot(t, t->spelling[i]);
        if (t->vocab_slots[slot] >= 0)
            return kb_report(err, errlen, "token %d '%s' repeats token %d", i, kb_quote(tokens[i], q, sizeof q),
                             t->vocab_slots[slot]);
        t->vocab_slots[slot] = i;
    }
    return 0;
}

/* The token of each byte, -1 for bytes the vocabulary lacks (SmolLM2's
 * lacks 21 that its training text never held). */
static int add_bytes(kb_bpe *t, char *err, size_t errlen)
{
    uint32_t cp_of[256];
    int byte_of[N_SPELLED];
    alphabet(cp_of, byte_of);
    for (int b = 0; b < 256; ++b) {
        char s[3];
        spell_byte(cp_of[b], s);
        t->byte_id[b] = kb_bpe_token_id(t, s);
        if (t->byte_id[b] >= 0 && t->special[t->byte_id[b]])
            return kb_report(err, errlen, "the token for byte 0x%02X ('%s') is a special one", b, s);
    }
    return 0;
}

static int add_merge(kb_bpe *t, const char *m, int rank, char *err, size_t errlen)
{
    char q[KB_QUOTE_LEN];
    const char *space = strchr(m, ' ');
    if (!space || space == m || !space[1] || strchr(space + 1, ' '))
        return kb_report(err, errlen, "merge %d '%s' is not two tokens and a space", rank, kb_quote(m, q, sizeof q));
    const size_t n = strlen(m), at = (size_t)(space - m);
    char *buf = malloc(n + 1);
    if (!buf)
        return kb_report(err, errlen, "out of memory");
    memcpy(buf, m, n + 1);
    buf[at] = '\0';
    const int a = kb_bpe_token_id(t, buf), b = kb_bpe_token_id(t, buf + at + 1);
    memmove(buf + at, buf + at + 1, n - at); /* "A B" -> "AB" */
    const int ab = kb_bpe_token_id(t, buf);
    free(buf);
    if (a < 0 || b < 0 || ab < 0)
        return kb_report(err, errlen, "merge %d '%s' names %s not in the vocabulary", rank, kb_quote(m, q, sizeof q),
                         a < 0 || b < 0 ? "a token" : "a result");
    const size_t slot = pair_slot(t, pair_key(a, b));
    if (t->pairs[slot].key != UINT64_MAX)
        return kb_report(err, errlen, "merge %d '%s' repeats merge %d", rank, kb_quote(m, q, sizeof q),
                         t->pairs[slot].rank);
    t->pairs[slot] = (kb_bpe_pair){pair_key(a, b), rank, ab};
    return 0;
}

static int add_specials(kb_bpe *t, char *err, size_t errlen)
{
    int count[256] = {0};
    for (int i = 0; i < t->n_tokens; ++i)
        count[t->special[i] ? t->bytes[i][0] : 0] += t->special[i];
    for (int b = 0; b < 256; ++b) {
        if (!count[b])
            continue;
        if (!(t->special_by_byte[b] = malloc(sizeof(int) * ((size_t)count[b] + 1))))
            return kb_report(err, errlen, "out of memory");
        count[b] = 0;
    }
    for (int i = 0; i < t->n_tokens; ++i)
        if (t->special[i])
            t->special_by_byte[t->bytes[i][0]][count[t->bytes[i][0]]++] = i;
    for (int b = 0; b < 256; ++b)
        if (t->special_by_byte[b])
            t->special_by_byte[b][count[b]] = -1;
    return 0;
}

int kb_bpe_init(kb_bpe *t, const char *const *tokens, const int *types, int n_tokens, const char *const *merges,
                int n_merges, kb_bpe_pre pre, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->pre = pre;
    t->bos = t->eos = -1;
    if (n_tokens < 256 || n_tokens > 1 << 30 || n_merges < 0 || n_merges > 1 << 30)
        return kb_report(err, errlen, "%d tokens and %d merges (256 to 2^30 tokens and up to 2^30 merges allowed)",
                         n_tokens, n_merges);
    t->n_tokens = n_tokens;
    t->spelling = malloc(sizeof *t->spelling * (size_t)n_tokens);
    t->bytes = malloc(sizeof *t->bytes * (size_t)n_tokens);
    t->n_bytes = malloc(sizeof *t->n_bytes * (size_t)n_tokens);
    t->special = malloc((size_t)n_tokens);
    t->n_pair_slots = table_size((size_t)n_merges);
    t->pairs = malloc(sizeof *t->pairs * t->n_pair_slots);
    int rc = t->spelling && t->bytes && t->n_bytes && t->special && t->pairs
                 ? 0 : kb_report(err, errlen, "out of memory for %d tokens", n_tokens);
    if (rc == 0)
        memset(t->pairs, 0xff, sizeof *t->pairs * t->n_pair_slots);
    if (rc == 0)
        rc = add_tokens(t, tokens, types, err, errlen);
    if (rc == 0)
        rc = add_bytes(t, err, errlen);
    for (int i = 0; i < n_merges && rc == 0; ++i)
        rc = add_merge(t, merges[i], i, err, errlen);
    if (rc == 0)
        rc = add_specials(t, err, errlen);
    if (rc)
        kb_bpe_free(t);
    return rc;
}

void kb_bpe_free(kb_bpe *t)
{
    for (int b = 0; b < 256; ++b)
        free(t->special_by_byte[b]);
    free(t->spelling);
    free(t->bytes);
    free(t->n_bytes);
    free(t->special);
    free(t->vocab_slots);
    free(t->pairs);
    free(t->arena);
    memset(t, 0, sizeof *t);
    t->bos = t->eos = -1;
}

/* ---- from a GGUF file --------------------------------------------------------------------- */

int kb_bpe_in_gguf(const kb_gguf_file *f) { return kb_gguf_find(f, "tokenizer.ggml.model") != NULL; }

static int gguf_kind(const kb_gguf_file *f, kb_bpe_pre *pre, char *err, size_t errlen)
{
    kb_gguf_str model = {0}, p = {0};
    char q[KB_QUOTE_LEN], name[64];
    const int got = kb_gguf_get_string(f, "tokenizer.ggml.model", &model, err, errlen);
    if (got < 0)
        return -1;
    if (!got || !kb_gguf_str_is(model, "gpt2"))
        return kb_report(err, errlen, "%s: tokenizer.ggml.model is not \"gpt2\"; kbench has byte-level BPE only",
                         f->path);
    const int has_pre = kb_gguf_get_string(f, "tokenizer.ggml.pre", &p, err, errlen);
    if (has_pre < 0)
        return -1;
    if (!has_pre)
        return kb_report(err, errlen, "%s: no tokenizer.ggml.pre names the pre-tokenizer", f->path);
    if (kb_gguf_str_is(p, "smollm") || kb_gguf_str_is(p, "starcoder"))
        *pre = KB_BPE_PRE_DIGITS;
    else if (kb_gguf_str_is(p, "gpt-2"))
        *pre = KB_BPE_PRE_GPT2;
    else {
        snprintf(name, sizeof name, "%.*s", (int)(p.len < 60 ? p.len : 60), p.ptr);
        return kb_report(err, errlen, "%s: tokenizer.ggml.pre '%s' is not one kbench has (smollm, starcoder, gpt-2)",
                         f->path, kb_quote(name, q, sizeof q));
    }
    return 0;
}

/* A string array's elements as C strings (copies; NUL bytes refused). */
static char **c_strings(const kb_gguf_file *f, const kb_gguf_kv *kv, char *err, size_t errlen)
{
    char **out = calloc(kv->count ? kv->count : 1, sizeof *out);
    for (uint64_t i = 0; out && i < kv->count; ++i) {
        const kb_gguf_str s = kv->strings[i];
        if (memchr(s.ptr, 0, s.len) || s.len > 1 << 20 || !(out[i] = malloc(s.len + 1))) {
            kb_report(err, errlen, "%s: %s[%" PRIu64 "] holds a NUL byte, is over 1 MiB or is out of memory", f->path,
                      kv->key, i);
            for (uint64_t k = 0; k < i; ++k)
                free(out[k]);
            free(out);
            return NULL;
        }
        memcpy(out[i], s.ptr, s.len);
        out[i][s.len] = '\0';
    }
    if (!out)
        kb_report(err, errlen, "%s: out of memory", f->path);
    return out;
}

static void free_strings(char **s, uint64_t n)
{
    for (uint64_t i = 0; s && i < n; ++i)
        free(s[i]);
    free(s);
}

/* token_type as ints, or NULL when absent (*rc -1 on an error). */
static int *gguf_types(const kb_gguf_file *f, uint64_t n, int *rc, char *err, size_t errlen)
{
    const kb_gguf_kv *kv = NULL;
    const int got = kb_gguf_get_ints(f, "tokenizer.ggml.token_type", &kv, err, errlen);
    *rc = got < 0 ? -1 : 0;
    if (got <= 0)
        return NULL;
    if (kv->count != n) {
        *rc = kb_report(err, errlen, "%s: tokenizer.ggml.token_type has %" PRIu64 " entries for %" PRIu64 " tokens",
                        f->path, kv->count, n);
        return NULL;
    }
    int *types = malloc(sizeof(int) * (n ? n : 1));
    for (uint64_t i = 0; types && i < n; ++i) {
        const int64_t v = kb_gguf_int_at(kv, i);
        types[i] = v < 0 || v >= KB_TOKEN_TYPES ? -1 : (int)v;
    }
    if (!types)
        *rc = kb_report(err, errlen, "%s: out of memory", f->path);
    return types;
}

/* bos_token_id and eos_token_id, when given, inside the vocabulary. */
static int gguf_ids(kb_bpe *t, const kb_gguf_file *f, char *err, size_t errlen)
{
    const char *keys[2] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"};
    int *slots[2] = {&t->bos, &t->eos};
    for (int k = 0; k < 2; ++k) {
        uint64_t v = 0;
        const int got = kb_gguf_get_uint(f, keys[k], &v, err, errlen);
        if (got < 0)
            return -1;
        if (got && v >= (uint64_t)t->n_tokens)
            return kb_report(err, errlen, "%s: %s %" PRIu64 " is outside the %d tokens", f->path, keys[k], v,
                             t->n_tokens);
        if (got)
            *slots[k] = (int)v;
    }
    return 0;
}

int kb_bpe_from_gguf(kb_bpe *t, const kb_gguf_file *f, char *err, size_t errlen)
{
    const kb_gguf_kv *tokens = NULL, *merges = NULL;
    kb_bpe_pre pre = KB_BPE_PRE_GPT2;
    char inner[448];
    memset(t, 0, sizeof *t);
    if (gguf_kind(f, &pre, err, errlen))
        return -1;
    const int got_t = kb_gguf_get_strings(f, "tokenizer.ggml.tokens", &tokens, err, errlen);
    const int got_m = got_t < 0 ? -1 : kb_gguf_get_strings(f, "tokenizer.ggml.merges", &merges, err, errlen);
    if (got_t < 0 || got_m < 0)
        return -1;
    if (!got_t || !got_m)
        return kb_report(err, errlen, "%s: no tokenizer.ggml.%s", f->path, got_t ? "merges" : "tokens");
    if (tokens->count > 1 << 30 || merges->count > 1 << 30)
        return kb_report(err, errlen, "%s: over 2^30 tokens or merges", f->path);
    int rc = 0;
    int *types = gguf_types(f, tokens->count, &rc, err, errlen);
    char **tok = rc ? NULL : c_strings(f, tokens, err, errlen);
    char **mer = tok ? c_strings(f, merges, err, errlen) : NULL;
    if (!mer)
        rc = -1;
    else if (kb_bpe_init(t, (const char *const *)tok, types, (int)tokens->count, (const char *const *)mer,
                         (int)merges->count, pre, inner, sizeof inner) != 0)
        rc = kb_report(err, errlen, "%s: tokenizer: %s", f->path, inner);
    else if (gguf_ids(t, f, err, errlen) != 0) {
        kb_bpe_free(t);
        rc = -1;
    }
    free_strings(tok, tokens->count);
    free_strings(mer, merges->count);
    free(types);
    return rc;
}
