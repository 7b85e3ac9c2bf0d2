/* The element types' table and the host's conversions: every stored bit
 * pattern reads back and rounds to itself; the roundings at the edges
 * (ties to even, subnormals, overflow to infinity in f16 and bf16,
 * saturation in fp8, NaN) land where the formats put them; names parse. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "harness/harness.h"
#include "tests/check.h"

/* The stored bits of x in t (at most 2 bytes here). */
static unsigned bits_of(kb_dtype t, float x)
{
    uint16_t out = 0;
    kb_store_floats(t, &x, &out, 1);
    return kb_dtype_size(t) == 1 ? (unsigned)(out & 0xff) : out;
}

static double value_of(kb_dtype t, unsigned bits)
{
    uint16_t in = (uint16_t)bits;
    uint8_t b = (uint8_t)bits;
    return kb_tensor_value(kb_dtype_size(t) == 1 ? (const void *)&b : (const void *)&in, 0, t);
}

/* Every non-NaN pattern decodes to a value that rounds back to it (fp8's
 * e5m2 infinities aside: its conversions saturate them, edges() checks). */
static void round_trips(kb_dtype t)
{
    const unsigned n = 1u << (8 * kb_dtype_size(t));
    unsigned bad = 0, nans = 0;
    for (unsigned b = 0; b < n; ++b) {
        const double v = value_of(t, b);
        if (isnan(v)) {
            ++nans;
            continue;
        }
        if (isinf(v) && kb_dtypes[t].scaled)
            continue;
        bad += bits_of(t, (float)v) != b;
    }
    printf("%s: %u patterns, %u NaN, %u do not round-trip\n", kb_dtype_name(t), n, nans, bad);
    CHECK(bad == 0);
    /* NaN patterns: f16 and bf16 all with the top exponent and a fraction,
     * e5m2 6 (3 each sign), e4m3 2 (S.1111.111). */
    CHECK(nans == (t == KB_E4M3 ? 2u : t == KB_E5M2 ? 6u : t == KB_F16 ? 2046u : 254u));
}

static void edges(void)
{
    /* f16: 10 fraction bits, largest 65504, ties to even. */
    CHECK(bits_of(KB_F16, 1.0f) == 0x3c00 && bits_of(KB_F16, -2.0f) == 0xc000);
    CHECK(bits_of(KB_F16, 65504.0f) == 0x7bff && bits_of(KB_F16, 65519.0f) == 0x7bff);
    CHECK(bits_of(KB_F16, 65520.0f) == 0x7c00 && bits_of(KB_F16, -INFINITY) == 0xfc00); /* overflow: infinity */
    CHECK(bits_of(KB_F16, 0x1p-24f) == 0x0001 && bits_of(KB_F16, 0x1p-25f) == 0x0000);   /* tie to even: 0 */
    CHECK(bits_of(KB_F16, 0x1.8p-24f) == 0x0002 && bits_of(KB_F16, -0.0f) == 0x8000);   /* 1.5 ulp: up to 2 */
    CHECK(bits_of(KB_F16, 1.0f + 0x1p-11f) == 0x3c00 && bits_of(KB_F16, 1.0f + 0x1.8p-10f) == 0x3c02);
    CHECK(isnan(value_of(KB_F16, bits_of(KB_F16, NAN))));
    /* bf16: f32's top half. */
    CHECK(bits_of(KB_BF16, 1.0f) == 0x3f80 && bits_of(KB_BF16, 1.0f + 0x1p-8f) == 0x3f80);
    CHECK(bits_of(KB_BF16, 0x1.ffp127f) == 0x7f80); /* rounds past the largest finite: infinity */
    /* e4m3: 3 fraction bits, no infinity, 448 the largest, saturating. */
    CHECK(bits_of(KB_E4M3, 448.0f) == 0x7e && bits_of(KB_E4M3, 464.0f) == 0x7e); /* tie to even: 448 */
    CHECK(bits_of(KB_E4M3, 480.0f) == 0x7e && bits_of(KB_E4M3, 1e9f) == 0x7e && bits_of(KB_E4M3, INFINITY) == 0x7e);
    CHECK(bits_of(KB_E4M3, -INFINITY) == 0xfe && bits_of(KB_E4M3, 1.0f) == 0x38);
    CHECK(bits_of(KB_E4M3, 0x1p-9f) == 0x01 && bits_of(KB_E4M3, 0x1p-10f) == 0x00); /* the smallest, half of it */
    CHECK((bits_of(KB_E4M3, NAN) & 0x7f) == 0x7f && isnan(value_of(KB_E4M3, 0x7f)) && value_of(KB_E4M3, 0x7e) == 448);
    /* e5m2: 2 fraction bits, IEEE's infinity, 57344 the largest, saturating. */
    CHECK(bits_of(KB_E5M2, 57344.0f) == 0x7b && bits_of(KB_E5M2, 61440.0f) == 0x7b && bits_of(KB_E5M2, INFINITY) == 0x7b);
    CHECK(value_of(KB_E5M2, 0x7c) == INFINITY && isnan(value_of(KB_E5M2, 0x7d)) && bits_of(KB_E5M2, 0x1p-16f) == 0x01);
    /* i32 holds the integral values an op's fill writes. */
    int32_t id = 0;
    const float seven = 7.0f;
    kb_store_floats(KB_I32, &seven, &id, 1);
    CHECK(id == 7 && kb_tensor_value(&id, 0, KB_I32) == 7);
}

static void table(void)
{
    kb_dtype t;
    const char *names[] = {"f32", "bf16", "f16", "e4m3", "e5m2"};
    for (int i = 0; i < 5; ++i)
        CHECK(kb_parse_dtype(names[i], &t) == 0 && t == (kb_dtype)i && !strcmp(kb_dtype_name(t), names[i]));
    CHECK(kb_parse_dtype("i32", &t) != 0 && kb_parse_dtype("f64", &t) != 0); /* not a variant's dtype */
    CHECK(kb_dtype_size(KB_F32) == 4 && kb_dtype_size(KB_F16) == 2 && kb_dtype_size(KB_E4M3) == 1);
    CHECK(kb_dtype_unit_roundoff(KB_BF16) == 0x1p-8 && kb_dtype_unit_roundoff(KB_F16) == 0x1p-11 &&
          kb_dtype_unit_roundoff(KB_E4M3) == 0x1p-4 && kb_dtype_unit_roundoff(KB_I32) == 0);
    CHECK(kb_dtypes[KB_E4M3].scaled && !kb_dtypes[KB_F16].scaled && kb_dtypes[KB_F16].max_finite == 65504);
    /* f16's tolerance sits between bf16's and f32's. */
    CHECK(kb_tolerance(KB_MATH_F16, 64, 1.0) < kb_tolerance(KB_MATH_BF16, 64, 1.0) &&
          kb_tolerance(KB_MATH_F16, 64, 1.0) > kb_tolerance(KB_MATH_F32, 64, 1.0));
}

int main(void)
{
    table();
    edges();
    round_trips(KB_F16);
    round_trips(KB_BF16);
    round_trips(KB_E4M3);
    round_trips(KB_E5M2);
    return CHECK_DONE();
}
