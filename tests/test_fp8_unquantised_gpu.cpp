// GPU tests of the whole FP8 path a user takes from BF16 tensors (skipped without a Hopper
// GPU): quantise A (1 x 128 groups) and B (128 x 128 blocks) with autogemm's own
// quantize_fp8_* functions, run autogemm::gemm() block-scaled e4m3 -> bf16, and compare D with
// the float64 GEMM of the *unquantised* BF16 inputs: diff < 1e-3, DeepGEMM's threshold for
// its FP8 GEMM tests. (test_fp8_gemm_gpu.cpp checks the kernel alone against the dequantised
// inputs, at 1e-5.)
//
// Why 1e-3 holds with room: e4m3 keeps 3 mantissa bits, so rounding x to the nearest e4m3 is
// off by a relative error whose mean square is 1/1536 over a binade; a product of two rounded
// values is off by about twice that (1/768), and so is a sum of such products with random
// signs. diff = sum (x - y)^2 / sum (x^2 + y^2) is then about 1/1536 = 6.5e-4 on average over
// many products. It is a statistic: one product alone can be off by 2^-3 (diff 8e-3), so every
// case keeps many products in the elements that dominate the sums.
//
// The inputs vary over seven decades: each row of A and each 128 x 128 block of B is
// multiplied by its own factor, log-uniform in [1e-4, 1e3]. The quantiser's groups align with
// those factors, so its scales carry them; a scale read from the wrong row, column block or
// k-block moves the result by orders of magnitude instead of hiding under the 1e-3.
//
// Rows of FP8 data must be a multiple of 16 bytes apart for TMA (tma_incompatibility()), so
// for K not a multiple of 16 the quantised rows are copied into rows padded to 16 bytes
// (lda, ldb), the padding filled with e4m3 NaN: a kernel reading past K turns D into NaN.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/suite.hpp"
#include "bench/tensors.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;
using autogemm::testing::round_up_to;

namespace {

constexpr double kMinFactor = 1e-4, kMaxFactor = 1e3;  // the dynamic range
constexpr double kMaxDiff = 1e-3;                      // DeepGEMM's threshold
// cuTensorMapEncodeTiled: global strides must be multiples of 16 bytes (one e4m3 = 1 byte).
constexpr int64_t kTmaRowAlignment = 16;

struct UnquantisedCase {
  int64_t m, n, k;
  const char* config = nullptr;   // forced configuration (GemmConfig::parse), else the planner's
  // The quantiser's packed rows handed to gemm() as they are (K not a multiple of 16: the
  // library copies them into padded rows itself), instead of the test's NaN-padded copies.
  bool packed_rows = false;
};

struct UnquantisedCheck {
  double diff = 0;           // against the float64 GEMM of the bf16 inputs
  int64_t unwritten = 0;     // non-finite (still poisoned, or NaN from the padding) in M x N
  bool used_vendor = false;
  std::string config, reason;
};

std::string describe(const UnquantisedCase& c) {
  return fmt::format("{}x{}x{} [{}]{}", c.m, c.n, c.k, c.config ? c.config : "planner",
                     c.packed_rows ? " packed rows" : "");
}

std::vector<double> log_uniform_factors(std::size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> exponent(std::log(kMinFactor), std::log(kMaxFactor));
  std::vector<double> factors(count);
  for (double& f : factors) f = std::exp(exponent(rng));
  return factors;
}

// rows x cols values uniform in [-1, 1), row r multiplied by the factor of its group:
// group_rows = 1 (A: one factor per row) or 128 (B: one per 128 x 128 block).
void upload_bf16_with_factors(void* device_ptr, int64_t rows, int64_t cols, int64_t group_rows,
                              int64_t group_cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t groups_per_row = round_up_to(cols, group_cols) / group_cols;
  const std::vector<double> factors = log_uniform_factors(
      std::size_t(round_up_to(rows, group_rows) / group_rows * groups_per_row), rng);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::vector<double> values(std::size_t(rows * cols));
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col)
      values[std::size_t(row * cols + col)] =
          unit(rng) * factors[std::size_t((row / group_rows) * groups_per_row + col / group_cols)];
  bench::upload_from_double(device_ptr, values, DType::bf16);
}

