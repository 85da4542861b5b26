// FP8 quantisation on the GPU against a host model of the same arithmetic (quantize.hpp's rule),
// bit for bit: every e4m3 byte, every scale, every dequantised value. Odd shapes (partial groups
// at the right and bottom edges, a leading dimension wider than the row), rows of zeros, rows
// spanning 1e-4 to 1e3, and the quantised operands fed to the reference GEMM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/number_formats.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "gpu_test_util.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

constexpr int64_t kGroup = 128;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A rows x cols matrix stored with leading dimension ld, values exactly representable in `type`.
struct HostMatrix {
  int64_t rows = 0, cols = 0, ld = 0;
  DType type = DType::bf16;
  std::vector<double> values;  // rows * ld; the padding holds NaN (must never be read)
  double at(int64_t r, int64_t c) const { return values[std::size_t(r * ld + c)]; }
};

// Uniform in [-1, 1) times 10^e with e uniform in [-4, 3] per row (when `wide`), so row
// magnitudes span 1e-4 .. 1e3; rows listed in `zero_rows` are all zeros.
HostMatrix random_matrix(int64_t rows, int64_t cols, int64_t ld, DType type, uint64_t seed,
                         bool wide, const std::vector<int64_t>& zero_rows = {}) {
  HostMatrix m{rows, cols, ld, type, std::vector<double>(std::size_t(rows * ld), NAN)};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0), exponent(-4.0, 3.0);
  for (int64_t r = 0; r < rows; ++r) {
    const bool zero = std::find(zero_rows.begin(), zero_rows.end(), r) != zero_rows.end();
    const double magnitude = wide ? std::pow(10.0, exponent(rng)) : 1.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double v = zero ? 0.0 : value(rng) * magnitude;
      m.values[std::size_t(r * ld + c)] = decode_to_double(encode_from_double(v, type), type);
    }
  }
  return m;
}

// ---- the host model (quantize.hpp): float arithmetic, IEEE round to nearest even (x86-64 SSE,
// no fast-math), the same operations in the same order as quant/*.cuh ----------------------

struct Quantized {
  std::vector<uint8_t> q;       // rows * cols, packed
  std::vector<float> scales;
};

Quantized model_quantize(const HostMatrix& x, int64_t block_rows) {
  const int64_t col_groups = ceil_div(x.cols, kGroup);
  Quantized out;
  out.q.resize(std::size_t(x.rows * x.cols));
  out.scales.resize(std::size_t(ceil_div(x.rows, block_rows) * col_groups));
  for (int64_t br = 0; br < ceil_div(x.rows, block_rows); ++br)
    for (int64_t bc = 0; bc < col_groups; ++bc) {
      const int64_t r0 = br * block_rows, r1 = std::min(x.rows, r0 + block_rows);
      const int64_t c0 = bc * kGroup, c1 = std::min(x.cols, c0 + kGroup);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(float(x.at(r, c))));
      const float scale = std::max(amax / 448.0f, FLT_MIN);
      const float inverse_scale = 1.0f / scale;
      out.scales[std::size_t(br * col_groups + bc)] = scale;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const float scaled = float(x.at(r, c)) * inverse_scale;
          out.q[std::size_t(r * x.cols + c)] = uint8_t(encode_from_double(scaled, DType::e4m3));
        }
    }
  return out;
}

// y = float(q) * scale rounded to y_type.
double model_dequantize(uint8_t q, float scale, DType y_type) {
  const float product = float(decode_to_double(q, DType::e4m3)) * scale;
  return decode_to_double(encode_from_double(product, y_type), y_type);
}

// ---- device round trip ----------------------------------------------------------------------

struct RoundTrip {
  std::vector<uint8_t> q;
  std::vector<float> scales;
  std::vector<double> y;  // rows * y_ld
  int64_t y_ld = 0;
};

