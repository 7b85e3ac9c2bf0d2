/* Hugging Face Llama checkpoints: the flat JSON reader, config.json's
 * rules, seeded models written by kb_llama_save and loaded back (F32 the
 * same logits; BF16 and F16 those of the weights rounded the same way), and
 * damaged checkpoints refused with one line naming the problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "formats/json_flat.h"
#include "model/llama.h"
#include "tests/check.h"

static char dir[] = "/tmp/kbench-llama-XXXXXX";

static void expect_error(int rc, const char *err, const char *phrase)
{
    CHECK(rc != 0);
    if (rc == 0 || !strstr(err, phrase) || strchr(err, '\n'))
        fprintf(stderr, "expected an error with \"%s\", got rc %d: %s\n", phrase, rc, err);
    CHECK(strstr(err, phrase) != NULL && strchr(err, '\n') == NULL);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void test_json(void)
{
    char err[512];
    kb_json_object o;
    const char *good = "{\"a\": 12, \"b\": [1, {\"c\": [2, 3]}], \"d\": null, \"e\": \"x\\u00e9\\n\", \"f\": true,"
                       " \"g\": -1.5e-3, \"h\": {\"rope_type\": \"default\"}, \"i\": 1e2}";
    CHECK(kb_json_parse_flat(good, strlen(good), "t", &o, err, sizeof err) == 0);
    CHECK(o.count == 8);
    const kb_json_member *m = kb_json_get(&o, "a");
    CHECK(m && m->kind == KB_JSON_NUMBER && m->is_integer && m->integer == 12);
    CHECK((m = kb_json_get(&o, "b")) && m->kind == KB_JSON_ARRAY && good[m->begin] == '[' && good[m->end - 1] == ']');
    CHECK((m = kb_json_get(&o, "d")) && m->kind == KB_JSON_NULL);
    CHECK((m = kb_json_get(&o, "e")) && m->kind == KB_JSON_STRING && !strcmp(m->string, "x\xc3\xa9\n"));
    CHECK((m = kb_json_get(&o, "f")) && m->kind == KB_JSON_BOOL && m->boolean);
    CHECK((m = kb_json_get(&o, "g")) && m->number == -1.5e-3 && !m->is_integer);
    CHECK((m = kb_json_get(&o, "h")) && m->kind == KB_JSON_OBJECT);
    CHECK((m = kb_json_get(&o, "i")) && m->number == 100 && !m->is_integer);
    CHECK(!kb_json_get(&o, "z"));
    kb_json_free(&o);

    static const struct {
        const char *text;
        const char *phrase;
    } bad[] = {
        {"", "expected '{'"},
        {"[1]", "expected '{'"},
        {"{", "expected a string"},
        {"{\"a\": 1,}", "expected a string"},
        {"{\"a\": 01}", "leading zero"},
        {"{\"a\": 1, \"a\": 2}", "key \"a\" appears twice"},
        {"{\"a\": NaN}", "expected a value"},
        {"{\"a\": 1e999}", "number out of range"},
        {"{\"a\": 1.}", "expected a digit after '.'"},
        {"{\"a\": \"\x01\"}", "control character"},
        {"{\"a\": \"\\x\"}", "bad escape"},
        {"{\"a\": \"\\ud800\"}", "unpaired surrogate"},
        {"{\"a\": \"\\u0000\"}", "\\u0000"},
        {"{\"a\": 1} x", "text after the object"},
        {"{\"a\": [1 2]}", "expected ',' or ']'"},
        {"{\"a\": tru}", "expected a value"},
        {"{\"a\": \"open", "unterminated string"},
        {"{\"a\": 1 // comment\n}", "expected ',' or '}'"},
        /* A key twice in a nested object, at any depth, escaped or not. */
        {"{\"r\": {\"t\": 1, \"t\": 0}}", "key \"t\" appears twice"},
        {"{\"r\": [{\"a\": {\"t\": 1, \"u\": 2, \"\\u0074\": 3}}]}", "key \"t\" appears twice"},
        /* Strings that are not UTF-8, as values, keys and nested: a stray
         * byte, overlong forms, surrogates, past U+10FFFF, truncated. */
        {"{\"a\": \"\xff\"}", "not UTF-8"},
        {"{\"a\": \"\xc0\xaf\"}", "not UTF-8"},
        {"{\"a\": \"\xe0\x80\xaf\"}", "not UTF-8"},
        {"{\"a\": \"\xed\xa0\x80\"}", "not UTF-8"},
        {"{\"a\": \"\xf4\x90\x80\x80\"}", "not UTF-8"},
        {"{\"a\": \"x\xe2\x82\"}", "not UTF-8"},
        {"{\"\xc3\": 1}", "not UTF-8"},
        {"{\"r\": {\"rope_type\": \"\x80\"}}", "not UTF-8"},
        {"{\"r\": [\"\xf8\x88\x80\x80\x80\"]}", "not UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        err[0] = '\0';
        expect_error(kb_json_parse_flat(bad[i].text, strlen(bad[i].text), "t", &o, err, sizeof err), err,
                     bad[i].phrase);
    }
    /* A NUL after the object, nesting past the limit, a long number. */
    expect_error(kb_json_parse_flat("{}\0", 3, "t", &o, err, sizeof err), err, "text after the object");
    char deep[300] = "{\"a\": ";
    for (int i = 0; i < 100; ++i)
        strcat(deep, "[");
    expect_error(kb_json_parse_flat(deep, strlen(deep), "t", &o, err, sizeof err), err, "nested deeper than 64");
    char longnum[200] = "{\"a\": 1";
    for (int i = 0; i < 100; ++i)
        strcat(longnum, "0");
    strcat(longnum, "}");
    expect_error(kb_json_parse_flat(longnum, strlen(longnum), "t", &o, err, sizeof err), err, "number of over 63");
    /* UTF-8 of every length is kept as it is; equal keys in different objects are not duplicates. */
    const char *text = "{\"\xc3\xa9\": \"\xe2\x82\xac\xf0\x9f\x98\x80\", \"b\": {\"t\": 1, \"u\": {\"t\": 2}}, \"t\": 3}";
    CHECK(kb_json_parse_flat(text, strlen(text), "t", &o, err, sizeof err) == 0 &&
          !strcmp(kb_json_get(&o, "\xc3\xa9")->string, "\xe2\x82\xac\xf0\x9f\x98\x80"));
    kb_json_free(&o);
    /* The later of two equal keys is the byte named. */
    const char *twice = "{\"r\": {\"t\": 1, \"t\": 0}}";
    expect_error(kb_json_parse_flat(twice, strlen(twice), "t", &o, err, sizeof err), err,
                 "malformed JSON at byte 15: key \"t\" appears twice");
}

