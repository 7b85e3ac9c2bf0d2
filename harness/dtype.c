/* The element types: one entry each, and the host's conversions, which
 * round as the GPU's do (to nearest, ties to even; fp8 saturating at its
 * largest finite value, as cvt's .satfinite) so that an input made on the
 * device and its host copy hold the same bits (case.c).
 *
 * Every floating type here is one layout, sign, exponent and fraction, so
 * one pair of functions reads and rounds them all from the format's widths;
 * fp8's e4m3 differs from IEEE only in having no infinity (its all-ones
 * exponent holds numbers up to 448, and S.1111.111 is NaN). */
#include <math.h>
#include <string.h>
#include "harness/harness.h"

const kb_dtype_info kb_dtypes[KB_DTYPE_COUNT] = {
    [KB_F32] = {"f32", 4, 23, 0x1.fffffep127, 0, 1},
    [KB_BF16] = {"bf16", 2, 7, 0x1.fep127, 0, 1},
    [KB_F16] = {"f16", 2, 10, 65504.0, 0, 1},
    [KB_E4M3] = {"e4m3", 1, 3, 448.0, 1, 1},
    [KB_E5M2] = {"e5m2", 1, 2, 57344.0, 1, 1},
    [KB_I32] = {"i32", 4, 0, 2147483647.0, 0, 0},
};

/* A small float format: its exponent and fraction widths, whether the
 * all-ones exponent means infinity and NaN (IEEE) or numbers (e4m3), and
 * whether rounding past the largest finite value saturates (fp8) or gives
 * infinity (f16, bf16). */
typedef struct {
    int ebits, mbits, ieee_top, saturates;
} small_format;

static small_format format_of(kb_dtype t)
{
    switch (t) {
    case KB_F16: return (small_format){5, 10, 1, 0};
    case KB_E4M3: return (small_format){4, 3, 0, 1};
    case KB_E5M2: return (small_format){5, 2, 1, 1};
    default: return (small_format){8, 7, 1, 0}; /* bf16 */
    }
}

static double decode_small(unsigned bits, small_format f)
{
    const unsigned frac = bits & ((1u << f.mbits) - 1), top = (1u << f.ebits) - 1;
    const unsigned e = (bits >> f.mbits) & top;
    const int bias = (1 << (f.ebits - 1)) - 1;
    const double sign = (bits >> (f.ebits + f.mbits)) & 1 ? -1.0 : 1.0;
    if (e == top && (f.ieee_top || frac == (1u << f.mbits) - 1))
        return f.ieee_top && frac == 0 ? sign * INFINITY : NAN;
    if (e == 0)
        return sign * ldexp((double)frac, 1 - bias - f.mbits);
    return sign * ldexp((double)(frac | 1u << f.mbits), (int)e - bias - f.mbits);
}

/* x rounded to the format: to nearest even at the format's spacing (which
 * stops shrinking at the subnormals), then, past the largest finite value,
 * to that value (saturating, infinity too) or to infinity. */
static unsigned encode_small(float x, small_format f, double max_finite)
{
    const unsigned sign = signbit(x) ? 1u << (f.ebits + f.mbits) : 0, top = (1u << f.ebits) - 1;
    const int bias = (1 << (f.ebits - 1)) - 1, emin = 1 - bias;
    if (isnan(x))
        return sign | top << f.mbits | ((1u << f.mbits) - 1);
    double a = fabs((double)x);
    int e;
    if (a != 0 && !isinf(a)) {
        frexp(a, &e); /* a = m 2^e with m in [0.5, 1): its exponent is e - 1 */
        const int q = (e - 1 < emin ? emin : e - 1) - f.mbits;
        a = ldexp(nearbyint(ldexp(a, -q)), q); /* the default rounding mode: ties to even */
    }
    if (a > max_finite) {
        if (!f.saturates)
            return sign | top << f.mbits;
        a = max_finite;
    }
    if (a == 0)
        return sign;
    frexp(a, &e);
    if (e - 1 < emin)
        return sign | (unsigned)ldexp(a, f.mbits - emin);
    const unsigned frac = (unsigned)ldexp(a, f.mbits - (e - 1)) & ((1u << f.mbits) - 1);
    return sign | (unsigned)(e - 1 + bias) << f.mbits | frac;
}

float kb_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even; NaN stays NaN.  By bits, since bf16 is f32's top
 * half: some 10 times faster than encode_small on the big inputs. */
uint16_t kb_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

double kb_tensor_value(const void *x, int64_t i, kb_dtype t)
{
    switch (t) {
    case KB_F32: return ((const float *)x)[i];
    case KB_BF16: return kb_bf16_to_float(((const uint16_t *)x)[i]);
    case KB_I32: return ((const int32_t *)x)[i];
    case KB_F16: return kb_f16_bits_to_float(((const uint16_t *)x)[i]);
    default: return decode_small(((const uint8_t *)x)[i], format_of(t));
    }
}

void kb_widen(const void *x, int64_t first, int64_t n, kb_dtype t, double *out)
{
    for (int64_t j = 0; j < n; ++j)
        out[j] = kb_tensor_value(x, first + j, t);
}

void kb_store_floats(kb_dtype t, const float *src, void *dst, int64_t n)
{
    const small_format f = format_of(t);
    const double max = kb_dtypes[t].max_finite;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k)
        switch (t) {
        case KB_F32: ((float *)dst)[k] = src[k]; break;
        case KB_BF16: ((uint16_t *)dst)[k] = kb_float_to_bf16(src[k]); break;
        case KB_I32: ((int32_t *)dst)[k] = (int32_t)src[k]; break;
        case KB_F16: ((uint16_t *)dst)[k] = (uint16_t)encode_small(src[k], f, max); break;
        default: ((uint8_t *)dst)[k] = (uint8_t)encode_small(src[k], f, max); break;
        }
}

const char *kb_dtype_name(kb_dtype t) { return kb_dtypes[t].name; }
size_t kb_dtype_size(kb_dtype t) { return (size_t)kb_dtypes[t].bytes; }

/* Half the spacing of t's numbers just above 1: how far one rounding to t
 * moves a value, relative to it (0 for i32, which holds integers exactly). */
double kb_dtype_unit_roundoff(kb_dtype t)
{
    return kb_dtypes[t].mantissa_bits ? ldexp(1.0, -(kb_dtypes[t].mantissa_bits + 1)) : 0;
}

int kb_parse_dtype(const char *s, kb_dtype *out)
{
    for (int t = 0; t < KB_DTYPE_COUNT; ++t)
        if (kb_dtypes[t].keys_variants && strcmp(s, kb_dtypes[t].name) == 0) {
            *out = (kb_dtype)t;
            return 0;
        }
    return -1;
}
