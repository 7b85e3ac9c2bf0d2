/* The byte-level BPE tokenizer (tokenizer/bpe.h) on a handmade vocabulary:
 * the 256 byte tokens (one left out, to be dropped), a few merges and
 * special tokens.  Merges are observed through the ids they produce, and
 * the pre-tokenizer through merges that only apply when its split puts two
 * characters in one word. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/harness.h"
#include "tests/check.h"
#include "tokenizer/bpe.h"

#define MISSING 0x04 /* the byte without a token */

enum { MAX_TOKENS = 400 };

typedef struct {
    char *tokens[MAX_TOKENS];
    int types[MAX_TOKENS], n;
} vocab;

/* GPT-2's byte alphabet, written out: the printable bytes stand for
 * themselves, the others for 256, 257, ... in byte order. */
static void byte_spelling(int b, char out[3])
{
    int k = 0;
    const int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    for (int i = 0; i < b && !printable; ++i)
        k += !((i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE);
    const int cp = printable ? b : 256 + k;
    if (cp < 0x80)
        out[0] = (char)cp, out[1] = 0;
    else
        out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), out[2] = 0;
}

static int add(vocab *v, const char *s, int type)
{
    v->tokens[v->n] = strdup(s);
    v->types[v->n] = type;
    return v->n++;
}

static void vocab_free(vocab *v)
{
    for (int i = 0; i < v->n; ++i)
        free(v->tokens[i]);
}

/* Specials first (ids 0..2), then the byte tokens, then merge results. */
static void base_vocab(vocab *v)
{
    char s[3];
    v->n = 0;
    add(v, "<|s|>", KB_TOKEN_CONTROL);
    add(v, "<|long|>", KB_TOKEN_CONTROL);
    add(v, "<|lo", KB_TOKEN_USER_DEFINED);
    for (int b = 0; b < 256; ++b)
        if (b != MISSING) {
            byte_spelling(b, s);
            add(v, s, KB_TOKEN_NORMAL);
        }
}

static const char *const merges[] = {
    "b c", "a b", "a bc", "a a", "aa aa", "aaaa aaaa", "Ġ Ġ", "Ġ w", "1 2", "' s", "t '", "a !",
    "Ã ©", "x Ã©", "Â ²", "x Â²", "ā Ă", "h e", "l l", "he ll", "hell o",
};
#define N_MERGES (int)(sizeof merges / sizeof *merges)

/* The vocabulary with every merge's result added. */
static void full_vocab(vocab *v)
{
    base_vocab(v);
    for (int i = 0; i < N_MERGES; ++i) {
        char s[32];
        const char *sp = strchr(merges[i], ' ');
        snprintf(s, sizeof s, "%.*s%s", (int)(sp - merges[i]), merges[i], sp + 1);
        add(v, s, KB_TOKEN_NORMAL);
    }
}

static kb_bpe make(kb_bpe_pre pre, const char *const *m, int n_merges)
{
    vocab v;
    kb_bpe t;
    char err[256];
    full_vocab(&v);
    if (kb_bpe_init(&t, (const char *const *)v.tokens, v.types, v.n, m, n_merges, pre, err, sizeof err) != 0) {
        fprintf(stderr, "kb_bpe_init: %s\n", err);
        exit(1);
    }
    vocab_free(&v);
    return t;
}

/* The spellings of text's tokens, joined by '|'. */
static const char *spell(const kb_bpe *t, const char *text)
{
    static char out[4096];
    int *ids;
    size_t n;
    out[0] = '\0';
    if (kb_bpe_encode(t, text, strlen(text), &ids, &n) != 0)
        return "(failed)";
    for (size_t i = 0; i < n; ++i)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? "|" : "", t->spelling[ids[i]]);
    free(ids);
    return out;
}

static void expect(const kb_bpe *t, const char *text, const char *want, int line)
{
    const char *got = spell(t, text);
    if (strcmp(got, want))
        fprintf(stderr, "line %d: '%s' gave %s, expected %s\n", line, text, got, want);
    CHECK(!strcmp(got, want));
}

