/* A byte-level BPE tokenizer (GPT-2's scheme), as the `tokenizers` package
 * runs one, from a vocabulary, its merges and its special tokens:
 *
 * 1. Special tokens (GGUF token types CONTROL and USER_DEFINED, such as
 *    <|im_start|>) are found whole in the text, leftmost and then longest
 *    first, before anything else; the text between them goes on.
 * 2. Pre-tokenization splits that text into words.  KB_BPE_PRE_DIGITS first
 *    isolates every \p{N} character (tokenizers' Digits(individual_digits),
 *    llama.cpp's "smollm"); both then apply GPT-2's expression
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *    matched by hand (tokenizer/bpe.c), \s being Unicode White_Space.
 * 3. Each word's bytes become the tokens of the byte alphabet (byte b is
 *    spelled as one code point: b itself for the printable ones, else
 *    256 + its index among the others); a byte the vocabulary lacks is
 *    dropped (tokenizers' BPE without an unknown token).  Then the
 *    adjacent pair with the lowest merge rank is merged, leftmost first,
 *    until no pair has a merge.  A heap keeps that O(n log n) in the
 *    word's length.
 *
 * Decoding maps each token's spelling back to bytes (special tokens are
 * their own text), so decode(encode(x)) == x for any bytes x that hold no
 * dropped byte. */
#ifndef KBENCH_TOKENIZER_BPE_H
#define KBENCH_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>
#include "formats/gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KB_BPE_PRE_GPT2, KB_BPE_PRE_DIGITS } kb_bpe_pre;

/* GGUF token types (tokenizer.ggml.token_type); CONTROL and USER_DEFINED
 * tokens are matched whole. */
enum { KB_TOKEN_NORMAL = 1, KB_TOKEN_CONTROL = 3, KB_TOKEN_USER_DEFINED = 4, KB_TOKEN_TYPES = 7 };

typedef struct {
    uint64_t key; /* left id << 32 | right id; UINT64_MAX where empty */
    int rank, id;
} kb_bpe_pair;

typedef struct {
    int n_tokens;
    char **spelling;          /* each token as the vocabulary spells it, NUL-terminated */
    unsigned char **bytes;    /* the bytes each token stands for */
    int *n_bytes;
    unsigned char *special;   /* 1: matched whole in the text */
    int *vocab_slots;         /* hash of spellings to ids, -1 where empty */
    size_t n_vocab_slots;     /* a power of two */
    kb_bpe_pair *pairs;       /* hash of merges */
    size_t n_pair_slots;      /* a power of two */
    int byte_id[256];         /* the token of each byte; -1: none, the byte is dropped */
    int *special_by_byte[256]; /* special ids by first byte, -1-terminated (NULL: none) */
    kb_bpe_pre pre;
    int bos, eos;             /* -1 when unknown */
    char *arena;              /* owns the spellings and bytes */
} kb_bpe;

/* tokens[0..n_tokens) (NUL-terminated spellings, unique, non-empty),
 * types (KB_TOKEN_*, values 0..6; NULL: all normal), merges in rank order
 * ("A B": two tokens whose concatenation is a token; no pair twice).  Byte
 * tokens may be missing but not special.  bos and eos are -1.  0, or -1 with
 * *t empty and one line in err. */
int kb_bpe_init(kb_bpe *t, const char *const *tokens, const int *types, int n_tokens, const char *const *merges,
                int n_merges, kb_bpe_pre pre, char *err, size_t errlen);

/* From a GGUF file's tokenizer.ggml.* keys: model "gpt2"; pre "smollm" or
 * "starcoder" (KB_BPE_PRE_DIGITS) or "gpt-2" (KB_BPE_PRE_GPT2); tokens,
 * token_type (optional) and merges; bos_token_id and eos_token_id
 * (optional) inside the vocabulary.  0, or -1 with one line in err. */
int kb_bpe_from_gguf(kb_bpe *t, const kb_gguf_file *f, char *err, size_t errlen);

/* Whether the file has a tokenizer at all (tokenizer.ggml.model). */
int kb_bpe_in_gguf(const kb_gguf_file *f);

/* The ids of text[0..len) (any bytes) into *ids (malloc'd, at most len of
 * them), their count in *n.  0, or -1 when out of memory. */
int kb_bpe_encode(const kb_bpe *t, const char *text, size_t len, int **ids, size_t *n);

/* The bytes of ids[0..n) into *out (malloc'd and NUL-terminated; *len
 * excludes the NUL).  0, or -1 for an id outside the vocabulary or out of
 * memory. */
int kb_bpe_decode(const kb_bpe *t, const int *ids, size_t n, char **out, size_t *len);

/* fn on each word of text[0..len) as the pre-tokenizer splits it (no
 * special tokens: all of it is plain text); stops at, and returns, fn's
 * first non-zero return. */
int kb_bpe_each_word(kb_bpe_pre pre, const char *text, size_t len,
                     int (*fn)(const unsigned char *w, size_t n, void *user), void *user);

/* How the byte alphabet spells byte b: one code point in UTF-8. */
void kb_bpe_byte_spelling(int b, char s[3]);

/* A vocabulary learnt from text (tokenizer/bpe_train.c), as GPT-2's was:
 * the 256 bytes, then merges of the most frequent adjacent pair of tokens
 * within the pre-tokenizer's words (ties to the pair of lowest ids), each
 * a new token, until there are `vocab` tokens or no pair occurs twice.
 * Deterministic.  *t as kb_bpe_init makes it; 0, or -1 with one line in
 * err. */
int kb_bpe_train(kb_bpe *t, const char *text, size_t len, int vocab, kb_bpe_pre pre, char *err, size_t errlen);

/* The id of a spelling, or -1. */
int kb_bpe_token_id(const kb_bpe *t, const char *spelling);

void kb_bpe_free(kb_bpe *t);

#ifdef __cplusplus
}
#endif
#endif
