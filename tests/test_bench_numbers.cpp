// Host encoding/decoding of the storage formats the bench writes and reads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/number_formats.hpp"

using namespace autogemm;
using namespace autogemm::bench;

TEST(BenchNumbers, KnownEncodings) {
  EXPECT_EQ(encode_from_double(1.0, DType::bf16), 0x3F80u);
  EXPECT_EQ(encode_from_double(-2.0, DType::bf16), 0xC000u);
  EXPECT_EQ(encode_from_double(1.0, DType::fp16), 0x3C00u);
  EXPECT_EQ(encode_from_double(65504.0, DType::fp16), 0x7BFFu);   // largest finite fp16
  EXPECT_EQ(encode_from_double(0x1.0p-24, DType::fp16), 0x0001u); // smallest subnormal
  EXPECT_EQ(encode_from_double(1.0, DType::e4m3), 0x38u);          // 0.0111.000
  EXPECT_EQ(encode_from_double(448.0, DType::e4m3), 0x7Eu);        // largest finite e4m3
  EXPECT_EQ(encode_from_double(-448.0, DType::e4m3), 0xFEu);
  EXPECT_EQ(encode_from_double(0x1.0p-9, DType::e4m3), 0x01u);     // smallest subnormal
  EXPECT_EQ(encode_from_double(1.0, DType::e5m2), 0x3Cu);
  EXPECT_EQ(encode_from_double(-0.0, DType::fp16), 0x8000u);
}

TEST(BenchNumbers, RoundsToNearestEven) {
  // bf16 has 7 mantissa bits: ulp(1) = 2^-7.
  EXPECT_EQ(encode_from_double(1.0 + 0x1.0p-8, DType::bf16), 0x3F80u);        // tie -> even (1.0)
  EXPECT_EQ(encode_from_double(1.0 + 3 * 0x1.0p-8, DType::bf16), 0x3F82u);    // tie -> even (1+2^-6)
  EXPECT_EQ(encode_from_double(1.0 + 0x1.0p-8 + 0x1.0p-20, DType::bf16), 0x3F81u);  // above tie
  // e4m3 around 1: ulp = 1/8; 1 + 1/16 is a tie -> 1.0, 1 + 3/16 -> 1.25.
  EXPECT_EQ(encode_from_double(1.0625, DType::e4m3), 0x38u);
  EXPECT_EQ(encode_from_double(1.1875, DType::e4m3), 0x3Au);
  // A rounding carry into the next binade: just below 2 rounds up to 2.0.
  EXPECT_EQ(encode_from_double(2.0 - 0x1.0p-10, DType::bf16), 0x4000u);
}

TEST(BenchNumbers, OverflowAndNaN) {
  EXPECT_EQ(encode_from_double(65520.0, DType::fp16), 0x7C00u);  // tie at the top -> infinity
  EXPECT_EQ(encode_from_double(1e300, DType::bf16), 0x7F80u);
  EXPECT_EQ(encode_from_double(1000.0, DType::e4m3), 0x7Eu);     // e4m3 saturates
  EXPECT_EQ(encode_from_double(-INFINITY, DType::e4m3), 0xFEu);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(encode_from_double(nan, DType::e4m3) & 0x7Fu, 0x7Fu);
  EXPECT_TRUE(std::isnan(decode_to_double(encode_from_double(nan, DType::fp16), DType::fp16)));
  EXPECT_TRUE(std::isnan(decode_to_double(encode_from_double(nan, DType::bf16), DType::bf16)));
  // The poison patterns fill_poison writes decode as NaN.
  EXPECT_TRUE(std::isnan(decode_to_double(0xFFFFu, DType::bf16)));
  EXPECT_TRUE(std::isnan(decode_to_double(0xFFFFu, DType::fp16)));
  EXPECT_TRUE(std::isnan(decode_to_double(0xFFFFFFFFu, DType::fp32)));
  EXPECT_TRUE(std::isnan(decode_to_double(0xFFu, DType::e4m3)));
  EXPECT_TRUE(std::isnan(decode_to_double(0x7Fu, DType::e4m3)));
  EXPECT_TRUE(std::isinf(decode_to_double(0x7C00u, DType::fp16)));
}

TEST(BenchNumbers, EveryCodeRoundTrips) {
  for (DType t : {DType::bf16, DType::fp16, DType::e4m3, DType::e5m2}) {
    const uint32_t codes = dtype_bytes(t) == 1 ? 256u : 65536u;
    int checked = 0;
    for (uint32_t bits = 0; bits < codes; ++bits) {
      const double v = decode_to_double(bits, t);
      if (std::isnan(v)) continue;
      ASSERT_EQ(encode_from_double(v, t), bits) << to_string(t) << " code " << bits << " = " << v;
      ++checked;
    }
    EXPECT_GT(checked, int(codes) * 9 / 10) << to_string(t);
  }
}

TEST(BenchNumbers, Fp32IsTheIeeeConversion) {
  for (double v : {1.0, -3.25, 1e-40, 3.0e38, 0.1}) {
    const float f = static_cast<float>(v);
    EXPECT_EQ(decode_to_double(encode_from_double(v, DType::fp32), DType::fp32), double(f));
  }
}
