/* The flat JSON reader of formats/json_flat.h: a recursive-descent parser
 * over a bounded text, whose nested values are only checked and spanned. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "formats/json_flat.h"
#include "harness/harness.h"

typedef struct {
    const char *what, *text;
    size_t len, pos;
    char *err;
    size_t errlen;
} parser;

__attribute__((format(printf, 2, 3))) static int syntax(parser *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "%s: malformed JSON at byte %zu: %s", p->what, p->pos, msg);
    return -1;
}

static char peek(parser *p)
{
    while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
                               p->text[p->pos] == '\r'))
        p->pos++;
    return p->pos < p->len ? p->text[p->pos] : 0;
}

static int expect(parser *p, char c)
{
    if (peek(p) != c)
        return syntax(p, "expected '%c'", c);
    p->pos++;
    return 0;
}

static int hex4(parser *p, size_t at, unsigned *out)
{
    *out = 0;
    for (size_t i = at; i < at + 4; ++i) {
        const char c = i < p->len ? p->text[i] : 0;
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return syntax(p, "bad \\u escape");
        *out = *out * 16 + (unsigned)d;
    }
    return 0;
}

static size_t put_utf8(char *s, unsigned cp)
{
    if (cp < 0x80)
        return s[0] = (char)cp, 1;
    if (cp < 0x800)
        return s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return s[0] = (char)(0xE0 | cp >> 12), s[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
               s[2] = (char)(0x80 | (cp & 0x3F)), 3;
    s[0] = (char)(0xF0 | cp >> 18);
    s[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    s[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    s[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The escape at p->pos (a backslash), appended to s (when not NULL). */
static int escape(parser *p, char *s, size_t *n)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char c = p->pos + 1 < p->len ? p->text[p->pos + 1] : 0;
    if (c != 'u') {
        const char *hit = c ? strchr(from, c) : NULL;
        if (!hit)
            return syntax(p, "bad escape");
        if (s)
            s[*n] = to[hit - from];
        ++*n;
        p->pos += 2;
        return 0;
    }
    unsigned cp, low;
    size_t used = 6;
    if (hex4(p, p->pos + 2, &cp) != 0)
        return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return syntax(p, "unpaired surrogate in \\u escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        const size_t at = p->pos + 6;
        if (at + 1 >= p->len || p->text[at] != '\\' || p->text[at + 1] != 'u' || hex4(p, at + 2, &low) != 0 ||
            low < 0xDC00 || low > 0xDFFF)
            return syntax(p, "unpaired surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        used = 12;
    }
    if (cp == 0)
        return syntax(p, "\\u0000 in a string");
    char buf[4];
    const size_t k = put_utf8(s ? s + *n : buf, cp);
    *n += k;
    p->pos += used;
    return 0;
}

/* A string; unescaped into a new buffer when out is not NULL.  Unescaping
 * never lengthens it. */
