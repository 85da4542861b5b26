// Rows TMA cannot describe, served by our kernels (skipped without a Hopper GPU): D's and C's
// row strides that are not a multiple of 16 bytes are written and read by the threads, A's and
// B's are copied into padded rows first (plan/operand_copy.hpp), with every element of D
// checked against the float64 reference and the guard columns and rows around it untouched.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <iterator>
#include <optional>
#include <string>
#include <tuple>

#include "autogemm/plan.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using autogemm::testing::run_and_check;

namespace {

GemmProblem problem(int64_t m, int64_t n, int64_t k, Layout layout, int64_t ldd,
                    DType out = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = DType::bf16;
  p.d_type = out;
  p.layout = layout;
  p.ldd = ldd;
  return p;
}

struct Case {
  int64_t m, n, k, ldd;
  Layout layout;
  DType out;
  float beta;
  std::optional<GemmConfig> config;
};

// Runs every case through gemm() and checks it against the float64 reference (every element,
// guards untouched), on our kernels, the reason naming `path` (the decode family's always
// stores by element and says nothing of it).
void expect_ours(const Case* begin, const Case* end, const char* path, uint64_t seed) {
  for (const Case* c = begin; c != end; ++c) {
    const std::string label =
        fmt::format("{}x{}x{} {} ldd {} {} beta {}{}", c->m, c->n, c->k, to_string(c->layout),
                    c->ldd, to_string(c->out), c->beta,
                    c->config ? " " + c->config->describe() : "");
    const auto check = run_and_check(problem(c->m, c->n, c->k, c->layout, c->ldd, c->out), 1.0f,
                                     c->beta, seed + c->m, c->config);
    EXPECT_FALSE(check.used_vendor) << label << ": " << check.reason;
    if (check.config.rfind("mma", 0) != 0)
      EXPECT_NE(check.reason.find(path), std::string::npos) << label << ": " << check.reason;
    AUTOGEMM_EXPECT_GEMM_OK(check, label);
  }
}

}  // namespace

// ldd odd (every other row starts 2 bytes off a 4-byte boundary) or 2 mod 8 elements, N whole
// or ragged, beta reading a packed C whose rows are unaligned too, an fp32 D, split-K, the
// decode family (M <= 16) and a forced configuration: none runs cuBLASLt.
TEST(UnalignedGpu, DAndCRowsTmaCannotStoreAreWrittenByTheThreads) {
  AUTOGEMM_REQUIRE_GPU();
  const Case cases[] = {
      {300, 2731, 512, 2733, Layout::nt, DType::bf16, 0.0f, std::nullopt},
      {1531, 2048, 2048, 2051, Layout::nt, DType::bf16, 0.0f, std::nullopt},
      {136, 100, 1024, 101, Layout::nt, DType::bf16, 0.5f, std::nullopt},
      {136, 104, 1024, 105, Layout::tn, DType::bf16, 0.0f, std::nullopt},
      {1000, 776, 776, 778, Layout::nn, DType::fp16, 0.0f, std::nullopt},
      {257, 333, 520, 335, Layout::nt, DType::fp32, 0.5f, std::nullopt},
      {64, 2112, 7168, 2113, Layout::nt, DType::bf16, 0.0f, GemmConfig::parse("64x32x128 s8 c1 p g8 sk2")},
      {5, 4099, 4096, 4101, Layout::nt, DType::bf16, 0.0f, std::nullopt},
      {200, 1003, 512, 1005, Layout::nt, DType::bf16, 0.0f, GemmConfig::parse("128x128x64 s4 c2 p g8 cl2x1/b")},
      // Staged stores across tile widths: 16-byte staging spans (208, 48 and 16 columns), a
      // last column of tiles narrower than a row's head (N = 21 in 16-column tiles), fp16 and
      // fp32 with C, K = 23 (A and B copied too).
      {2545, 5953, 23, 5953, Layout::nt, DType::bf16, 0.0f, GemmConfig::parse("128x256x64 s2 c2 p g8")},
      {333, 1001, 64, 1001, Layout::nt, DType::fp16, 0.5f, GemmConfig::parse("64x208x64 s4 c1 p g8")},
      {129, 999, 128, 1003, Layout::nt, DType::fp32, 0.5f, GemmConfig::parse("128x48x64 s4 c2 p g8")},
      {70, 21, 200, 21, Layout::nt, DType::bf16, 0.5f, GemmConfig::parse("64x16x64 s4 c1 p g8")},
  };
  expect_ours(std::begin(cases), std::end(cases), "D staged and stored by the threads", 2731);
}

// A's or B's rows not 16-byte aligned (K odd with K-major operands, M or N odd with MN-major
// ones): copied into padded rows, then our kernel, where the planner predicts that faster than
// cuBLASLt's kernels for unaligned rows; forced configurations (split-K, a cluster) too.
TEST(UnalignedGpu, AAndBRowsTmaCannotLoadAreCopiedFirst) {
  AUTOGEMM_REQUIRE_GPU();
  const Case cases[] = {
      {2049, 2049, 2049, 2049, Layout::nt, DType::bf16, 0.0f, std::nullopt},
      {1000, 1000, 999, 1000, Layout::nt, DType::bf16, 0.5f, std::nullopt},
      {1300, 1777, 1001, 1780, Layout::tn, DType::fp16, 0.0f, std::nullopt},
      {1201, 1000, 1024, 1000, Layout::tt, DType::fp32, 0.0f, std::nullopt},
      {777, 1203, 1024, 1208, Layout::nn, DType::bf16, 0.0f, std::nullopt},
      {128, 14336, 4097, 14336, Layout::nt, DType::bf16, 0.0f, std::nullopt},
      {1000, 1000, 999, 1000, Layout::nt, DType::bf16, 0.0f, GemmConfig::parse("128x128x64 s4 c2 p g8 sk2")},
      {512, 1000, 1001, 1000, Layout::nt, DType::bf16, 0.0f, GemmConfig::parse("128x128x64 s4 c2 p g8 cl2x1/b")},
  };
  expect_ours(std::begin(cases), std::end(cases), "copied into rows of", 4097);
}

// Where the planner prefers cuBLASLt's kernels to the copies (small problems, one row), a
// caller who forbids cuBLASLt gets our kernel on the copied rows instead of an error.
TEST(UnalignedGpu, ForbiddenVendorRunsOurKernelOnCopiedRows) {
  AUTOGEMM_REQUIRE_GPU();
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 128, 1001}, {1, 4096, 4097},
                         {77, 130, 100}}) {
    const std::string label = fmt::format("{}x{}x{}", m, n, k);
    const GemmProblem p = problem(m, n, k, Layout::nt, 0);
    std::string why;
    ASSERT_TRUE(plan_gemm(p, *autogemm::testing::sm90_gpu(&why)).spec.vendor)
        << label << ": the planner's choice is cuBLASLt here";
    const auto check = autogemm::testing::run_call_and_check(
        p, 1.0f, 0.0f, 77 + m, false, nullptr,
        [](const GemmProblem& q, const GemmOperands& o, cudaStream_t s) {
          GemmOptions options;
          options.allow_vendor_fallback = false;
          return gemm(q, o, s, options);
        });
    EXPECT_FALSE(check.used_vendor) << label << ": " << check.reason;
    EXPECT_NE(check.reason.find("options.allow_vendor_fallback = false"), std::string::npos)
        << label << ": " << check.reason;
    AUTOGEMM_EXPECT_GEMM_OK(check, label);
  }
}