// The quantiser writes packed rows; TMA needs 16-byte row strides. Returns the leading
// dimension the GEMM reads `fp8` with: cols when already aligned, else rows copied into
// `padded` (allocated here) whose padding holds e4m3 NaN.
int64_t align_fp8_rows(const bench::DeviceBuffer& fp8, int64_t rows, int64_t cols,
                       bench::DeviceBuffer& padded) {
  const int64_t ld = round_up_to(cols, kTmaRowAlignment);
  if (ld == cols) return cols;
  padded = bench::DeviceBuffer(std::size_t(rows * ld));
  bench::fill_poison(padded.get(), std::size_t(rows * ld), DType::e4m3);
  cuda_check(cudaMemcpy2D(padded.get(), std::size_t(ld), fp8.get(), std::size_t(cols),
                          std::size_t(cols), std::size_t(rows), cudaMemcpyDeviceToDevice),
             "cudaMemcpy2D(FP8 rows into 16-byte-aligned rows)");
  return ld;
}

UnquantisedCheck run_unquantised(const UnquantisedCase& c, uint64_t seed) {
  const int64_t m = c.m, n = c.n, k = c.k;

  // 1. BF16 inputs, K contiguous: A is M x K, B is N x K.
  const int bf16_bytes = dtype_bytes(DType::bf16);
  bench::DeviceBuffer a_bf16(std::size_t(m * k) * bf16_bytes), b_bf16(std::size_t(n * k) * bf16_bytes);
  upload_bf16_with_factors(a_bf16.get(), m, k, 1, kFp8ScaleGroup, seed);
  upload_bf16_with_factors(b_bf16.get(), n, k, kFp8ScaleGroup, kFp8ScaleGroup, seed + 1);

  // 2. The library's quantisation, natural layouts (quantize.hpp).
  bench::DeviceBuffer a_fp8(std::size_t(m * k)), b_fp8(std::size_t(n * k));
  bench::DeviceBuffer a_scales(std::size_t(fp8_scale_count_1x128(m, k)) * sizeof(float));
  bench::DeviceBuffer b_scales(std::size_t(fp8_scale_count_128x128(n, k)) * sizeof(float));
  quantize_fp8_1x128(a_bf16.get(), DType::bf16, m, k, k, a_fp8.get(),
                     static_cast<float*>(a_scales.get()));
  quantize_fp8_128x128(b_bf16.get(), DType::bf16, n, k, k, b_fp8.get(),
                       static_cast<float*>(b_scales.get()));
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after quantisation");
  bench::DeviceBuffer a_padded, b_padded;
  const int64_t lda = c.packed_rows ? k : align_fp8_rows(a_fp8, m, k, a_padded);
  const int64_t ldb = c.packed_rows ? k : align_fp8_rows(b_fp8, n, k, b_padded);

  // 3. The block-scaled FP8 GEMM into a poisoned D (rows padded to 16 bytes for TMA stores).
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = DType::e4m3;
  p.d_type = DType::bf16;
  p.layout = Layout::nt;
  p.scaling = Scaling::block_1x128_128x128;
  p.lda = lda;
  p.ldb = ldb;
  p.ldd = round_up_to(n, 8);
  const std::size_t d_elems = std::size_t(m * p.ldd);
  bench::DeviceBuffer d(d_elems * bf16_bytes);
  bench::fill_poison(d.get(), d_elems, DType::bf16);
  GemmOperands ops;
  ops.a = a_padded.get() ? a_padded.get() : a_fp8.get();
  ops.b = b_padded.get() ? b_padded.get() : b_fp8.get();
  ops.d = d.get();
  ops.scale_a = static_cast<const float*>(a_scales.get());
  ops.scale_b = static_cast<const float*>(b_scales.get());
  GemmOptions options;
  // Left allowed so that a problem our kernel cannot serve still runs and the test names the
  // reason (used_vendor) instead of stopping at an exception.
  options.allow_vendor_fallback = true;
  if (c.config) options.config = GemmConfig::parse(c.config);
  const GemmReport report = gemm(p, ops, nullptr, options);

  // 4. The float64 GEMM of the unquantised bf16 inputs.
  GemmProblem ref_problem;
  ref_problem.m = m;
  ref_problem.n = n;
  ref_problem.k = k;
  ref_problem.a_type = ref_problem.b_type = ref_problem.d_type = DType::bf16;
  ref_problem.layout = Layout::nt;
  GemmOperands ref_ops;
  ref_ops.a = a_bf16.get();
  ref_ops.b = b_bf16.get();
  bench::DeviceBuffer ref(std::size_t(m * n) * sizeof(double));
  bench::reference_gemm(ref_problem, ref_ops, static_cast<double*>(ref.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the FP8 gemm and reference");

  UnquantisedCheck out;
  out.used_vendor = report.used_vendor;
  out.config = report.config.describe();
  out.reason = report.reason;
  const std::vector<double> got = bench::download_as_double(d.get(), d_elems, DType::bf16);
  std::vector<double> want(std::size_t(m * n));
  cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  std::vector<double> inside(want.size());
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) {
      const double v = got[std::size_t(row * p.ldd + col)];
      if (!std::isfinite(v)) ++out.unwritten;
      inside[std::size_t(row * n + col)] = v;
    }
  out.diff = bench::gemm_diff(inside, want);
  return out;
}

void run_cases(const std::vector<UnquantisedCase>& cases, uint64_t seed) {
  for (const UnquantisedCase& c : cases) {
    SCOPED_TRACE(describe(c));
    const UnquantisedCheck check = run_unquantised(c, seed++);
    const std::string label = describe(c) + " ran " + check.config;
    EXPECT_FALSE(check.used_vendor) << label << ": " << check.reason;
    EXPECT_EQ(check.unwritten, 0) << label;
    EXPECT_LT(check.diff, kMaxDiff) << label;
  }
}

std::vector<bench::BenchCase> public_suite() {
  return bench::load_suite(std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-public.csv");
}

bool is_prime(int64_t v) {
  if (v < 2) return false;
  for (int64_t d = 2; d * d <= v; ++d)
    if (v % d == 0) return false;
  return true;
}

}  // namespace

// Every decode shape of the public suite (M = 64 and 128).
TEST(Fp8UnquantisedGpu, PublicSuiteDecodeShapes) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases;
  for (const auto& s : public_suite())
    if (s.m <= 128) cases.push_back({s.m, s.n, s.k});
  ASSERT_EQ(cases.size(), 12u) << "the public suite's M <= 128 shapes";
  run_cases(cases, 100);
}