RoundTrip run_device(const HostMatrix& x, int64_t block_rows, DType y_type, int64_t y_ld) {
  const bool by_row = block_rows == 1;
  const int64_t scale_count = by_row ? fp8_scale_count_1x128(x.rows, x.cols)
                                     : fp8_scale_count_128x128(x.rows, x.cols);
  DeviceBuffer x_dev(x.values.size() * std::size_t(dtype_bytes(x.type)));
  DeviceBuffer q_dev(std::size_t(x.rows * x.cols));
  DeviceBuffer s_dev(std::size_t(scale_count) * sizeof(float));
  DeviceBuffer y_dev(std::size_t(x.rows * y_ld) * std::size_t(dtype_bytes(y_type)));
  upload_from_double(x_dev.get(), x.values, x.type);  // NaN padding: a read of it shows
  fill_poison(y_dev.get(), std::size_t(x.rows * y_ld), y_type);
  cuda_check(cudaMemset(q_dev.get(), 0x7F, std::size_t(x.rows * x.cols)), "cudaMemset(q)");  // e4m3 NaN
  auto* scales = static_cast<float*>(s_dev.get());
  if (by_row) {
    quantize_fp8_1x128(x_dev.get(), x.type, x.rows, x.cols, x.ld, q_dev.get(), scales, nullptr);
    dequantize_fp8_1x128(q_dev.get(), scales, x.rows, x.cols, y_dev.get(), y_type, y_ld, nullptr);
  } else {
    quantize_fp8_128x128(x_dev.get(), x.type, x.rows, x.cols, x.ld, q_dev.get(), scales, nullptr);
    dequantize_fp8_128x128(q_dev.get(), scales, x.rows, x.cols, y_dev.get(), y_type, y_ld,
                           nullptr);
  }
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(quantize)");
  RoundTrip out;
  out.q.resize(std::size_t(x.rows * x.cols));
  out.scales.resize(std::size_t(scale_count));
  cuda_check(cudaMemcpy(out.q.data(), q_dev.get(), out.q.size(), cudaMemcpyDeviceToHost),
             "cudaMemcpy(q)");
  cuda_check(cudaMemcpy(out.scales.data(), scales, out.scales.size() * sizeof(float),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy(scales)");
  out.y = download_as_double(y_dev.get(), std::size_t(x.rows * y_ld), y_type);
  out.y_ld = y_ld;
  return out;
}

// Everything against the model; at most a few messages per kind so a broken kernel stays legible.
void check_round_trip(const HostMatrix& x, int64_t block_rows, DType y_type, int64_t y_ld,
                      const std::string& label) {
  const Quantized want = model_quantize(x, block_rows);
  const RoundTrip got = run_device(x, block_rows, y_type, y_ld);
  const int64_t col_groups = ceil_div(x.cols, kGroup);

  int scale_errors = 0;
  for (std::size_t i = 0; i < want.scales.size(); ++i) {
    uint32_t got_bits, want_bits;
    std::memcpy(&got_bits, &got.scales[i], 4);
    std::memcpy(&want_bits, &want.scales[i], 4);
    if (got_bits != want_bits && ++scale_errors <= 3)
      ADD_FAILURE() << label << ": scale (" << int64_t(i) / col_groups << ", "
                    << int64_t(i) % col_groups << "): got " << got.scales[i] << ", want "
                    << want.scales[i];
  }
  EXPECT_EQ(scale_errors, 0) << label;

  int q_errors = 0, y_errors = 0, bound_errors = 0;
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t c = 0; c < x.cols; ++c) {
      const std::size_t i = std::size_t(r * x.cols + c);
      if (got.q[i] != want.q[i] && ++q_errors <= 3)
        ADD_FAILURE() << label << ": q(" << r << ", " << c << ") = 0x" << std::hex
                      << int(got.q[i]) << ", want 0x" << int(want.q[i]) << std::dec
                      << " (x = " << x.at(r, c) << ")";
      const float scale = want.scales[std::size_t((r / block_rows) * col_groups + c / kGroup)];
      const double y = got.y[std::size_t(r * y_ld + c)];
      const double y_want = model_dequantize(want.q[i], scale, y_type);
      if (!(y == y_want) && ++y_errors <= 3)
        ADD_FAILURE() << label << ": y(" << r << ", " << c << ") = " << y << ", want " << y_want;
      // Independent of the model: e4m3 keeps 4 significant bits (half an ulp: 1/16 relative),
      // its smallest subnormal step is 2^-9 (half: 2^-10 of the scale), then one bf16 rounding;
      // 2^-20 relative covers the float reciprocal and products.
      const double bound = std::fabs(x.at(r, c)) * (1.0 / 16 + std::ldexp(1.0, -20)) +
                           std::ldexp(double(scale), -10) +
                           (y_type == DType::bf16 ? std::fabs(y) / 256 : 0.0);
      if (!(std::fabs(y - x.at(r, c)) <= bound) && ++bound_errors <= 3)
        ADD_FAILURE() << label << ": |y - x| at (" << r << ", " << c << "): y = " << y
                      << ", x = " << x.at(r, c) << ", bound " << bound;
    }
  EXPECT_EQ(q_errors, 0) << label;
  EXPECT_EQ(y_errors, 0) << label;
  EXPECT_EQ(bound_errors, 0) << label;
  // Columns past cols in y's rows are never written.
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t c = x.cols; c < y_ld; ++c)
      if (!std::isnan(got.y[std::size_t(r * y_ld + c)])) {
        ADD_FAILURE() << label << ": y padding (" << r << ", " << c << ") was written";
        return;
      }
}