/* ---- config.json ------------------------------------------------------------------------ */

static const char *base_config =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 16,"
    " \"intermediate_size\": 24, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
    " \"vocab_size\": 11, \"rms_norm_eps\": 1e-05, \"rope_theta\": 500.0, \"tie_word_embeddings\": false,"
    " \"max_position_embeddings\": 64, \"rope_scaling\": null, \"hidden_act\": \"silu\", \"torch_dtype\": \"float32\","
    " \"bos_token_id\": 1, \"transformers_version\": \"4.46.0\"}";

/* base_config with `from` replaced by `to` (the first occurrence). */
static int parse_variant(const char *from, const char *to, kb_llama_config *c, char *err, size_t errlen)
{
    char text[2048];
    const char *at = strstr(base_config, from);
    if (!at) {
        fprintf(stderr, "test bug: '%s' not in the base config\n", from);
        return 0;
    }
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base_config), base_config, to, at + strlen(from));
    return kb_llama_config_parse(text, strlen(text), "config.json", c, err, errlen);
}

static void test_config(void)
{
    kb_llama_config c;
    char err[512];
    CHECK(kb_llama_config_parse(base_config, strlen(base_config), "config.json", &c, err, sizeof err) == 0);
    CHECK(c.d_model == 16 && c.d_ff == 24 && c.layers == 2 && c.heads == 4 && c.kv_heads == 2 && c.head_dim == 4 &&
          c.vocab == 11 && c.max_pos == 64 && !c.tied && c.eps == 1e-5 && c.rope_theta == 500);
    /* Defaults: no kv heads (= heads), eps, theta, tie, max positions. */
    const char *minimal = "{\"hidden_size\": 8, \"intermediate_size\": 4, \"num_hidden_layers\": 1,"
                          " \"num_attention_heads\": 2, \"vocab_size\": 5}";
    CHECK(kb_llama_config_parse(minimal, strlen(minimal), "c", &c, err, sizeof err) == 0);
    CHECK(c.kv_heads == 2 && c.head_dim == 4 && c.eps == 1e-6 && c.rope_theta == 10000 && !c.tied && c.max_pos == 2048);
    /* Accepted variants: an explicit head_dim, a null kv count, a "default" rope_scaling, transformers 5's
     * rope_parameters, tied. */
    CHECK(parse_variant("\"num_key_value_heads\": 2", "\"num_key_value_heads\": null", &c, err, sizeof err) == 0 &&
          c.kv_heads == 4);
    CHECK(parse_variant("\"hidden_size\": 16", "\"hidden_size\": 16, \"head_dim\": 8", &c, err, sizeof err) == 0 &&
          c.head_dim == 8);
    CHECK(parse_variant("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"default\"}", &c, err,
                        sizeof err) == 0);
    CHECK(parse_variant("\"rope_theta\": 500.0,", "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": "
                        "123.5},", &c, err, sizeof err) == 0 && c.rope_theta == 123.5);
    /* The same rope_theta at the top level and nested is one setting, given twice alike. */
    CHECK(parse_variant("\"rope_scaling\": null", "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": "
                        "500}", &c, err, sizeof err) == 0 && c.rope_theta == 500);
    CHECK(parse_variant("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true", &c, err, sizeof err) == 0 &&
          c.tied);
    CHECK(parse_variant("\"rope_scaling\": null", "\"rope_scaling\": null", &c, err, sizeof err) == 0 &&
          c.rope_scaling.factor == 0);
    /* Llama 3.1's scaling, in rope_scaling or (transformers 5) rope_parameters with the theta. */
    CHECK(parse_variant("\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0,\n"
                        "    \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": "
                        "8192}", &c, err, sizeof err) == 0 &&
          c.rope_scaling.factor == 8 && c.rope_scaling.low_freq_factor == 1 && c.rope_scaling.high_freq_factor == 4 &&
          c.rope_scaling.original_max_pos == 8192);
    CHECK(parse_variant("\"rope_theta\": 500.0,", "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": "
                        "500000, \"factor\": 32, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
                        "\"original_max_position_embeddings\": 8192},", &c, err, sizeof err) == 0 &&
          c.rope_theta == 500000 && c.rope_scaling.factor == 32);

    static const struct {
        const char *from, *to, *phrase;
    } bad[] = {
        {"\"hidden_size\": 16,", "", "config.json: no \"hidden_size\""},
        {"\"vocab_size\": 11", "\"vocab_size\": null", "no \"vocab_size\""},
        {"\"hidden_size\": 16", "\"hidden_size\": 16.5", "\"hidden_size\" must be an integer from 1 to 2^30, got 16.5"},
        {"\"hidden_size\": 16", "\"hidden_size\": \"16\"", "\"hidden_size\" must be an integer"},
        {"\"hidden_size\": 16", "\"hidden_size\": -16", "\"hidden_size\" must be an integer"},
        {"\"hidden_size\": 16", "\"hidden_size\": 2147483648", "\"hidden_size\" must be an integer"},
        {"\"hidden_size\": 16", "\"hidden_size\": 18", "hidden_size 18 is not a multiple of num_attention_heads 4"},
        {"\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "num_attention_heads 4 is not a multiple of "
         "num_key_value_heads 3"},
        {"\"num_hidden_layers\": 2", "\"num_hidden_layers\": 100000", "num_hidden_layers 100000 is not from 1 to 2^16"},
        {"\"hidden_size\": 16", "\"hidden_size\": 12, \"head_dim\": 3", "head_dim 3 is odd"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0", "rms_norm_eps 0 is not in (0, 1]"},
        {"\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": \"small\"", "\"rms_norm_eps\" must be a number"},
        {"\"rope_theta\": 500.0", "\"rope_theta\": -1", "rope_theta -1 is not a finite number above 0"},
        /* A pretty-printed object shows on one line, its newlines and indents as single spaces. */
        {"\"rope_scaling\": null", "\"rope_scaling\": {\n    \"rope_type\": \"yarn\",\n    \"factor\": 4.0\n  }",
         "config.json: \"rope_scaling\" is { \"rope_type\": \"yarn\", \"factor\": 4.0 }; kbench runs plain RoPE (null "
         "or rope_type \"default\") and rope_type \"llama3\""},
        {"\"rope_scaling\": null", "\"rope_scaling\": [1]", "\"rope_scaling\" is [1]; kbench runs plain RoPE (null) or "
         "rope_type \"llama3\""},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 32.0}",
         "config.json: \"rope_scaling\" of rope_type \"llama3\" has no \"low_freq_factor\""},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 0.5, \"low_freq_factor\": 1, "
         "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}", "the llama3 factor must be at least 1, "
         "got 0.5"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 4, "
         "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}", "rope_scaling \"llama3\" needs factor >= 1 "
         "and 0 < low_freq_factor < high_freq_factor, got 8, 4 and 4"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
         "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192.5}", "original_max_position_embeddings must "
         "be an integer from 1 to 2^30, got 8192.5"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
         "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 8192}, \"rope_parameters\": {\"rope_type\": "
         "\"llama3\", \"factor\": 16, \"low_freq_factor\": 1, \"high_freq_factor\": 4, "
         "\"original_max_position_embeddings\": 8192}", "\"rope_parameters\" gives other llama3 settings than those "
         "given before; give them once"},
        {"\"tie_word_embeddings\": false", "\"tie_word_embeddings\": 0", "\"tie_word_embeddings\" must be true or false"},
        {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"", "\"hidden_act\" is \"gelu\"; the MLP is SwiGLU"},
        {"\"model_type\": \"llama\"", "\"model_type\": \"gpt2\"", "kbench reads Llama checkpoints"},
        {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"silu\", \"attention_bias\": true", "the model has no biases"},
        {"\"vocab_size\": 11", "\"vocab_size\": 1073741824, \"hidden_size\": 1073741824",
         "key \"hidden_size\" appears twice"},
        /* rope_theta given twice must agree: a nested 0 does not silently lose (or win). */
        {"\"rope_scaling\": null", "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 0}",
         "config.json: \"rope_parameters\" gives rope_theta 0, but it is 500 already; give it once"},
        {"\"rope_scaling\": null", "\"rope_scaling\": {\"rope_type\": \"default\", \"rope_theta\": 7}",
         "\"rope_scaling\" gives rope_theta 7, but it is 500 already"},
        {"\"rope_theta\": 500.0, \"tie_word_embeddings\": false, \"max_position_embeddings\": 64, \"rope_scaling\": null",
         "\"rope_scaling\": {\"type\": \"default\", \"rope_theta\": 7}, "
         "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 8}",
         "\"rope_parameters\" gives rope_theta 8, but it is 7 already"},
        {"\"rope_theta\": 500.0,", "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 0},",
         "rope_theta 0 is not a finite number above 0"},
        {"\"rope_scaling\": null", "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1, "
         "\"rope_theta\": 500}", "key \"rope_theta\" appears twice"},
        {"\"hidden_act\": \"silu\"", "\"hidden_act\": \"silu\xff\"", "not UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        err[0] = '\0';
        expect_error(parse_variant(bad[i].from, bad[i].to, &c, err, sizeof err), err, bad[i].phrase);
    }
    /* The vocabulary and the width multiply past 2^40 in the embedding alone. */
    const char *huge = "{\"hidden_size\": 1073741824, \"intermediate_size\": 1, \"num_hidden_layers\": 1,"
                       " \"num_attention_heads\": 1, \"head_dim\": 2, \"vocab_size\": 1073741824}";
    expect_error(kb_llama_config_parse(huge, strlen(huge), "c", &c, err, sizeof err), err, "over 2^40 weights");
}

