/* A strict reader of flat JSON objects, as Hugging Face's config.json: one
 * object whose members are numbers, booleans, strings or null.  A nested
 * object or array is checked for syntax and kept as its span of text, so a
 * caller can read one level further (rope_scaling) or ignore it.  Anything
 * that is not RFC 8259 JSON is refused: trailing commas, comments, NaN,
 * leading zeros, control characters in strings, text after the object; and
 * so is what RFC 8259 leaves to the reader: a key given twice in any object,
 * nested ones included, and a string (key or value, at any depth) that is
 * not UTF-8 (invalid, overlong, a surrogate, truncated).  Every failure is
 * one line naming the file and byte. */
#ifndef KBENCH_FORMATS_JSON_FLAT_H
#define KBENCH_FORMATS_JSON_FLAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KB_JSON_NULL, KB_JSON_BOOL, KB_JSON_NUMBER, KB_JSON_STRING, KB_JSON_OBJECT, KB_JSON_ARRAY } kb_json_kind;

typedef struct {
    char *key;            /* unescaped, NUL-terminated */
    kb_json_kind kind;
    int boolean;          /* KB_JSON_BOOL */
    double number;        /* KB_JSON_NUMBER, as strtod reads it (finite) */
    int is_integer;       /* the number has no fraction or exponent and fits int64 */
    int64_t integer;      /* then its value */
    char *string;         /* KB_JSON_STRING, unescaped; no NUL inside */
    size_t begin, end;    /* the value's bytes in the text: a nested value's span */
} kb_json_member;

typedef struct {
    kb_json_member *members;
    int count;
} kb_json_object;

/* The most bytes, members and nesting depth the reader accepts. */
#define KB_JSON_MAX_BYTES (1 << 20)
#define KB_JSON_MAX_MEMBERS 4096
#define KB_JSON_MAX_DEPTH 64

/* Parse text[0..len), which must be one object, into *o.  what names the
 * text in messages (a path).  0, or -1 with *o empty and one line in err. */
int kb_json_parse_flat(const char *text, size_t len, const char *what, kb_json_object *o, char *err,
                       size_t errlen);
/* The member named key, or NULL. */
const kb_json_member *kb_json_get(const kb_json_object *o, const char *key);
void kb_json_free(kb_json_object *o);

#ifdef __cplusplus
}
#endif
#endif