static void test_merges(void)
{
    kb_bpe t = make(KB_BPE_PRE_GPT2, merges, N_MERGES);
    expect(&t, "bc", "bc", __LINE__);
    expect(&t, "abc", "abc", __LINE__);          /* b c first (rank 0), then a bc */
    expect(&t, "aaa", "aa|a", __LINE__);         /* equal ranks: leftmost first */
    expect(&t, "aaaaa", "aaaa|a", __LINE__);
    expect(&t, "aaaaaaaaa", "aaaaaaaa|a", __LINE__);
    expect(&t, "hello", "hello", __LINE__);
    expect(&t, "hellx", "hell|x", __LINE__);
    kb_bpe_free(&t);
    /* With "a b" ranked before "b c", "abc" stops at ab|c. */
    const char *swapped[] = {"a b", "b c"};
    t = make(KB_BPE_PRE_GPT2, swapped, 2);
    expect(&t, "abc", "ab|c", __LINE__);
    kb_bpe_free(&t);
}

static void test_pretokenizer(void)
{
    kb_bpe t = make(KB_BPE_PRE_GPT2, merges, N_MERGES);
    expect(&t, "a  w", "a|Ġ|Ġw", __LINE__);    /* \s+(?!\S) leaves the last space to " w" */
    expect(&t, "a   ", "a|ĠĠ|Ġ", __LINE__);    /* at the end the run is whole: ĠĠ merges first */
    expect(&t, " w", "Ġw", __LINE__);
    expect(&t, "\tw", "ĉ|w", __LINE__);       /* only a space joins the word after it */
    expect(&t, "it's", "i|t|'s", __LINE__);   /* 's splits off: t and ' never meet */
    expect(&t, "a!", "a|!", __LINE__);        /* letters and punctuation split */
    expect(&t, "xé", "xÃ©", __LINE__);        /* é is a letter: one word with x */
    expect(&t, "x²", "x|Â²", __LINE__);       /* ² is a number: its own word */
    expect(&t, "12", "12", __LINE__);         /* GPT-2 keeps digit runs whole */
    expect(&t, "\x01\x04\x02", "āĂ", __LINE__); /* the missing byte drops; its neighbours merge */
    expect(&t, "h\x04" "e", "h|e", __LINE__);    /* across words they do not */
    kb_bpe_free(&t);
    t = make(KB_BPE_PRE_DIGITS, merges, N_MERGES);
    expect(&t, "12", "1|2", __LINE__);        /* smollm: every digit alone */
    expect(&t, "a 12", "a|Ġ|1|2", __LINE__);
    expect(&t, "x²", "x|Â²", __LINE__);
    expect(&t, "aa1aa", "aa|1|aa", __LINE__);
    kb_bpe_free(&t);
}