/* ---- round trips --------------------------------------------------------------------------- */

static const kb_llama_config small = {.d_model = 16, .d_ff = 24, .layers = 2, .heads = 4, .kv_heads = 2,
                                      .head_dim = 4, .vocab = 11, .max_pos = 64, .tied = 0, .eps = 1e-5,
                                      .rope_theta = 500};

static void logits_of(const kb_llama_model *m, float *out)
{
    static const int ids[6] = {3, 1, 4, 1, 5, 9};
    kb_llama_cache c;
    CHECK(kb_llama_cache_init(&c, &m->cfg, 6) == 0);
    CHECK(kb_llama_forward(m, &c, ids, 6, NULL, out) == 0);
    kb_llama_cache_free(&c);
}

static void round_weights(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    const kb_llama_dtype dt = *(const kb_llama_dtype *)user;
    float *p = (float *)data;
    (void)name;
    for (int64_t i = 0; i < rows * (cols ? cols : 1); ++i)
        p[i] = dt == KB_LLAMA_BF16 ? kb_bf16_to_f32(kb_f32_to_bf16(p[i])) : kb_f16_to_f32(kb_f32_to_f16(p[i]));
}

static void test_round_trip(void)
{
    char err[512];
    for (int tied = 0; tied < 2; ++tied)
        for (int dt = 0; dt < 3; ++dt) {
            kb_llama_config cfg = small;
            cfg.tied = tied;
            kb_llama_model a, b;
            float la[6 * 11], lb[6 * 11];
            CHECK(kb_llama_init_random(&a, &cfg, 21) == 0);
            CHECK(kb_llama_save(&a, dir, (kb_llama_dtype)dt, err, sizeof err) == 0);
            if (kb_llama_load(&b, dir, err, sizeof err) != 0) {
                fprintf(stderr, "load (tied %d, dtype %d): %s\n", tied, dt, err);
                CHECK(0);
                continue;
            }
            CHECK(a.cfg.d_model == b.cfg.d_model && a.cfg.d_ff == b.cfg.d_ff && a.cfg.layers == b.cfg.layers &&
                  a.cfg.heads == b.cfg.heads && a.cfg.kv_heads == b.cfg.kv_heads &&
                  a.cfg.head_dim == b.cfg.head_dim && a.cfg.vocab == b.cfg.vocab && a.cfg.max_pos == b.cfg.max_pos &&
                  a.cfg.tied == b.cfg.tied && a.cfg.eps == b.cfg.eps && a.cfg.rope_theta == b.cfg.rope_theta);
            CHECK((b.lm_head == b.embed) == tied);
            if (dt != KB_LLAMA_F32)
                kb_llama_each_weight(&a, round_weights, &dt);
            logits_of(&a, la);
            logits_of(&b, lb);
            CHECK(memcmp(la, lb, sizeof la) == 0);
            kb_llama_free(&a);
            kb_llama_free(&b);
        }
    /* Llama 3.1's frequency scaling survives the trip and changes the
     * logits: at head_dim 4 and theta 500 the second pair's wavelength
     * (140) is past N / l = 64, so its frequency is divided by 4. */
    kb_llama_config scaled = small;
    scaled.rope_scaling = (kb_llama_rope_scaling){4, 1, 4, 64};
    kb_llama_model a, b, plain;
    float la[6 * 11], lb[6 * 11], lp[6 * 11];
    CHECK(kb_llama_init_random(&a, &scaled, 22) == 0 && kb_llama_init_random(&plain, &small, 22) == 0);
    CHECK(kb_llama_save(&a, dir, KB_LLAMA_F32, err, sizeof err) == 0);
    if (kb_llama_load(&b, dir, err, sizeof err) == 0) {
        const kb_llama_rope_scaling *r = &b.cfg.rope_scaling;
        CHECK(r->factor == 4 && r->low_freq_factor == 1 && r->high_freq_factor == 4 && r->original_max_pos == 64);
        logits_of(&a, la);
        logits_of(&b, lb);
        logits_of(&plain, lp);
        CHECK(memcmp(la, lb, sizeof la) == 0 && memcmp(la, lp, sizeof la) != 0);
        kb_llama_free(&b);
    } else {
        fprintf(stderr, "load (llama3 scaling): %s\n", err);
        CHECK(0);
    }
    kb_llama_free(&a);
    kb_llama_free(&plain);
    /* The conversions: exact values, rounding to nearest even, Inf and NaN. */
    CHECK(kb_f32_to_bf16(1.0f) == 0x3f80 && kb_bf16_to_f32(0x3f80) == 1.0f);
    CHECK(kb_f32_to_bf16(1.00390625f) == 0x3f80);                 /* a tie rounds to even */
    CHECK(kb_f32_to_bf16(1.01171875f) == 0x3f82);                 /* a tie rounds to even, up */
    CHECK(kb_f32_to_f16(1.0f) == 0x3c00 && kb_f16_to_f32(0x3c00) == 1.0f);
    CHECK(kb_f32_to_f16(65504.0f) == 0x7bff && kb_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(kb_f32_to_f16(ldexpf(1, -24)) == 0x0001 && kb_f16_to_f32(0x0001) == ldexpf(1, -24));
    CHECK(kb_f32_to_f16(ldexpf(1, -25)) == 0x0000 && kb_f32_to_f16(ldexpf(3, -26)) == 0x0001);
    CHECK(kb_f32_to_f16(-2.0f) == 0xc000 && kb_f16_to_f32(0xc000) == -2.0f);
    CHECK(isnan(kb_f16_to_f32(kb_f32_to_f16(NAN))) && isnan(kb_bf16_to_f32(kb_f32_to_bf16(NAN))));
    CHECK(isinf(kb_f16_to_f32(0x7c00)) && kb_f16_to_f32(0x8000) == 0 && signbit(kb_f16_to_f32(0x8000)));
    for (uint32_t h = 0; h < 0x7c00; ++h) /* every finite f16 survives the trip through f32 */
        if (kb_f32_to_f16(kb_f16_to_f32((uint16_t)h)) != h) {
            fprintf(stderr, "f16 0x%04x does not round trip\n", h);
            CHECK(0);
            break;
        }
}

/* ---- damaged checkpoints ------------------------------------------------------------------- */

typedef struct {
    const char *skip, *reshape, *poison, *extra, *dtype_of, *dtype;
} damage;

typedef struct {
    FILE *head;
    float *data;
    uint64_t floats;
    damage d;
} st_writer;

static void collect(const char *name, int64_t rows, int64_t cols, const float *data, void *user)
{
    st_writer *w = user;
    if (w->d.skip && !strcmp(name, w->d.skip))
        return;
    const uint64_t n = (uint64_t)rows * (uint64_t)(cols ? cols : 1);
    char dims[64];
    if (w->d.reshape && !strcmp(name, w->d.reshape))
        snprintf(dims, sizeof dims, "%llu, 1", (unsigned long long)n);
    else if (cols)
        snprintf(dims, sizeof dims, "%lld, %lld", (long long)rows, (long long)cols);
    else
        snprintf(dims, sizeof dims, "%lld", (long long)rows);
    const char *dtype = w->d.dtype_of && !strcmp(name, w->d.dtype_of) ? w->d.dtype : "F32";
    fprintf(w->head, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%s], \"data_offsets\": [%llu, %llu]}", name, dtype,
            dims, (unsigned long long)(w->floats * 4), (unsigned long long)((w->floats + n) * 4));
    w->data = realloc(w->data, sizeof(float) * (size_t)(w->floats + n));
    memcpy(w->data + w->floats, data, sizeof(float) * (size_t)n);
    if (w->d.poison && !strcmp(name, w->d.poison))
        w->data[w->floats + n / 2] = NAN;
    w->floats += n;
}