// Two prefill shapes of the public suite (M = 4096). The float64 reference runs one thread per
// output (about 60 G float64 fused multiply-adds each here: several seconds on an H100), so only two.
TEST(Fp8UnquantisedGpu, PublicSuitePrefillShapes) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases;
  for (const auto& s : public_suite())
    if (s.m == 4096 && ((s.n == 2112 && s.k == 7168) || (s.n == 7168 && s.k == 2048)))
      cases.push_back({s.m, s.n, s.k});
  ASSERT_EQ(cases.size(), 2u) << "4096x2112x7168 and 4096x7168x2048 from the public suite";
  run_cases(cases, 200);
}

// M, N and K drawn in 1..3000 (fixed seed), every other dimension moved to the next prime:
// tails in every direction, K rows not 16-byte aligned (padded, see above).
TEST(Fp8UnquantisedGpu, RandomShapesWithTails) {
  AUTOGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(20261122);
  std::uniform_int_distribution<int64_t> size(1, 3000);
  std::vector<UnquantisedCase> cases;
  for (int i = 0; i < 8; ++i) {
    int64_t dims[3];
    for (int d = 0; d < 3; ++d) {
      dims[d] = size(rng);
      if ((i + d) % 2 == 0)
        while (!is_prime(dims[d])) ++dims[d];
    }
    cases.push_back({dims[0], dims[1], dims[2]});
  }
  run_cases(cases, 300);
}

// Decode with a single token: one row of A, one 1 x 128 scale per k-block.
TEST(Fp8UnquantisedGpu, SingleRow) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{1, 2112, 7168}, {1, 7168, 2048}, {1, 24576, 1536}, {1, 4096, 7168}, {1, 1000, 1040}},
            400);
}

// K not a multiple of 128: the last k-block is partial (TMA zero-fills past K) and its scales
// still apply; 1001 and 4099 are not multiples of 16 either (padded rows).
TEST(Fp8UnquantisedGpu, KNotAMultipleOf128) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{64, 2112, 1040}, {128, 4096, 7232}, {333, 1000, 7232}, {100, 257, 1040},
             {64, 2112, 1001}, {200, 640, 4099}},
            500);
}

// The quantiser's packed rows with K not a multiple of 16 bytes: neither TMA nor block-scaled
// cuBLASLt can read them, so gemm() copies A and B into padded rows for our kernels (the odd
// suite's 1000^3, 5000 x 3000 x 1000 and 2049^3 had no path before), forced and planned.
TEST(Fp8UnquantisedGpu, PackedRowsTmaCannotDescribe) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases = {{1000, 1000, 1000}, {2049, 2049, 2049}, {5, 4099, 4100},
                                        {300, 1000, 1001}, {64, 2112, 7170}};
  cases.push_back({300, 1000, 1001, "128x128x128 s5 c2 p g8 pb2"});
  cases.push_back({64, 2112, 7170, "64x64x128 s8 c1 p g8 sk4"});
  for (UnquantisedCase& c : cases) c.packed_rows = true;
  run_cases(cases, 700);
}