struct Shape {
  int64_t rows, cols;
};
const Shape kOddShapes[] = {{257, 300}, {1, 129}, {130, 7}, {128, 128}, {129, 256}, {3, 1}};

}  // namespace

TEST(QuantizeGpu, Bf16RoundTrip1x128) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 1;
  for (const Shape& s : kOddShapes) {
    const std::string label = "1x128 " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
    check_round_trip(random_matrix(s.rows, s.cols, s.cols, DType::bf16, seed++, true), 1,
                     DType::bf16, s.cols, label);
  }
}

TEST(QuantizeGpu, Bf16RoundTrip128x128) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 100;
  for (const Shape& s : kOddShapes) {
    const std::string label = "128x128 " + std::to_string(s.rows) + " x " + std::to_string(s.cols);
    check_round_trip(random_matrix(s.rows, s.cols, s.cols, DType::bf16, seed++, true), 128,
                     DType::bf16, s.cols, label);
  }
}

TEST(QuantizeGpu, LeadingDimensionsAndFp32) {
  AUTOGEMM_REQUIRE_GPU();
  // x rows padded by 37 elements, y rows by 11; fp32 in and out as well as bf16.
  for (int64_t block_rows : {int64_t(1), int64_t(128)})
    for (DType in : {DType::bf16, DType::fp32})
      for (DType out : {DType::bf16, DType::fp32}) {
        const std::string label = std::string(block_rows == 1 ? "1x128 " : "128x128 ") +
                                  std::string(to_string(in)) + " -> " +
                                  std::string(to_string(out)) + " 200 x 333, ld 370 / 344";
        check_round_trip(random_matrix(200, 333, 370, in, 7 + block_rows, true), block_rows, out,
                         344, label);
      }
}

TEST(QuantizeGpu, ZeroRowsGetTheSmallestNormalScale) {
  AUTOGEMM_REQUIRE_GPU();
  // Rows 0, 5 and the last are zeros: their 1 x 128 groups get scale 2^-126 and q = 0.
  const HostMatrix x = random_matrix(9, 260, 260, DType::bf16, 42, true, {0, 5, 8});
  check_round_trip(x, 1, DType::bf16, 260, "1x128 with zero rows");
  const RoundTrip got = run_device(x, 1, DType::fp32, 260);
  for (int64_t g = 0; g < 3; ++g) {
    EXPECT_EQ(got.scales[std::size_t(0 * 3 + g)], FLT_MIN);
    EXPECT_EQ(got.scales[std::size_t(5 * 3 + g)], FLT_MIN);
    EXPECT_GT(got.scales[std::size_t(1 * 3 + g)], FLT_MIN);
  }
  for (int64_t c = 0; c < 260; ++c) EXPECT_EQ(got.q[std::size_t(5 * 260 + c)], 0) << c;
  // A whole 128 x 128 block of zeros (rows 128..199 are beyond a 128-row block of data).
  const HostMatrix zeros = random_matrix(200, 130, 130, DType::bf16, 43, false,
                                         [] {
                                           std::vector<int64_t> rows;
                                           for (int64_t r = 128; r < 200; ++r) rows.push_back(r);
                                           return rows;
                                         }());
  check_round_trip(zeros, 128, DType::bf16, 130, "128x128 with a zero block");
  const RoundTrip blocks = run_device(zeros, 128, DType::bf16, 130);
  EXPECT_EQ(blocks.scales[2], FLT_MIN);  // block (1, 0)
  EXPECT_EQ(blocks.scales[3], FLT_MIN);  // block (1, 1)
  EXPECT_GT(blocks.scales[0], FLT_MIN);
}