static void write_damaged(const kb_llama_model *m, damage d)
{
    char path[256], *text = NULL;
    size_t len;
    st_writer w = {open_memstream(&text, &len), NULL, 0, d};
    fputs("{\"__metadata__\": {\"format\": \"pt\"}", w.head);
    kb_llama_each_weight(m, collect, &w);
    if (d.extra)
        collect(d.extra, 3, 0, m->norm, &w);
    fputc('}', w.head);
    fclose(w.head);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    unsigned char le[8];
    for (int i = 0; i < 8; ++i)
        le[i] = (unsigned char)((uint64_t)len >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(text, 1, len, f);
    fwrite(w.data, sizeof(float), (size_t)w.floats, f);
    fclose(f);
    free(text);
    free(w.data);
}

static void write_config(const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_damage(void)
{
    char err[512], path[300];
    kb_llama_model m, l;
    CHECK(kb_llama_init_random(&m, &small, 4) == 0);
    CHECK(kb_llama_save(&m, dir, KB_LLAMA_F32, err, sizeof err) == 0);
    static const struct {
        damage d;
        const char *phrase;
    } bad[] = {
        {{.skip = "model.layers.1.mlp.up_proj.weight"}, "no tensor named 'model.layers.1.mlp.up_proj.weight'"},
        {{.skip = "lm_head.weight"}, "no tensor named 'lm_head.weight'"},
        {{.reshape = "model.layers.0.self_attn.k_proj.weight"},
         "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [128, 1], expected [8, 16]"},
        {{.reshape = "model.norm.weight"}, "tensor 'model.norm.weight' has shape [16, 1], expected [16]"},
        {{.poison = "model.layers.1.self_attn.o_proj.weight"},
         "tensor 'model.layers.1.self_attn.o_proj.weight' holds NaN or Inf"},
        {{.extra = "model.layers.2.input_layernorm.weight"},
         "tensor 'model.layers.2.input_layernorm.weight' is not part of a untied LlamaForCausalLM with 2 layers"},
        {{.extra = "model.layers.0.self_attn.q_proj.bias"}, "tensor 'model.layers.0.self_attn.q_proj.bias' is not part"},
        {{.dtype_of = "model.embed_tokens.weight", .dtype = "I32"},
         "tensor 'model.embed_tokens.weight' has dtype I32; kbench loads F32, BF16 or F16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        write_damaged(&m, bad[i].d);
        err[0] = '\0';
        expect_error(kb_llama_load(&l, dir, err, sizeof err), err, bad[i].phrase);
        CHECK(l.storage == NULL && l.layers == NULL);
    }
    /* Undamaged through this writer: it loads (the writer is right). */
    write_damaged(&m, (damage){0});
    CHECK(kb_llama_load(&l, dir, err, sizeof err) == 0);
    kb_llama_free(&l);

    /* A tied config over an untied file: lm_head.weight differs from the
     * embedding.  A config whose sizes differ from the file's. */
    char text[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "r");
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    char *tie = strstr(text, "\"tie_word_embeddings\": false");
    memcpy(tie, "\"tie_word_embeddings\": true ", 28);
    write_config(text);
    expect_error(kb_llama_load(&l, dir, err, sizeof err), err,
                 "tensor 'lm_head.weight' differs from model.embed_tokens.weight but config.json says "
                 "tie_word_embeddings");
    memcpy(tie, "\"tie_word_embeddings\": false", 28);
    char *ff = strstr(text, "\"intermediate_size\": 24");
    memcpy(ff, "\"intermediate_size\": 32", 23);
    write_config(text);
    expect_error(kb_llama_load(&l, dir, err, sizeof err), err,
                 "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [24, 16], expected [32, 16]");
    write_config("{\"hidden_size\": 16,}");
    expect_error(kb_llama_load(&l, dir, err, sizeof err), err, "config.json: malformed JSON at byte 19");
    write_config(base_config);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    expect_error(kb_llama_load(&l, dir, err, sizeof err), err, "model.safetensors: cannot open");
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    expect_error(kb_llama_load(&l, dir, err, sizeof err), err, "config.json: cannot open");
    expect_error(kb_llama_load(&l, "/proc", err, sizeof err), err, "/proc/config.json: cannot open");
    kb_llama_free(&m);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    test_json();
    test_config();
    test_round_trip();
    test_damage();
    char path[300];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
    return CHECK_DONE();
}
