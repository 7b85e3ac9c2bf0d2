/* Test helper: writes small .safetensors files, one valid and one for each
 * kind of damage the reader must reject.  test_model_io.c includes this file.
 *
 * The valid file holds (data section offsets in bytes):
 *   "a"     F32 [2, 3]  [0, 24)   -1, -0.5, 0, 0.5, 1, 1.5
 *   "b.1"   F32 [4]     [24, 40)  10, 11, 12, 13   (name written as "b\u002e1")
 *   "s"     F32 []      [40, 44)  42               (a scalar)
 *   "e"     F32 [0, 3]  [44, 44)                   (empty)
 * plus a "__metadata__" object with escapes, and trailing spaces after the
 * JSON, as the Python writer pads.  The Python reader loads it too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const float st_data[11] = {-1, -0.5f, 0, 0.5f, 1, 1.5f, 10, 11, 12, 13, 42};

#define ST_META "\"__metadata__\": {\"format\": \"pt\", \"note\": \"tab\\t \\\"q\\\" caf\\u00e9 \\ud83d\\ude00\"}"
#define ST_B "\"b\\u002e1\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [24, 40]}"
#define ST_REST "\"s\": {\"shape\": [], \"dtype\": \"F32\", \"data_offsets\": [40, 44]},\n" \
                " \"e\": {\"dtype\": \"F32\", \"shape\": [0, 3], \"data_offsets\": [44, 44]}}  "

/* The valid header, and the same with tensor "a" (or "b.1") replaced. */
#define ST_JSON(a, b) "{" ST_META ",\n \"a\": " a ",\n " b ",\n " ST_REST
#define ST_A "{\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]}"

typedef enum {
    ST_VALID,
    ST_CUT_PREFIX,        /* 5 bytes: inside the 8-byte header length */
    ST_CUT_HEADER,        /* ends 4 bytes before the header does */
    ST_CUT_DATA,          /* ends 6 bytes before the data does */
    ST_HEADER_TOO_LONG,   /* header length 1 MiB in a file of a few hundred bytes */
    ST_BAD_JSON,          /* the ':' after "a" is missing */
    ST_WRONG_DTYPE,       /* "a" is F16 [2, 6], the same 24 bytes */
    ST_OFFSETS_PAST_END,  /* "b.1" ends at 4000 */
    ST_END_BEFORE_BEGIN,  /* "b.1" has [24, 0] */
    ST_SIZE_MISMATCH,     /* "a" has 20 bytes for 6 floats */
    ST_VARIANTS
} st_variant;

static const char *st_json(st_variant v)
{
    switch (v) {
    case ST_BAD_JSON:
        return "{" ST_META ",\n \"a\" " ST_A ",\n " ST_B ",\n " ST_REST;
    case ST_WRONG_DTYPE:
        return ST_JSON("{\"dtype\": \"F16\", \"shape\": [2, 6], \"data_offsets\": [0, 24]}", ST_B);
    case ST_OFFSETS_PAST_END:
        return ST_JSON(ST_A, "\"b.1\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [24, 4000]}");
    case ST_END_BEFORE_BEGIN:
        return ST_JSON(ST_A, "\"b.1\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [24, 0]}");
    case ST_SIZE_MISMATCH:
        return ST_JSON("{\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 20]}", ST_B);
    default:
        return ST_JSON(ST_A, ST_B);
    }
}

/* Write the length prefix (header_len, which a damaged file may misstate),
 * the JSON and st_data, keeping only the first `keep` bytes. */
static int st_write_bytes(const char *path, uint64_t header_len, const char *json, size_t keep)
{
    size_t json_len = strlen(json), total = 8 + json_len + sizeof st_data;
    unsigned char *image = malloc(total);
    if (!image)
        return -1;
    for (int i = 0; i < 8; ++i)
        image[i] = (unsigned char)(header_len >> (8 * i));
    memcpy(image + 8, json, json_len);
    memcpy(image + 8 + json_len, st_data, sizeof st_data);
    FILE *f = fopen(path, "wb");
    size_t n = keep < total ? keep : total;
    int ok = f && fwrite(image, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    free(image);
    return ok ? 0 : -1;
}

/* A file with this header and st_data after it. */
static int st_write_json(const char *path, const char *json)
{
    return st_write_bytes(path, strlen(json), json, SIZE_MAX);
}

static int st_write_variant(const char *path, st_variant v)
{
    const char *json = st_json(v);
    size_t len = strlen(json), total = 8 + len + sizeof st_data;
    switch (v) {
    case ST_CUT_PREFIX:
        return st_write_bytes(path, len, json, 5);
    case ST_CUT_HEADER:
        return st_write_bytes(path, len, json, 8 + len - 4);
    case ST_CUT_DATA:
        return st_write_bytes(path, len, json, total - 6);
    case ST_HEADER_TOO_LONG:
        return st_write_bytes(path, 1 << 20, json, SIZE_MAX);
    default:
        return st_write_json(path, json);
    }
}