TEST(QuantizeGpu, ScalesFollowTheLargestMagnitude) {
  AUTOGEMM_REQUIRE_GPU();
  // One row of 256: group 0 holds 448 * 2^-3 (an exact scale of 2^-3), group 1 holds 1e3 with
  // the rest tiny; every q of a group's largest element is 448 (0x7E) with its sign.
  HostMatrix x{1, 256, 256, DType::bf16, std::vector<double>(256, 0.0)};
  for (int64_t c = 0; c < 256; ++c) x.values[std::size_t(c)] = c < 128 ? 0.001 * (c + 1) : 1e-4;
  x.values[17] = -56.0;  // 448 / 8
  x.values[200] = 1000.0;
  for (double& v : x.values) v = decode_to_double(encode_from_double(v, DType::bf16), DType::bf16);
  check_round_trip(x, 1, DType::bf16, 256, "1x128 planted maxima");
  const RoundTrip got = run_device(x, 1, DType::bf16, 256);
  EXPECT_EQ(got.scales[0], 0.125f);
  EXPECT_EQ(got.scales[1], 1000.0f / 448.0f);
  EXPECT_EQ(got.q[17], 0xFE);   // -448
  EXPECT_EQ(got.q[200], 0x7E);  // +448
}

TEST(QuantizeGpu, QuantisedOperandsFeedTheGemm) {
  AUTOGEMM_REQUIRE_GPU();
  // BF16 A (M x K) and B (N x K) -> e4m3 + block scales in two calls -> the reference GEMM with
  // block scaling. Against the reference GEMM of the BF16 inputs the difference is quantisation
  // error only: diff < 1e-3 (DeepGEMM's FP8 threshold, the issue's). A scale misplaced between
  // the quantiser and the GEMM's convention gives diff far above it (wide row magnitudes).
  const int64_t m = 200, n = 320, k = 300;  // partial row block, column block and K group
  const HostMatrix a = random_matrix(m, k, k, DType::bf16, 5, true);
  const HostMatrix b = random_matrix(n, k, k, DType::bf16, 6, false);
  DeviceBuffer a_dev(std::size_t(m * k) * 2), b_dev(std::size_t(n * k) * 2);
  upload_from_double(a_dev.get(), a.values, DType::bf16);
  upload_from_double(b_dev.get(), b.values, DType::bf16);
  DeviceBuffer a_q(std::size_t(m * k)), b_q(std::size_t(n * k));
  DeviceBuffer a_s(std::size_t(fp8_scale_count_1x128(m, k)) * 4);
  DeviceBuffer b_s(std::size_t(fp8_scale_count_128x128(n, k)) * 4);
  quantize_fp8_1x128(a_dev.get(), DType::bf16, m, k, k, a_q.get(), static_cast<float*>(a_s.get()));
  quantize_fp8_128x128(b_dev.get(), DType::bf16, n, k, k, b_q.get(), static_cast<float*>(b_s.get()));

  GemmProblem fp8;
  fp8.m = m;
  fp8.n = n;
  fp8.k = k;
  fp8.a_type = fp8.b_type = DType::e4m3;
  fp8.d_type = DType::bf16;
  fp8.scaling = Scaling::block_1x128_128x128;
  GemmOperands fp8_ops;
  fp8_ops.a = a_q.get();
  fp8_ops.b = b_q.get();
  fp8_ops.scale_a = static_cast<const float*>(a_s.get());
  fp8_ops.scale_b = static_cast<const float*>(b_s.get());
  GemmProblem bf16 = fp8;
  bf16.a_type = bf16.b_type = DType::bf16;
  bf16.scaling = Scaling::none;
  GemmOperands bf16_ops;
  bf16_ops.a = a_dev.get();
  bf16_ops.b = b_dev.get();

  DeviceBuffer d_fp8(std::size_t(m * n) * 8), d_bf16(std::size_t(m * n) * 8);
  reference_gemm(fp8, fp8_ops, static_cast<double*>(d_fp8.get()), nullptr);
  reference_gemm(bf16, bf16_ops, static_cast<double*>(d_bf16.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> x(std::size_t(m * n)), y(std::size_t(m * n));
  cuda_check(cudaMemcpy(x.data(), d_fp8.get(), x.size() * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cuda_check(cudaMemcpy(y.data(), d_bf16.get(), y.size() * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const double diff = gemm_diff(x, y);
  EXPECT_LT(diff, 1e-3);
  EXPECT_GT(diff, 0.0);  // quantisation did happen
}

// Weight gradients' operands: x^T quantised along x's rows (the tokens), bit for bit the model of
// x^T's 1 x 128 groups, and x's own 1 x 128 output from the same pass equal to
// quantize_fp8_1x128's; both 16-byte runs (rows a multiple of 16) and bytes (odd rows), partial
// tiles at both edges, rows of zeros.
TEST(QuantizeGpu, TransposedAlongTheTokens) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 40;
  for (const Shape s : {Shape{256, 384}, Shape{4096, 136}, Shape{257, 300}, Shape{130, 7},
                        Shape{16, 1}, Shape{1, 129}})
    for (DType type : {DType::bf16, DType::fp32}) {
      const std::string label = std::to_string(s.rows) + " x " + std::to_string(s.cols) + " " +
                                std::string(to_string(type));
      const HostMatrix x = random_matrix(s.rows, s.cols, s.cols + 3, type, ++seed, true, {0});
      HostMatrix xt{s.cols, s.rows, s.rows, type, std::vector<double>(std::size_t(s.rows * s.cols))};
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t c = 0; c < s.cols; ++c) xt.values[std::size_t(c * s.rows + r)] = x.at(r, c);
      const Quantized want_t = model_quantize(xt, 1);
      const Quantized want = model_quantize(x, 1);

      DeviceBuffer x_dev(x.values.size() * std::size_t(dtype_bytes(type)));
      DeviceBuffer qt_dev(std::size_t(s.rows * s.cols)), st_dev(want_t.scales.size() * 4);
      DeviceBuffer q_dev(std::size_t(s.rows * s.cols)), sc_dev(want.scales.size() * 4);
      upload_from_double(x_dev.get(), x.values, type);
      quantize_fp8_1x128_transposed(x_dev.get(), type, s.rows, s.cols, x.ld, qt_dev.get(),
                                    static_cast<float*>(st_dev.get()), q_dev.get(),
                                    static_cast<float*>(sc_dev.get()), nullptr);
      cuda_check(cudaDeviceSynchronize(), "quantize_fp8_1x128_transposed");
      auto download = [](const DeviceBuffer& b, std::size_t bytes) {
        std::vector<uint8_t> h(bytes);
        cuda_check(cudaMemcpy(h.data(), b.get(), bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
        return h;
      };
      const auto as_bytes = [](const std::vector<float>& v) {
        std::vector<uint8_t> b(v.size() * 4);
        std::memcpy(b.data(), v.data(), b.size());
        return b;
      };
      EXPECT_EQ(download(qt_dev, want_t.q.size()), want_t.q) << label << ": x^T's bytes";
      EXPECT_EQ(download(st_dev, want_t.scales.size() * 4), as_bytes(want_t.scales))
          << label << ": x^T's scales";
      EXPECT_EQ(download(q_dev, want.q.size()), want.q) << label << ": x's bytes";
      EXPECT_EQ(download(sc_dev, want.scales.size() * 4), as_bytes(want.scales))
          << label << ": x's scales";
    }
}

