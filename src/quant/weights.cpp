#include "autogemm/weights.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>

#include "autogemm/errors.hpp"

namespace autogemm {

namespace {

constexpr int64_t kInt4Group = 128;
constexpr int64_t kMxGroup = 32;
// e2m1 magnitudes by code 0..7 (OCP Microscaling Formats v1.0, FP4 E2M1).
constexpr float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

uint16_t float_to_bf16(float f) {   // round to nearest even; NaN stays NaN
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}
float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  else magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  std::memcpy(&magnitude, &bits, 4);
  return magnitude;
}

void put_bf16(std::vector<uint8_t>& bytes, int64_t i, uint16_t v) {
  bytes[size_t(2 * i)] = uint8_t(v & 0xff);
  bytes[size_t(2 * i + 1)] = uint8_t(v >> 8);
}
uint16_t get_bf16(const std::vector<uint8_t>& bytes, int64_t i) {
  return uint16_t(bytes[size_t(2 * i)] | (bytes[size_t(2 * i + 1)] << 8));
}
// 4-bit values: each 8-element run of a row (one little-endian 32-bit word) holds element 2i in
// bits 4i and element 2i + 1 in bits 16 + 4i (i = 0..3), so the kernel turns a word into the
// bf16 pair (2i, 2i + 1) with one shift and one mask: (word >> 4i) & 0x000f000f
// (sm90/weight_dequant.cuh).
size_t nibble_bit(int64_t index) {
  const int64_t j = index % 8;
  return size_t(index / 8 * 32 + (j % 2 == 0 ? 4 * (j / 2) : 16 + 4 * (j / 2)));
}
void set_nibble(std::vector<uint8_t>& q, int64_t index, unsigned v) {
  const size_t bit = nibble_bit(index);
  uint8_t& byte = q[bit / 8];
  byte = bit % 8 == 0 ? uint8_t((byte & 0xf0) | (v & 0xf)) : uint8_t((byte & 0x0f) | (v << 4));
}
unsigned get_nibble(const std::vector<uint8_t>& q, int64_t index) {
  const size_t bit = nibble_bit(index);
  return (q[bit / 8] >> (bit % 8)) & 0xfu;
}

// Nearest e2m1 code of |x| (x >= 0, already divided by the group's power of two), ties to the
// even code, saturated to 6.
unsigned e2m1_code(float x) {
  unsigned best = 0;
  for (unsigned c = 1; c < 8; ++c) {
    const float d = std::abs(x - kE2m1[c]), best_d = std::abs(x - kE2m1[best]);
    if (d < best_d || (d == best_d && c % 2 == 0)) best = c;
  }
  return best;
}

void check_shape(int64_t n, int64_t k, WeightFormat f) {
  if (n < 1) throw InvalidArgument("n", std::to_string(n), "must be >= 1");
  if (k < 1) throw InvalidArgument("k", std::to_string(k), "must be >= 1");
  const int64_t g = weight_group_size(f);
  if (g > 0 && k % g != 0)
    throw InvalidArgument("k", std::to_string(k),
                          fmt::format("{} has one scale per {} weights along K: K must be a "
                                      "multiple of {}",
                                      to_string(f), g, g));
  if (k % 2 != 0 && f != WeightFormat::int8_channel)
    throw InvalidArgument("k", std::to_string(k), "4-bit rows are whole bytes: K must be even");
}

void check_group_size(int64_t group_size) {
  if (group_size != kInt4Group)
    throw InvalidArgument("group_size", std::to_string(group_size),
                          "autogemm's INT4 format has one scale per 128 weights along K");
}

// A zeroed int4-g128-zp weight of n x k for an importer whose checkpoint packs 8 values of N an
// int32 (`packs` says so in its error).
PackedWeight empty_zero_point_weight(int64_t n, int64_t k, int64_t group_size, const char* packs) {
  check_group_size(group_size);
  check_shape(n, k, WeightFormat::int4_g128_zp);
  if (n % 8 != 0)
    throw InvalidArgument("n", std::to_string(n), fmt::format("{}: N must be a multiple of 8",
                                                              packs));
  PackedWeight p;
  p.format = WeightFormat::int4_g128_zp;
  p.n = n;
  p.k = k;
  const WeightBytes bytes = weight_bytes(p.format, n, k);
  p.q.assign(size_t(bytes.q), 0);
  p.scales.assign(size_t(bytes.scales), 0);
  p.zeros.assign(size_t(bytes.zeros), 0);
  return p;
}

}  // namespace

std::string_view to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::int4_g128: return "int4-g128";
    case WeightFormat::int4_g128_zp: return "int4-g128-zp";
    case WeightFormat::mxfp4: return "mxfp4";
    case WeightFormat::int8_channel: return "int8";
  }
  return "?";
}

std::optional<WeightFormat> parse_weight_format(std::string_view s) {
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp, WeightFormat::mxfp4,
                         WeightFormat::int8_channel})
    if (s == to_string(f)) return f;
  return std::nullopt;
}

