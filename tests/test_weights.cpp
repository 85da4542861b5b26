// Weight-only formats (issue 51, autogemm/weights.hpp): quantising, dequantising, the exact round
// trip, the importers against the checkpoints' own dequantisation formulas, and the checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "autogemm/weights.hpp"
#include "error_test_util.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;

namespace {

std::vector<float> random_weight(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(size_t(n * k));
  for (float& v : w) v = normal(rng);
  return w;
}

// fp16 bits of a value that bf16 holds exactly (8 significant bits, normal range).
uint16_t fp16_of(float v) {
  int e;
  const float m = std::frexp(v, &e);   // v = m 2^e, 0.5 <= |m| < 1
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  const uint16_t mantissa = uint16_t(std::lround((std::abs(m) * 2 - 1) * 1024));
  return uint16_t(sign | ((e - 1 + 15) << 10) | mantissa);
}

}  // namespace

TEST(Weights, NamesAndChecks) {
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp, WeightFormat::mxfp4,
                         WeightFormat::int8_channel})
    EXPECT_EQ(parse_weight_format(to_string(f)), f);
  EXPECT_FALSE(parse_weight_format("int3"));
  const std::vector<float> w(64 * 200, 0.5f);
  EXPECT_NE(expect_invalid([&] { quantize_weight(w.data(), 64, 200, WeightFormat::int4_g128); },
                           "k")
                .find("multiple of 128"),
            std::string::npos);
  expect_invalid([&] { quantize_weight(w.data(), 64, 200, WeightFormat::mxfp4); }, "k");
  quantize_weight(w.data(), 64, 200, WeightFormat::int8_channel);   // any K
  PackedWeight p = quantize_weight(w.data(), 64, 128, WeightFormat::int4_g128_zp);
  p.scales.pop_back();
  EXPECT_NE(expect_invalid([&] { validate(p); }, "scales").find("needs 128 bytes"),
            std::string::npos);
  p = quantize_weight(w.data(), 64, 128, WeightFormat::int4_g128_zp);
  p.zeros.clear();
  expect_invalid([&] { validate(p); }, "zeros");
  p.zeros.assign(64, 8);
  p.q.push_back(0);
  expect_invalid([&] { dequantize_weight(p); }, "q");
}

// Dequantised weights quantise back to the same bytes (int4 symmetric, mxfp4, int8), and lie
// within half a step of the originals.
TEST(Weights, QuantiseRoundTripsExactly) {
  const int64_t n = 48, k = 512;
  const std::vector<float> w = random_weight(n, k, 7);
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::mxfp4, WeightFormat::int8_channel}) {
    SCOPED_TRACE(std::string(to_string(f)));
    const PackedWeight p = quantize_weight(w.data(), n, k, f);
    validate(p);
    const std::vector<float> back = dequantize_weight(p);
    const PackedWeight again = quantize_weight(back.data(), n, k, f);
    EXPECT_EQ(again.q, p.q);
    EXPECT_EQ(again.scales, p.scales);
    double worst = 0, amax = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      worst = std::max(worst, double(std::abs(back[i] - w[i])));
      amax = std::max(amax, double(std::abs(w[i])));
    }
    // Half a step of the coarsest group: int4 amax / 14, mxfp4 a quarter of 2^floor(log2 amax)
    // (e2m1 steps 1 and 2 above 2), int8 amax / 254.
    const double bound = f == WeightFormat::int4_g128 ? amax / 14 * 1.01
                         : f == WeightFormat::mxfp4   ? amax / 2
                                                      : amax / 254 * 1.01;
    EXPECT_LE(worst, bound);
  }
  const PackedWeight zp = quantize_weight(w.data(), n, k, WeightFormat::int4_g128_zp);
  const std::vector<float> back = dequantize_weight(zp);
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t group = int64_t(i) / k * (k / 128) + int64_t(i) % k / 128;
    uint16_t bits = uint16_t(zp.scales[size_t(2 * group)] | (zp.scales[size_t(2 * group + 1)] << 8));
    uint32_t f32 = uint32_t(bits) << 16;
    float scale;
    std::memcpy(&scale, &f32, 4);
    // Half a step, or up to one where the rounded zero point pushes the group's end past 15.
    ASSERT_LE(std::abs(back[i] - w[i]), scale * 1.01f + 1e-9f) << i;
  }
  // An all-zero group stays zero.
  const std::vector<float> zeros(size_t(8 * 128), 0.0f);
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp, WeightFormat::mxfp4,
                         WeightFormat::int8_channel})
    for (float v : dequantize_weight(quantize_weight(zeros.data(), 8, 128, f)))
      ASSERT_EQ(v, 0.0f) << to_string(f);
}