// Forced configurations: the two-buffer promotion (pb2) at both consumer counts, tiles
// straddling B's 128-column scale blocks, split-K, and a cluster sharing B (its shapes have an
// even number of 128-row tiles, which a 2 x 1 cluster needs).
TEST(Fp8UnquantisedGpu, ForcedConfigurations) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases;
  for (const char* config :
       {"128x128x128 s5 c2 p g8 pb2", "64x128x128 s8 c1 p g8 pb2",
        "128x128x128 s5 c2 p g8", "128x96x128 s6 c2 p g8",
        "64x64x128 s8 c1 p g8 sk4"}) {
    cases.push_back({300, 1000, 1040, config});
    cases.push_back({64, 2112, 7168, config});
  }
  const char* cluster = "128x128x128 s5 c2 p g8 cl2x1/b";
  cases.push_back({256, 1000, 1040, cluster});
  cases.push_back({512, 2112, 7168, cluster});
  run_cases(cases, 600);
}

// Stream-K (stk) under block scaling: the promotion per k-block of a run, with two temporaries
// and with ordered issue (256-row tiles), a partial last k-block, and the middle's 64-row tiles.
TEST(Fp8UnquantisedGpu, StreamK) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{4096, 2112, 7168, "256x128x128 s3 c2 p stk oi"},
             {4096, 2112, 7168, "128x128x128 s5 c2 p g8 pb2 stk"},
             {300, 1000, 1040, "128x128x128 s5 c2 p g8 pb2 stk"},
             {164, 6144, 4096, "64x128x128 s8 c1 p g8 pb2 stk"}},
            650);
}

// The decode family (instruction = mma) on block-scaled FP8: forced shapes across its fields
// (A row groups, B rows per CTA, steps of one and two scale blocks, split-K) on rows with tails
// in M, N and K (K = 1040 and 7232: a partial last scale block), and the planner's choice for
// every M of the decode suite.
TEST(Fp8UnquantisedGpu, DecodeFamily) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases;
  for (const char* config : {"mma 8x64x256", "mma 16x32x256 sk4", "mma 32x16x128 sk3",
                             "mma 32x64x128 sk2", "mma 8x16x128 sk8", "mma 8x64x256 s4",
                             "mma 16x16x128 s3 sk4"}) {
    cases.push_back({1, 2112, 7168, config});
    cases.push_back({13, 1000, 1040, config});
    cases.push_back({32, 520, 7232, config});
  }
  for (int64_t m : {1, 2, 4, 8, 12, 16})
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{7168, 2048}, {2112, 7168}})
      cases.push_back({m, n, k});
  run_cases(cases, 700);
}

// Swapped operands (swap_ab) on block-scaled FP8: the kernel's rows are the call's columns,
// scaled per 128 x 128 block of B (64-row tiles at odd tile indices start half-way into a
// block; 256-row tiles span two), and its columns the call's rows, scaled one by one. Tails in
// M (1, 5, 13 of a 16- or 32-column tile), N and K (partial last scale block), split-K, two
// consumers, both promotion forms, a multicast cluster; and the planner's choice at M = 16 to
// 32, where it swaps.
TEST(Fp8UnquantisedGpu, SwappedOperands) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<UnquantisedCase> cases;
  for (const char* config :
       {"64x16x128 s8 c1 p g8 pb2 swap", "64x32x128 s6 c1 p g8 swap",
        "128x32x128 s6 c2 p g8 sk3 swap", "128x32x128 s6 c1 p g8 sk3 pb2 swap", "256x32x128 s4 c2 p g8 swap",
        "128x16x128 s6 c1 p g8 cl2x1/b pb2 swap"}) {
    cases.push_back({13, 1000, 1040, config});
    cases.push_back({32, 2112, 7232, config});
    cases.push_back({5, 520, 2048, config});
  }
  cases.push_back({1, 1000, 1040, "64x8x128 s8 c1 p g8 swap"});
  cases.push_back({20, 1000, 1040, "64x24x128 s8 c1 p g8 swap"});   // an odd count of 8-column groups
  for (int64_t m : {16, 24, 32})
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{7168, 2048}, {4096, 7168}})
      cases.push_back({m, n, k});
  run_cases(cases, 800);
}
