// Result checking on the host: DeepGEMM's diff measure and check_result's counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "autogemm/errors.hpp"
#include "bench/compare.hpp"
#include "multi/result_match.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

std::vector<double> ramp(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.7 * double(i) + 0.3);
  return v;
}

}  // namespace

TEST(BenchDiff, IdenticalIsZero) {
  const auto x = ramp(1000);
  EXPECT_EQ(gemm_diff(x, x), 0.0);
}

TEST(BenchDiff, ScaledCopyFollowsTheFormula) {
  // y = s x: diff = 1 - 2 s / (1 + s^2), independent of x.
  const auto x = ramp(257);
  for (double s : {2.0, 0.5, 1.01}) {
    std::vector<double> y(x);
    for (double& v : y) v *= s;
    EXPECT_NEAR(gemm_diff(x, y), 1.0 - 2.0 * s / (1.0 + s * s), 1e-14) << "s = " << s;
  }
}

TEST(BenchDiff, SignFlipIsTwoAndOrthogonalIsOne) {
  const auto x = ramp(64);
  std::vector<double> y(x);
  for (double& v : y) v = -v;
  EXPECT_NEAR(gemm_diff(x, y), 2.0, 1e-15);
  EXPECT_NEAR(gemm_diff({1, 0}, {0, 1}), 1.0, 1e-15);
}

TEST(BenchDiff, BothZeroIsZeroOneZeroIsOne) {
  const std::vector<double> zeros(10, 0.0);
  EXPECT_EQ(gemm_diff(zeros, zeros), 0.0);
  EXPECT_EQ(gemm_diff(ramp(10), zeros), 1.0);
}

TEST(BenchDiff, NaNPropagates) {
  auto x = ramp(8), y = ramp(8);
  y[3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(gemm_diff(x, y)));
}

TEST(BenchDiff, SizeMismatchNamesBothSizes) {
  try {
    gemm_diff(ramp(3), ramp(4));
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.value(), "4");
    EXPECT_NE(std::string(e.what()).find("3"), std::string::npos) << e.what();
  }
}

TEST(BenchCheck, CleanResultPasses) {
  const int64_t m = 9, n = 7, ld = 10;
  const auto ref = ramp(std::size_t(m * n));
  std::vector<double> got(std::size_t(m * ld), std::numeric_limits<double>::quiet_NaN());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) got[std::size_t(r * ld + c)] = ref[std::size_t(r * n + c)];
  const CheckReport report = check_result(got, ld, ref, m, n, 1e-12, 1e-12, 100, 1);
  // The NaN padding columns (ld > n) are outside the matrix: not counted.
  EXPECT_EQ(report.unwritten, 0);
  EXPECT_EQ(report.spot_failures, 0);
  EXPECT_EQ(report.diff, 0.0);
  EXPECT_TRUE(report.first_failure.empty());
}

TEST(BenchCheck, NaNIsCountedAsUnwritten) {
  const int64_t m = 5, n = 6;
  const auto ref = ramp(std::size_t(m * n));
  auto got = ref;
  got[7] = std::numeric_limits<double>::quiet_NaN();
  got[20] = std::numeric_limits<double>::infinity();
  const CheckReport report = check_result(got, n, ref, m, n, 1e-9, 1e-9, 0, 1);
  EXPECT_EQ(report.unwritten, 2);
}

TEST(BenchCheck, WrongCornerIsFoundWithoutSamples) {
  const int64_t m = 40, n = 30;
  const auto ref = ramp(std::size_t(m * n));
  auto got = ref;
  got[std::size_t((m - 1) * n + n - 1)] += 0.5;  // bottom-right corner
  const CheckReport report = check_result(got, n, ref, m, n, 1e-6, 1e-6, 0, 1);
  EXPECT_EQ(report.spot_failures, 1);
  EXPECT_NE(report.first_failure.find("(39, 29)"), std::string::npos) << report.first_failure;
  EXPECT_GT(report.diff, 0.0);
}

TEST(BenchCheck, WrongInteriorEntryIsFoundBySampling) {
  // 4 x 5 entries, 400 samples: the seeded sampler visits every entry.
  const int64_t m = 4, n = 5;
  const auto ref = ramp(std::size_t(m * n));
  auto got = ref;
  got[std::size_t(2 * n + 2)] = ref[std::size_t(2 * n + 2)] * 1.1 + 0.1;
  const CheckReport report = check_result(got, n, ref, m, n, 1e-6, 1e-6, 400, 42);
  EXPECT_GT(report.spot_failures, 0);
  EXPECT_NE(report.first_failure.find("(2, 2)"), std::string::npos) << report.first_failure;
}

TEST(BenchCheck, ToleranceIsAbsolutePlusRelative) {
  const std::vector<double> ref = {100.0, 1.0};
  const std::vector<double> got = {100.5, 1.0};  // off by 0.5 = 0.5% of 100
  EXPECT_EQ(check_result(got, 2, ref, 1, 2, 0.0, 1e-2, 0, 1).spot_failures, 0);
  EXPECT_EQ(check_result(got, 2, ref, 1, 2, 0.0, 1e-3, 0, 1).spot_failures, 1);
  EXPECT_EQ(check_result(got, 2, ref, 1, 2, 0.6, 0.0, 0, 1).spot_failures, 0);
}

TEST(BenchCheck, TooShortInputsAreErrors) {
  const std::vector<double> ref(12, 1.0), got(11, 1.0);
  EXPECT_THROW(check_result(got, 4, ref, 3, 4, 0, 0, 0, 1), InvalidArgument);
  EXPECT_THROW(check_result(ref, 3, ref, 3, 4, 0, 0, 0, 1), InvalidArgument);  // ld < n
}

// The multi-GPU check streams bytes through DiffSums over several threads: the same diff as
// gemm_diff on the decoded values, and a poisoned (NaN) element anywhere makes it not finite.
TEST(MultiResultMatch, ThreadedStreamingEqualsGemmDiffAndFindsPoison) {
  const std::size_t n = (std::size_t(1) << 23) + 5;  // several threads' worth, and a ragged end
  std::vector<float> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = float(std::sin(0.7 * double(i) + 0.3));
    y[i] = x[i] * (1.0f + 1e-3f * float((i % 7) - 3));
  }
  auto bytes = [](const std::vector<float>& v) {
    std::vector<unsigned char> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  const multi::ResultMatch m = multi::match_results(bytes(x), bytes(y), DType::fp32);
  const double want = gemm_diff(std::vector<double>(x.begin(), x.end()), std::vector<double>(y.begin(), y.end()));
  EXPECT_FALSE(m.bitwise);
  EXPECT_TRUE(m.finite);
  EXPECT_NEAR(m.diff, want, 1e-12);
  EXPECT_GT(m.diff, 1e-7);
  EXPECT_TRUE(multi::match_results(bytes(x), bytes(x), DType::fp32).bitwise);
  x[n - 1] = std::numeric_limits<float>::quiet_NaN();  // in the last thread's share
  const multi::ResultMatch poisoned = multi::match_results(bytes(x), bytes(y), DType::fp32);
  EXPECT_FALSE(poisoned.finite);
  EXPECT_FALSE(poisoned.ok());
}