// GPTQ (format v1) and AWQ layouts, written here from their formulas, import to the weights
// their own dequantisation gives, exactly (scales chosen bf16-exact).
TEST(Weights, GptqAndAwqImportsMatchTheirFormulas) {
  const int64_t n = 16, k = 256, groups = k / 128;
  std::mt19937 rng(11);
  std::vector<int> q(size_t(n * k)), zero(size_t(n * groups));
  std::vector<float> scale(size_t(n * groups));
  for (int& v : q) v = int(rng() % 16);
  for (int& v : zero) v = 1 + int(rng() % 15);   // 1..15: GPTQ stores zero - 1
  for (float& v : scale) v = std::ldexp(1.0f + float(rng() % 128) / 128.0f, -int(rng() % 8) - 4);
  std::vector<float> want(size_t(n * k));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c)
      want[size_t(r * k + c)] = scale[size_t(r * groups + c / 128)] *
                                float(q[size_t(r * k + c)] - zero[size_t(r * groups + c / 128)]);
  std::vector<uint16_t> scales_fp16(size_t(groups * n));   // [K/G, N]
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = 0; r < n; ++r) scales_fp16[size_t(g * n + r)] = fp16_of(scale[size_t(r * groups + g)]);

  // GPTQ: qweight [K/8, N], k = 8i + j in bits 4j; qzeros [K/G, N/8] of zero - 1.
  std::vector<int32_t> gptq_w(size_t(k / 8 * n), 0), gptq_z(size_t(groups * n / 8), 0);
  for (int64_t c = 0; c < k; ++c)
    for (int64_t r = 0; r < n; ++r)
      gptq_w[size_t(c / 8 * n + r)] |= int32_t(uint32_t(q[size_t(r * k + c)]) << (4 * (c % 8)));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = 0; r < n; ++r)
      gptq_z[size_t(g * (n / 8) + r / 8)] |=
          int32_t(uint32_t(zero[size_t(r * groups + g)] - 1) << (4 * (r % 8)));
  EXPECT_EQ(dequantize_weight(import_gptq(gptq_w.data(), gptq_z.data(), scales_fp16.data(), n, k)),
            want);

  // AWQ: qweight [K, N/8], column 8c + order[j] in bits 4j; qzeros [K/G, N/8] the same way.
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  std::vector<int32_t> awq_w(size_t(k * n / 8), 0), awq_z(size_t(groups * n / 8), 0);
  for (int64_t c = 0; c < k; ++c)
    for (int64_t wc = 0; wc < n / 8; ++wc)
      for (int j = 0; j < 8; ++j)
        awq_w[size_t(c * (n / 8) + wc)] |=
            int32_t(uint32_t(q[size_t((8 * wc + order[j]) * k + c)]) << (4 * j));
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t wc = 0; wc < n / 8; ++wc)
      for (int j = 0; j < 8; ++j)
        awq_z[size_t(g * (n / 8) + wc)] |=
            int32_t(uint32_t(zero[size_t((8 * wc + order[j]) * groups + g)]) << (4 * j));
  EXPECT_EQ(dequantize_weight(import_awq(awq_w.data(), awq_z.data(), scales_fp16.data(), n, k)),
            want);

  expect_invalid([&] { import_gptq(gptq_w.data(), gptq_z.data(), scales_fp16.data(), n, k, 64); },
                 "group_size");
  expect_invalid([&] { import_awq(awq_w.data(), awq_z.data(), scales_fp16.data(), 12, k); }, "n");
}

TEST(Weights, Mxfp4ImportIsTheMicroscalingFormula) {
  const int64_t n = 4, k = 64;
  std::vector<uint8_t> blocks(size_t(n * k / 2)), scales(size_t(n * k / 32));
  std::mt19937 rng(5);
  for (uint8_t& b : blocks) b = uint8_t(rng());
  for (uint8_t& s : scales) s = uint8_t(120 + rng() % 10);
  const std::vector<float> got = dequantize_weight(import_mxfp4(blocks.data(), scales.data(), n, k));
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int64_t i = 0; i < n * k; ++i) {
    const unsigned code = i % 2 == 0 ? blocks[size_t(i / 2)] & 0xf : blocks[size_t(i / 2)] >> 4;
    const float v = std::ldexp(e2m1[code & 7], int(scales[size_t(i / 32)]) - 127);
    ASSERT_EQ(got[size_t(i)], code & 8 ? -v : v) << i;
  }
  scales[0] = 0xff;
  expect_invalid([&] { import_mxfp4(blocks.data(), scales.data(), n, k); }, "scales");
}

// The 4-bit layout the kernel reads: each run of 8 elements one little-endian word, element
// 2i in bits 4i and 2i + 1 in bits 16 + 4i. With scale 1 (amax 7), q = w + 8.
TEST(Weights, Int4RunsOfEightAreTheKernelsWords) {
  std::vector<float> w(128);
  for (int j = 0; j < 128; ++j) w[size_t(j)] = float(j % 8 - 4);
  w[127] = 7.0f;
  const PackedWeight p = quantize_weight(w.data(), 1, 128, WeightFormat::int4_g128);
  uint32_t word;
  std::memcpy(&word, p.q.data(), 4);   // elements 0..7: q = 4, 5, ..., 11
  EXPECT_EQ(word, 0xB975A864u);
  const std::vector<float> back = dequantize_weight(p);
  EXPECT_EQ(back, w);
}