int64_t weight_group_size(WeightFormat f) {
  switch (f) {
    case WeightFormat::int4_g128:
    case WeightFormat::int4_g128_zp: return kInt4Group;
    case WeightFormat::mxfp4: return kMxGroup;
    case WeightFormat::int8_channel: return 0;
  }
  return 0;
}

int64_t weight_gemm_k_multiple(WeightFormat f) {
  const int64_t g = weight_group_size(f);
  return g > 0 ? g : 16;
}

int64_t PackedWeight::group_size() const {
  const int64_t g = weight_group_size(format);
  return g > 0 ? g : k;
}

WeightBytes weight_bytes(WeightFormat f, int64_t n, int64_t k) {
  const int64_t g = weight_group_size(f);
  const int64_t groups = g > 0 ? n * (k / g) : n;
  WeightBytes b;
  b.q = f == WeightFormat::int8_channel ? n * k : n * k / 2;
  b.scales = groups * (f == WeightFormat::mxfp4 ? 1 : f == WeightFormat::int8_channel ? 4 : 2);
  b.zeros = f == WeightFormat::int4_g128_zp ? groups : 0;
  return b;
}

void validate(const PackedWeight& w) {
  check_shape(w.n, w.k, w.format);
  const WeightBytes want = weight_bytes(w.format, w.n, w.k);
  for (auto [name, have, needs] : {std::tuple{"q", int64_t(w.q.size()), want.q},
                                   {"scales", int64_t(w.scales.size()), want.scales},
                                   {"zeros", int64_t(w.zeros.size()), want.zeros}})
    if (have != needs)
      throw InvalidArgument(name, fmt::format("{} bytes", have),
                            fmt::format("{} x {} {} needs {} bytes", w.n, w.k, to_string(w.format),
                                        needs));
}

PackedWeight quantize_weight(const float* w, int64_t n, int64_t k, WeightFormat format) {
  check_shape(n, k, format);
  if (w == nullptr) throw InvalidArgument("w", "nullptr", "must point to n x k floats");
  PackedWeight p;
  p.format = format;
  p.n = n;
  p.k = k;
  const int64_t g = p.group_size(), groups_per_row = k / g;
  if (format == WeightFormat::int8_channel) {
    p.q.resize(size_t(n * k));
    p.scales.resize(size_t(n * 4));
    for (int64_t r = 0; r < n; ++r) {
      float amax = 0;
      for (int64_t c = 0; c < k; ++c) amax = std::max(amax, std::abs(w[r * k + c]));
      const float scale = amax / 127.0f;
      std::memcpy(&p.scales[size_t(4 * r)], &scale, 4);
      for (int64_t c = 0; c < k; ++c) {
        const float v = scale > 0 ? std::nearbyint(w[r * k + c] / scale) : 0.0f;
        p.q[size_t(r * k + c)] = uint8_t(int8_t(std::clamp(v, -127.0f, 127.0f)));
      }
    }
    return p;
  }
  p.q.assign(size_t(n * k / 2), 0);
  p.scales.assign(size_t(n * groups_per_row * (format == WeightFormat::mxfp4 ? 1 : 2)), 0);
  if (format == WeightFormat::int4_g128_zp) p.zeros.assign(size_t(n * groups_per_row), 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t gi = 0; gi < groups_per_row; ++gi) {
      const float* x = w + r * k + gi * g;
      const int64_t first = r * k + gi * g, group = r * groups_per_row + gi;
      float amax = 0, lo = 0, hi = 0;
      for (int64_t i = 0; i < g; ++i) {
        amax = std::max(amax, std::abs(x[i]));
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
      }
      if (format == WeightFormat::mxfp4) {
        const int exponent =
            amax > 0 ? std::clamp(int(std::floor(std::log2(amax))) - 2, -127, 127) : -127;
        p.scales[size_t(group)] = uint8_t(exponent + 127);
        for (int64_t i = 0; i < g; ++i) {
          const float scaled = std::ldexp(std::abs(x[i]), -exponent);
          // The sign bit as the value's own (a -0 stays -0: the round trip is exact).
          set_nibble(p.q, first + i, e2m1_code(scaled) | (std::signbit(x[i]) ? 8u : 0u));
        }
        continue;
      }
      const bool zp = format == WeightFormat::int4_g128_zp;
      const uint16_t scale_bits = float_to_bf16(zp ? (hi - lo) / 15.0f : amax / 7.0f);
      const float scale = bf16_to_float(scale_bits);
      put_bf16(p.scales, group, scale_bits);
      const float zero = zp && scale > 0 ? std::clamp(std::nearbyint(-lo / scale), 0.0f, 15.0f)
                                         : zp ? 0.0f : 8.0f;
      if (zp) p.zeros[size_t(group)] = uint8_t(zero);
      for (int64_t i = 0; i < g; ++i) {
        const float v = scale > 0 ? std::nearbyint(x[i] / scale) : 0.0f;
        const float q = zp ? std::clamp(v + zero, 0.0f, 15.0f) : std::clamp(v, -8.0f, 7.0f) + 8.0f;
        set_nibble(p.q, first + i, unsigned(q));
      }
    }
  return p;
}

