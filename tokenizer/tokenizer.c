/* The whitespace tokenizer.  A vocabulary is one token per line; lookups go
 * through an open-addressing hash table, so encoding is linear in the text. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/fileio.h"
#include "harness/harness.h"
#include "tokenizer/tokenizer.h"

/* Far above any real vocabulary (a few MiB at most), so a wrong path
 * (a disk image, a model) is refused before it is read whole. */
#define MAX_VOCAB_BYTES ((uint64_t)64 << 20)

/* The special tokens first, at the ids the header promises, then common
 * words, so that a demo sentence encodes to mostly known ids. */
static const char default_vocab[] =
    "<unk>\n<pad>\n<s>\n</s>\n"
    ".\n,\n?\n!\n"
    "the\nof\nand\nto\na\nin\nis\nit\nthat\nwas\nfor\non\nare\nas\nwith\nhis\nthey\n"
    "i\nat\nbe\nthis\nhave\nfrom\nor\none\nhad\nby\nword\nbut\nnot\nwhat\nall\nwere\n"
    "we\nwhen\nyour\ncan\nsaid\nthere\nuse\nan\neach\nwhich\nshe\ndo\nhow\ntheir\nif\n"
    "will\nup\nother\nabout\nout\nmany\nthen\nthem\nthese\nso\nsome\nher\nwould\nmake\n"
    "like\nhim\ninto\ntime\nhas\nlook\ntwo\nmore\nwrite\ngo\nsee\nnumber\nno\nway\n"
    "could\npeople\nmy\nthan\nfirst\nwater\nbeen\ncall\nwho\nnow\nfind\nlong\ndown\n"
    "day\ndid\nget\ncome\nmade\nmay\npart\nhe\nyou\ncat\ndog\nsat\nmat\nhello\nworld\n";

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* FNV-1a: simple and good enough for short words. */
static size_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return (size_t)h;
}

/* The slot holding token s[0..n), or the empty slot where it would go. */
static size_t slot_of(const kb_vocab *v, const char *s, size_t n)
{
    size_t i = hash(s, n) & (v->nslots - 1);
    for (;; i = (i + 1) & (v->nslots - 1)) {
        int id = v->slots[i];
        if (id < 0 || (!strncmp(v->tokens[id], s, n) && v->tokens[id][n] == '\0'))
            return i;
    }
}

static int lookup(const kb_vocab *v, const char *s, size_t n)
{
    return v->slots[slot_of(v, s, n)];
}

/* Room for the tokens and a hash table at most half full. */
static int allocate(kb_vocab *v, int count)
{
    v->nslots = 16;
    while (v->nslots < 2 * (size_t)count)
        v->nslots *= 2;
    v->tokens = malloc((size_t)count * sizeof *v->tokens);
    v->slots = malloc(v->nslots * sizeof *v->slots);
    if (!v->tokens || !v->slots)
        return -1;
    memset(v->slots, 0xFF, v->nslots * sizeof *v->slots);
    return 0;
}

/* Lines in text[0..len): a last line without its newline still counts.
 * -1 when there are more than an int holds. */
static int count_lines(const char *text, size_t len)
{
    size_t lines = 0;
    for (size_t i = 0; i < len; ++i)
        lines += text[i] == '\n';
    lines += len && text[len - 1] != '\n';
    return lines > INT_MAX / 2 ? -1 : (int)lines;
}

/* Check the next line (a CR before its newline is dropped) and enter it
 * with the next id.  path is as messages show it. */
static int add_token(kb_vocab *v, char *line, size_t n, const char *path, char *err, size_t errlen)
{
    int line_no = v->size + 1;
    char q[64];
    if (n && line[n - 1] == '\r')
        n--;
    line[n] = '\0';
    if (!n)
        return kb_report(err, errlen, "%s:%d: empty line in the vocabulary", path, line_no);
    for (size_t i = 0; i < n; ++i)
        if (is_space(line[i]) || line[i] == '\0')
            return kb_report(err, errlen, "%s:%d: token '%s' contains whitespace or a NUL byte",
                          path, line_no, kb_quote(line, q, sizeof q));
    size_t slot = slot_of(v, line, n);
    if (v->slots[slot] >= 0)
        return kb_report(err, errlen, "%s:%d: duplicate token '%s' (first on line %d)",
                      path, line_no, kb_quote(line, q, sizeof q), v->slots[slot] + 1);
    v->slots[slot] = v->size;
    v->tokens[v->size++] = line;
    return 0;
}

/* Build v from text[0..len), which it takes over (text[len] must exist). */
static int build(kb_vocab *v, char *text, size_t len, const char *path, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    v->text = text;
    int count = count_lines(text, len);
    if (count == 0)
        return kb_report(err, errlen, "%s: the vocabulary is empty", path);
    if (count < 0 || allocate(v, count) != 0)
        return kb_report(err, errlen, "%s: vocabulary too large", path);
    for (size_t start = 0; start < len;) {
        char *nl = memchr(text + start, '\n', len - start);
        size_t n = nl ? (size_t)(nl - (text + start)) : len - start;
        if (add_token(v, text + start, n, path, err, errlen) != 0)
            return -1;
        start += n + 1;
    }
    v->unk_id = lookup(v, "<unk>", 5);
    if (v->unk_id < 0)
        return kb_report(err, errlen, "%s: the vocabulary has no <unk> token", path);
    return 0;
}

int kb_vocab_load(const char *path, kb_vocab *v, char *err, size_t errlen)
{
    char shown[KB_QUOTE_LEN];
    kb_quote(path, shown, sizeof shown);
    memset(v, 0, sizeof *v);
    size_t len = 0;
    char *text = kb_input_read(path, shown, MAX_VOCAB_BYTES, &len, err, errlen);
    if (!text)
        return -1;
    if (build(v, text, len, shown, err, errlen) == 0)
        return 0;
    kb_vocab_free(v);
    return -1;
}

int kb_vocab_default(kb_vocab *v)
{
    memset(v, 0, sizeof *v);
    size_t len = sizeof default_vocab - 1;
    char *text = malloc(len + 1);
    if (!text)
        return -1;
    memcpy(text, default_vocab, len + 1);
    char err[128];
    if (build(v, text, len, "built-in vocabulary", err, sizeof err) == 0)
        return 0;
    kb_vocab_free(v);
    return -1;
}

int kb_vocab_size(const kb_vocab *v)
{
    return v->size;
}

int kb_vocab_id(const kb_vocab *v, const char *token)
{
    return lookup(v, token, strlen(token));
}

int kb_encode(const kb_vocab *v, const char *text, int *ids, int cap)
{
    int count = 0;
    for (const char *p = text; *p;) {
        if (is_space(*p)) {
            p++;
            continue;
        }
        const char *start = p;
        while (*p && !is_space(*p))
            p++;
        if (count == INT_MAX)
            return -1;
        if (count < cap) {
            int id = lookup(v, start, (size_t)(p - start));
            ids[count] = id < 0 ? v->unk_id : id;
        }
        count++;
    }
    return count;
}

void kb_vocab_free(kb_vocab *v)
{
    free(v->text);
    free(v->tokens);
    free(v->slots);
    memset(v, 0, sizeof *v);
}
