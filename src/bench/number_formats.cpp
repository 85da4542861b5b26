#include "bench/number_formats.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "autogemm/errors.hpp"

namespace autogemm::bench {

namespace {

// A binary floating-point format: 1 sign bit, exponent_bits, mantissa_bits.
// IEEE-like formats reserve the all-ones exponent for inf/NaN; e4m3 (OCP FP8 "E4M3FN") uses it
// for finite numbers and only S.1111.111 is NaN.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;
};

Format format_of(DType t) {
  switch (t) {
    case DType::fp32: return {8, 23, true};
    case DType::bf16: return {8, 7, true};
    case DType::fp16: return {5, 10, true};
    case DType::e5m2: return {5, 2, true};
    case DType::e4m3: return {4, 3, false};
    default: break;
  }
  throw InvalidArgument("dtype", std::string(to_string(t)),
                        "the bench converts only fp32, bf16, fp16, e4m3 and e5m2 values");
}

struct Limits {
  int bias;
  uint32_t exponent_all_ones;
  uint32_t max_biased;         // largest exponent field of a finite number
  uint32_t max_mantissa_at_top;  // largest mantissa field at max_biased
};

Limits limits_of(const Format& f) {
  Limits l;
  l.bias = (1 << (f.exponent_bits - 1)) - 1;
  l.exponent_all_ones = (1u << f.exponent_bits) - 1;
  l.max_biased = f.has_infinity ? l.exponent_all_ones - 1 : l.exponent_all_ones;
  const uint32_t mantissa_all_ones = (1u << f.mantissa_bits) - 1;
  l.max_mantissa_at_top = f.has_infinity ? mantissa_all_ones : mantissa_all_ones - 1;
  return l;
}

uint32_t pack(uint32_t sign, uint32_t biased, uint32_t mantissa, const Format& f) {
  return (sign << (f.exponent_bits + f.mantissa_bits)) | (biased << f.mantissa_bits) | mantissa;
}

uint32_t nan_bits(const Format& f, const Limits& l) {
  if (f.has_infinity) return pack(0, l.exponent_all_ones, 1u << (f.mantissa_bits - 1), f);
  return pack(0, l.exponent_all_ones, (1u << f.mantissa_bits) - 1, f);
}

uint32_t overflow_bits(uint32_t sign, const Format& f, const Limits& l) {
  if (f.has_infinity) return pack(sign, l.exponent_all_ones, 0, f);
  return pack(sign, l.max_biased, l.max_mantissa_at_top, f);  // saturate (no infinity)
}

uint32_t encode_small(double v, const Format& f) {
  const Limits l = limits_of(f);
  if (std::isnan(v)) return nan_bits(f, l);
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const double magnitude = std::fabs(v);
  if (std::isinf(magnitude)) return overflow_bits(sign, f, l);
  if (magnitude == 0) return pack(sign, 0, 0, f);

  int frexp_exponent = 0;
  std::frexp(magnitude, &frexp_exponent);  // magnitude in [2^(e-1), 2^e)
  const int min_normal_exponent = 1 - l.bias;
  int exponent = std::max(frexp_exponent - 1, min_normal_exponent);
  // The significand as an integer in units of the last place at this exponent; nearbyint
  // rounds ties to even in the default floating-point environment.
  const double implicit_one = std::ldexp(1.0, f.mantissa_bits);
  double significand = std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - exponent));
  if (significand >= 2 * implicit_one) {  // rounding carried into the next binade
    significand = implicit_one;
    ++exponent;
  }
  uint32_t biased = 0, mantissa = 0;
  if (significand >= implicit_one) {
    biased = uint32_t(exponent + l.bias);
    mantissa = uint32_t(significand - implicit_one);
  } else {
    mantissa = uint32_t(significand);  // subnormal (or rounded to zero)
  }
  if (biased > l.max_biased || (biased == l.max_biased && mantissa > l.max_mantissa_at_top))
    return overflow_bits(sign, f, l);
  return pack(sign, biased, mantissa, f);
}

double decode_small(uint32_t bits, const Format& f) {
  const Limits l = limits_of(f);
  const uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1;
  const uint32_t mantissa = bits & mantissa_mask;
  const uint32_t biased = (bits >> f.mantissa_bits) & l.exponent_all_ones;
  const bool negative = ((bits >> (f.exponent_bits + f.mantissa_bits)) & 1u) != 0;
  double value;
  if (f.has_infinity && biased == l.exponent_all_ones) {
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  } else if (!f.has_infinity && biased == l.exponent_all_ones && mantissa == mantissa_mask) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (biased == 0) {
    value = std::ldexp(double(mantissa), 1 - l.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(double(mantissa + (1u << f.mantissa_bits)),
                       int(biased) - l.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

}  // namespace

bool has_number_format(DType t) {
  return t == DType::fp32 || t == DType::bf16 || t == DType::fp16 || t == DType::e4m3 ||
         t == DType::e5m2;
}

uint32_t encode_from_double(double v, DType t) {
  if (t == DType::fp32) {
    const float f = static_cast<float>(v);  // IEEE conversion, round to nearest even
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  return encode_small(v, format_of(t));
}

double decode_to_double(uint32_t bits, DType t) {
  if (t == DType::fp32) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  return decode_small(bits, format_of(t));
}

}  // namespace autogemm::bench