std::vector<float> dequantize_weight(const PackedWeight& p) {
  validate(p);
  const int64_t n = p.n, k = p.k, g = p.group_size(), groups_per_row = k / g;
  std::vector<float> out(size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      const int64_t i = r * k + c, group = r * groups_per_row + c / g;
      float v = 0;
      switch (p.format) {
        case WeightFormat::int8_channel: {
          float scale;
          std::memcpy(&scale, &p.scales[size_t(4 * r)], 4);
          v = float(int8_t(p.q[size_t(i)])) * scale;
          break;
        }
        case WeightFormat::mxfp4: {
          const unsigned code = get_nibble(p.q, i);
          const float magnitude = std::ldexp(kE2m1[code & 7], int(p.scales[size_t(group)]) - 127);
          v = code & 8 ? -magnitude : magnitude;
          break;
        }
        default: {
          const float zero =
              p.format == WeightFormat::int4_g128_zp ? float(p.zeros[size_t(group)]) : 8.0f;
          v = (float(get_nibble(p.q, i)) - zero) * bf16_to_float(get_bf16(p.scales, group));
        }
      }
      out[size_t(i)] = v;
    }
  return out;
}

PackedWeight import_gptq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales,
                         int64_t n, int64_t k, int64_t group_size) {
  PackedWeight p = empty_zero_point_weight(n, k, group_size, "GPTQ packs 8 zeros an int32");
  const int64_t groups = k / group_size;
  for (int64_t c = 0; c < k; ++c)
    for (int64_t r = 0; r < n; ++r) {
      const uint32_t word = uint32_t(qweight[(c / 8) * n + r]);
      set_nibble(p.q, r * k + c, (word >> (4 * (c % 8))) & 0xf);
    }
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int64_t r = 0; r < n; ++r) {
      const uint32_t word = uint32_t(qzeros[gi * (n / 8) + r / 8]);
      // Format v1 stores zero - 1 (AutoGPTQ); 15 + 1 wraps as the original does.
      p.zeros[size_t(r * groups + gi)] = uint8_t((((word >> (4 * (r % 8))) & 0xf) + 1) & 0xf);
      put_bf16(p.scales, r * groups + gi, float_to_bf16(fp16_to_float(scales[gi * n + r])));
    }
  return p;
}

PackedWeight import_awq(const int32_t* qweight, const int32_t* qzeros, const uint16_t* scales,
                        int64_t n, int64_t k, int64_t group_size) {
  PackedWeight p = empty_zero_point_weight(n, k, group_size, "AWQ packs 8 columns an int32");
  // Column 8c + kOrder[j] sits in bits 4j (AutoAWQ's pack order).
  constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const int64_t groups = k / group_size;
  for (int64_t c = 0; c < k; ++c)
    for (int64_t word_col = 0; word_col < n / 8; ++word_col) {
      const uint32_t word = uint32_t(qweight[c * (n / 8) + word_col]);
      for (int j = 0; j < 8; ++j)
        set_nibble(p.q, (8 * word_col + kOrder[j]) * k + c, (word >> (4 * j)) & 0xf);
    }
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t word_col = 0; word_col < n / 8; ++word_col) {
      const uint32_t word = uint32_t(qzeros[gi * (n / 8) + word_col]);
      for (int j = 0; j < 8; ++j)
        p.zeros[size_t((8 * word_col + kOrder[j]) * groups + gi)] = uint8_t((word >> (4 * j)) & 0xf);
    }
    for (int64_t r = 0; r < n; ++r)
      put_bf16(p.scales, r * groups + gi, float_to_bf16(fp16_to_float(scales[gi * n + r])));
  }
  return p;
}

PackedWeight import_mxfp4(const uint8_t* blocks, const uint8_t* scales, int64_t n, int64_t k) {
  check_shape(n, k, WeightFormat::mxfp4);
  PackedWeight p;
  p.format = WeightFormat::mxfp4;
  p.n = n;
  p.k = k;
  // gpt-oss's [N, K/32, 16] bytes are K-contiguous rows, two values a byte, the low nibble
  // first: rearranged into the runs of 8 above.
  p.q.assign(size_t(n * k / 2), 0);
  for (int64_t i = 0; i < n * k; ++i)
    set_nibble(p.q, i, (blocks[i / 2] >> (4 * (i % 2))) & 0xf);
  p.scales.assign(scales, scales + n * (k / kMxGroup));
  for (uint8_t s : p.scales)
    if (s == 0xff)
      throw InvalidArgument("scales", "0xff", "an e8m0 scale of 0xff is NaN: not a weight");
  return p;
}

}  // namespace autogemm