static int parse_string(parser *p, char **out)
{
    if (out)
        *out = NULL;
    if (peek(p) != '"')
        return syntax(p, "expected a string");
    size_t end = ++p->pos;
    while (end < p->len && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->len)
        return syntax(p, "unterminated string");
    char *s = out ? malloc(end - p->pos + 1) : NULL;
    if (out && !s)
        return snprintf(p->err, p->errlen, "%s: out of memory", p->what), -1;
    size_t n = 0;
    while (p->pos < end) {
        const unsigned char c = (unsigned char)p->text[p->pos];
        int rc = 0;
        uint32_t cp;
        const size_t len = c < 0x80 ? 1 : kb_utf8_next((const unsigned char *)p->text + p->pos, end - p->pos, &cp);
        if (c < 0x20)
            rc = syntax(p, "control character in a string");
        else if (c == '\\')
            rc = escape(p, s, &n);
        else if (!len)
            rc = syntax(p, "a string that is not UTF-8 (invalid, overlong, surrogate or truncated)");
        else {
            if (s)
                memcpy(s + n, p->text + p->pos, len);
            n += len;
            p->pos += len;
        }
        if (rc != 0) {
            free(s);
            return -1;
        }
    }
    p->pos = end + 1;
    if (s) {
        s[n] = '\0';
        *out = s;
    }
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A number in JSON's grammar; *m gets its value when m is not NULL. */
static int parse_number(parser *p, kb_json_member *m)
{
    const size_t start = p->pos;
    size_t i = start;
    int integral = 1;
    const char *t = p->text;
    if (i < p->len && t[i] == '-')
        ++i;
    if (i >= p->len || !is_digit(t[i]))
        return syntax(p, "expected a value");
    if (t[i] == '0' && i + 1 < p->len && is_digit(t[i + 1]))
        return syntax(p, "number with a leading zero");
    while (i < p->len && is_digit(t[i]))
        ++i;
    if (i < p->len && t[i] == '.') {
        integral = 0;
        if (++i >= p->len || !is_digit(t[i]))
            return syntax(p, "expected a digit after '.'");
        while (i < p->len && is_digit(t[i]))
            ++i;
    }
    if (i < p->len && (t[i] == 'e' || t[i] == 'E')) {
        integral = 0;
        if (++i < p->len && (t[i] == '+' || t[i] == '-'))
            ++i;
        if (i >= p->len || !is_digit(t[i]))
            return syntax(p, "expected a digit in the exponent");
        while (i < p->len && is_digit(t[i]))
            ++i;
    }
    char buf[64];
    if (i - start >= sizeof buf)
        return syntax(p, "number of over %zu characters", sizeof buf - 1);
    memcpy(buf, t + start, i - start);
    buf[i - start] = '\0';
    const double v = strtod(buf, NULL);
    if (!isfinite(v))
        return syntax(p, "number out of range");
    if (m) {
        m->kind = KB_JSON_NUMBER;
        m->number = v;
        errno = 0;
        long long iv = integral ? strtoll(buf, NULL, 10) : 0;
        m->is_integer = integral && errno == 0;
        m->integer = m->is_integer ? (int64_t)iv : 0;
    }
    p->pos = i;
    return 0;
}

/* The keys of one object, each with its byte, to refuse a key given twice
 * at any depth: a caller that reads a nested object (rope_parameters) must
 * never meet two values of one key. */
typedef struct {
    char *key;
    size_t at;
} seen_key;

typedef struct {
    seen_key *k;
    size_t n, cap;
} key_set;

static int key_add(parser *p, key_set *ks, char *key, size_t at)
{
    if (ks->n == ks->cap) {
        const size_t cap = ks->cap ? 2 * ks->cap : 16;
        seen_key *grown = realloc(ks->k, sizeof *grown * cap);
        if (!grown) {
            free(key);
            return snprintf(p->err, p->errlen, "%s: out of memory", p->what), -1;
        }
        ks->k = grown;
        ks->cap = cap;
    }
    ks->k[ks->n++] = (seen_key){key, at};
    return 0;
}

static int by_key_then_byte(const void *a, const void *b)
{
    const seen_key *x = a, *y = b;
    const int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

static void keys_free(key_set *ks)
{
    for (size_t i = 0; i < ks->n; ++i)
        free(ks->k[i].key);
    free(ks->k);
    *ks = (key_set){0};
}

/* Sorted, so an object of n keys costs n log n, not n^2; the later of two
 * equal keys is named.  Frees the set. */
static int keys_unique(parser *p, key_set *ks)
{
    char q[KB_QUOTE_LEN];
    int rc = 0;
    if (ks->n)
        qsort(ks->k, ks->n, sizeof *ks->k, by_key_then_byte);
    for (size_t i = 1; i < ks->n && rc == 0; ++i)
        if (!strcmp(ks->k[i - 1].key, ks->k[i].key)) {
            p->pos = ks->k[i].at;
            rc = syntax(p, "key \"%s\" appears twice", kb_quote(ks->k[i].key, q, 64));
        }
    keys_free(ks);
    return rc;
}

static int literal(parser *p, const char *word)
{
    const size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return syntax(p, "expected a value");
    p->pos += n;
    return 0;
}

/* Any value, checked and stepped over; depth counts the enclosing
 * containers.  m (the top level's members) gets its kind and contents. */
static int value(parser *p, int depth, kb_json_member *m);

/* A nested object's key and ':' into ks. */
static int nested_key(parser *p, key_set *ks)
{
    char *key;
    const size_t at = (peek(p), p->pos);
    return parse_string(p, &key) != 0 || key_add(p, ks, key, at) != 0 ? -1 : expect(p, ':');
}

static int items(parser *p, int depth, char close, key_set *ks)
{
    for (;;) {
        if (close == '}' && nested_key(p, ks) != 0)
            return -1;
        if (value(p, depth + 1, NULL) != 0)
            return -1;
        const char c = peek(p);
        if (c == close) {
            p->pos++;
            return 0;
        }
        if (c != ',')
            return syntax(p, "expected ',' or '%c'", close);
        p->pos++;
    }
}

static int container(parser *p, int depth, char open)
{
    const char close = open == '{' ? '}' : ']';
    key_set ks = {0};
    if (depth >= KB_JSON_MAX_DEPTH)
        return syntax(p, "nested deeper than %d", KB_JSON_MAX_DEPTH);
    p->pos++;
    if (peek(p) == close) {
        p->pos++;
        return 0;
    }
    if (items(p, depth, close, &ks) != 0) {
        keys_free(&ks);
        return -1;
    }
    return keys_unique(p, &ks);
}

static int value(parser *p, int depth, kb_json_member *m)
{
    const char c = peek(p);
    kb_json_member scratch;
    kb_json_member *v = m ? m : &scratch;
    v->begin = p->pos;
    int rc;
    if (c == '{' || c == '[') {
        v->kind = c == '{' ? KB_JSON_OBJECT : KB_JSON_ARRAY;
        rc = container(p, depth, c);
    } else if (c == '"') {
        v->kind = KB_JSON_STRING;
        rc = parse_string(p, m ? &m->string : NULL);
    } else if (c == 't' || c == 'f') {
        v->kind = KB_JSON_BOOL;
        v->boolean = c == 't';
        rc = literal(p, c == 't' ? "true" : "false");
    } else if (c == 'n') {
        v->kind = KB_JSON_NULL;
        rc = literal(p, "null");
    } else
        rc = parse_number(p, m);
    v->end = p->pos;
    return rc;
}

const kb_json_member *kb_json_get(const kb_json_object *o, const char *key)
{
    for (int i = 0; i < o->count; ++i)
        if (!strcmp(o->members[i].key, key))
            return &o->members[i];
    return NULL;
}

void kb_json_free(kb_json_object *o)
{
    for (int i = 0; i < o->count; ++i) {
        free(o->members[i].key);
        free(o->members[i].string);
    }
    free(o->members);
    o->members = NULL;
    o->count = 0;
}

static int member(parser *p, kb_json_object *o, int *cap, key_set *ks)
{
    if (o->count == KB_JSON_MAX_MEMBERS)
        return syntax(p, "more than %d members", KB_JSON_MAX_MEMBERS);
    if (o->count == *cap) {
        const int grown_cap = *cap ? 2 * *cap : 32;
        kb_json_member *grown = realloc(o->members, sizeof *grown * (size_t)grown_cap);
        if (!grown)
            return snprintf(p->err, p->errlen, "%s: out of memory", p->what), -1;
        o->members = grown;
        *cap = grown_cap;
    }
    kb_json_member *m = &o->members[o->count];
    memset(m, 0, sizeof *m);
    const size_t at = (peek(p), p->pos);
    if (parse_string(p, &m->key) != 0)
        return -1;
    o->count++;
    char *copy = strdup(m->key);
    if (!copy)
        return snprintf(p->err, p->errlen, "%s: out of memory", p->what), -1;
    return key_add(p, ks, copy, at) != 0 || expect(p, ':') != 0 ? -1 : value(p, 1, m);
}

int kb_json_parse_flat(const char *text, size_t len, const char *what, kb_json_object *o, char *err,
                       size_t errlen)
{
    parser p = {what, text, len, 0, err, errlen};
    key_set ks = {0};
    int cap = 0, rc = 0;
    memset(o, 0, sizeof *o);
    if (len > KB_JSON_MAX_BYTES)
        rc = (snprintf(err, errlen, "%s: %zu bytes, over the %d a config may have", what, len, KB_JSON_MAX_BYTES), -1);
    else if (expect(&p, '{') != 0)
        rc = -1;
    else if (peek(&p) == '}')
        p.pos++;
    else
        for (;;) {
            if ((rc = member(&p, o, &cap, &ks)) != 0)
                break;
            const char c = peek(&p);
            if (c == '}') {
                p.pos++;
                rc = keys_unique(&p, &ks);
                break;
            }
            if (c != ',') {
                rc = syntax(&p, "expected ',' or '}'");
                break;
            }
            p.pos++;
        }
    if (rc == 0 && (peek(&p), p.pos < p.len))
        rc = syntax(&p, "text after the object");
    keys_free(&ks);
    if (rc != 0)
        kb_json_free(o);
    return rc;
}