static void test_specials(void)
{
    kb_bpe t = make(KB_BPE_PRE_GPT2, merges, N_MERGES);
    expect(&t, "x<|long|>y<|lo", "x|<|long|>|y|<|lo", __LINE__); /* longest first, then the shorter */
    expect(&t, "<|s|><|s|>", "<|s|>|<|s|>", __LINE__);
    expect(&t, "<|s", "<|||s", __LINE__);   /* no whole special: "<|" and "s", unmerged */
    expect(&t, "hel<|s|>lo", "he|l|<|s|>|l|o", __LINE__); /* a special cuts the word */
    kb_bpe_free(&t);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static void test_round_trip(void)
{
    kb_bpe t = make(KB_BPE_PRE_DIGITS, merges, N_MERGES);
    uint64_t s = 88172645463325252ull;
    char text[512];
    int ok = 1;
    for (int trial = 0; trial < 2000; ++trial) {
        const size_t len = rng(&s) % sizeof text;
        for (size_t i = 0; i < len; ++i) {
            const uint64_t r = rng(&s);
            text[i] = r % 4 ? "ab c1'!\xc3\xa9\xe4\xb8\x96\n\t"[r / 4 % 15] : (char)(r >> 8);
            if ((unsigned char)text[i] == MISSING)
                text[i] = 'a';
        }
        if (len > 8 && trial % 3 == 0)
            memcpy(text + len / 2, "<|long|>", 8);
        int *ids;
        size_t n, back_len;
        char *back;
        CHECK(kb_bpe_encode(&t, text, len, &ids, &n) == 0);
        CHECK(kb_bpe_decode(&t, ids, n, &back, &back_len) == 0);
        ok &= n <= len && back_len == len && !memcmp(back, text, len);
        free(ids);
        free(back);
    }
    CHECK(ok);
    int bad = t.n_tokens;
    char *out;
    size_t len;
    CHECK(kb_bpe_decode(&t, &bad, 1, &out, &len) == -1);
    bad = -1;
    CHECK(kb_bpe_decode(&t, &bad, 1, &out, &len) == -1);
    kb_bpe_free(&t);
}

/* A word of 2^20 a's: merges through a heap, not quadratic rescans. */
static void test_long_word(void)
{
    kb_bpe t = make(KB_BPE_PRE_GPT2, merges, N_MERGES);
    const size_t n = (size_t)1 << 20;
    char *text = malloc(n);
    int *ids;
    size_t count;
    memset(text, 'a', n);
    CHECK(kb_bpe_encode(&t, text, n, &ids, &count) == 0);
    const int a8 = kb_bpe_token_id(&t, "aaaaaaaa");
    int all = count == n / 8;
    for (size_t i = 0; i < count; ++i)
        all &= ids[i] == a8;
    CHECK(all);
    free(ids);
    free(text);
    kb_bpe_free(&t);
}

/* The vocabulary with one change must be refused with `want`. */
static void refused(const char *token0, int type0, const char *merge, const char *want, int line)
{
    vocab v;
    kb_bpe t;
    char err[256] = "";
    full_vocab(&v);
    if (token0) {
        free(v.tokens[3]);
        v.tokens[3] = strdup(token0);
    }
    v.types[3] = type0;
    const char *m[] = {"a b", merge};
    const int rc = kb_bpe_init(&t, (const char *const *)v.tokens, v.types, v.n, m, merge ? 2 : 1, KB_BPE_PRE_GPT2,
                               err, sizeof err);
    if (rc == 0 || !strstr(err, want))
        fprintf(stderr, "line %d: expected a refusal with '%s', got rc %d: %s\n", line, want, rc, err);
    CHECK(rc != 0 && strstr(err, want) && !strchr(err, '\n') && t.spelling == NULL);
    vocab_free(&v);
}

static void test_refusals(void)
{
    refused("a", KB_TOKEN_NORMAL, NULL, "repeats token", __LINE__);
    refused("", KB_TOKEN_NORMAL, NULL, "token 3 is empty", __LINE__);
    refused(NULL, 9, NULL, "token 3 has type 9", __LINE__);
    refused(NULL, KB_TOKEN_CONTROL, NULL, "is a special one", __LINE__); /* token 3 spells byte 0x00 */
    refused(NULL, KB_TOKEN_NORMAL, "a  b", "is not two tokens and a space", __LINE__);
    refused(NULL, KB_TOKEN_NORMAL, "ab", "is not two tokens and a space", __LINE__);
    refused(NULL, KB_TOKEN_NORMAL, "q z", "names a result not in the vocabulary", __LINE__);
    refused(NULL, KB_TOKEN_NORMAL, "a zz", "names a token not in the vocabulary", __LINE__);
    refused(NULL, KB_TOKEN_NORMAL, "a b", "repeats merge 0", __LINE__);
    /* Spellings are text: a stray byte, an overlong '/', a surrogate and a
     * cut-off euro sign, normal or special, each named with its byte. */
    refused("a\xff", KB_TOKEN_NORMAL, NULL, "token 3 is not UTF-8 (byte 1)", __LINE__);
    refused("\xc0\xaf", KB_TOKEN_NORMAL, NULL, "token 3 is not UTF-8 (byte 0)", __LINE__);
    refused("\xed\xa0\x80", KB_TOKEN_CONTROL, NULL, "token 3 is not UTF-8 (byte 0)", __LINE__);
    refused("x\xe2\x82", KB_TOKEN_USER_DEFINED, NULL, "token 3 is not UTF-8 (byte 1)", __LINE__);
}

/* Decoded bytes need not be text; `tokenize --ids` prints them escaped
 * (kb_put_escaped): printable UTF-8 as it is, every other byte and the
 * backslash as \xNN, on one line. */
static void test_escaped(void)
{
    kb_bpe t = make(KB_BPE_PRE_GPT2, merges, N_MERGES);
    const char text[] = "a\\\n\xff\xc3\xa9\xc2\x85\x7f\xe2\x82";
    int *ids;
    size_t n, len, size;
    char *back, *out;
    CHECK(kb_bpe_encode(&t, text, sizeof text - 1, &ids, &n) == 0);
    CHECK(kb_bpe_decode(&t, ids, n, &back, &len) == 0 && len == sizeof text - 1);
    FILE *f = open_memstream(&out, &size);
    kb_put_escaped(f, back, len);
    fclose(f);
    const char *want = "a\\x5c\\x0a\\xff\xc3\xa9\\xc2\\x85\\x7f\\xe2\\x82";
    if (strcmp(out, want))
        fprintf(stderr, "escaped: got %s, expected %s\n", out, want);
    CHECK(!strcmp(out, want));
    free(out);
    free(back);
    free(ids);
    kb_bpe_free(&t);
}


static int count_word(const unsigned char *w, size_t n, void *user)
{
    (void)w, (void)n;
    ++*(size_t *)user;
    return 0;
}

/* kb_bpe_train: the bytes, then merges of the most frequent pairs; a word
 * the text repeats most becomes one token; decode(encode(x)) == x for the
 * text and for text it never saw; the same text gives the same ids; it
 * stops at the vocabulary's size, or once no pair occurs twice; the byte
 * spellings are the alphabet's. */
static void test_train(void)
{
    static const char text[] = " the lowest tower is lower than the low wall; the newest is newer.";
    char big[sizeof text * 40], err[256];
    size_t len = 0;
    for (int i = 0; i < 40; ++i)
        len += (size_t)snprintf(big + len, sizeof big - len, "%s", text);
    for (int b = 0; b < 256; ++b) {
        char a[3], e[3];
        kb_bpe_byte_spelling(b, a);
        byte_spelling(b, e);
        CHECK(!strcmp(a, e));
    }
    kb_bpe t, u;
    CHECK(kb_bpe_train(&t, big, len, 270, KB_BPE_PRE_GPT2, err, sizeof err) == 0);
    CHECK(t.n_tokens == 270); /* stopped at the vocabulary's size */
    kb_bpe_free(&t);
    /* Room for more than the text's pairs: it stops when every word is one token. */
    CHECK(kb_bpe_train(&t, big, len, 1000, KB_BPE_PRE_GPT2, err, sizeof err) == 0);
    size_t words = 0;
    CHECK(kb_bpe_each_word(KB_BPE_PRE_GPT2, big, len, count_word, &words) == 0);
    CHECK(t.n_tokens > 256 && t.n_tokens < 1000);
    int *ids = NULL, *again = NULL;
    size_t n = 0, m = 0;
    CHECK(kb_bpe_encode(&t, " lowest", 7, &ids, &n) == 0);
    CHECK(n == 1); /* " lowest" occurs 40 times: merged whole */
    free(ids);
    CHECK(kb_bpe_encode(&t, big, len, &ids, &n) == 0);
    CHECK(n == words);
    char *back = NULL;
    size_t blen = 0;
    CHECK(kb_bpe_decode(&t, ids, n, &back, &blen) == 0);
    CHECK(blen == len && !memcmp(back, big, len));
    free(back);
    static const char unseen[] = "Zebras \xe2\x80\x94 unseen words, 123!\n";
    int *u_ids = NULL;
    size_t un = 0;
    CHECK(kb_bpe_encode(&t, unseen, strlen(unseen), &u_ids, &un) == 0);
    CHECK(kb_bpe_decode(&t, u_ids, un, &back, &blen) == 0);
    CHECK(blen == strlen(unseen) && !memcmp(back, unseen, blen));
    free(back);
    free(u_ids);
    CHECK(kb_bpe_train(&u, big, len, 1000, KB_BPE_PRE_GPT2, err, sizeof err) == 0);
    CHECK(kb_bpe_encode(&u, big, len, &again, &m) == 0);
    CHECK(m == n && !memcmp(again, ids, n * sizeof *ids));
    free(ids);
    free(again);
    kb_bpe_free(&t);
    kb_bpe_free(&u);
    /* A text with few pairs stops early; too small a vocabulary is refused. */
    CHECK(kb_bpe_train(&t, "abab", 4, 1000, KB_BPE_PRE_GPT2, err, sizeof err) == 0);
    CHECK(t.n_tokens == 257); /* "ab" (twice), then "abab" occurs once */
    kb_bpe_free(&t);
    CHECK(kb_bpe_train(&t, big, len, 100, KB_BPE_PRE_GPT2, err, sizeof err) != 0 && strstr(err, "256 to"));
}

int main(void)
{
    test_merges();
    test_pretokenizer();
    test_specials();
    test_round_trip();
    test_long_word();
    test_refusals();
    test_escaped();
    test_train();
    return CHECK_DONE();
}
