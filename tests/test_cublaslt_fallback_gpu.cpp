// gemm()'s cuBLASLt fallback, and the planner's choice (our kernel where it serves them), on
// exactly the operands that once disagreed with the float64 reference (12-47 of 512 sampled
// entries off): A stored K x M with rows that are not 16-byte
// aligned (tn, tt, M not a multiple of 8), and C packed at ldc = N next to a padded D (nt, tt,
// beta = 0.5); D always has guard rows and padded ldd. Each run is checked against
// bench::reference_gemm (diff, sampled entries, every element written, guards untouched) and,
// entry by entry, against float64 sums recomputed here from the downloaded inputs, for gemm()'s
// D and for the reference's. The host sums say which side is wrong: a mapping error (wrong
// leading dimension, C read as D) moves an entry by about the size of a result, reduced-
// precision partial sums move it by a few bf16 roundings of a partial sum.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using autogemm::testing::GemmCheck;
using autogemm::testing::round_up_to;
using autogemm::testing::stored_a;
using autogemm::testing::stored_b;

namespace {

constexpr int64_t kGuardRows = 2;  // poisoned rows above and below D, as run_and_check has
constexpr int kHostSamples = 512;       // random entries recomputed on the host (plus corners)
constexpr int kReferenceSamples = 512;  // random entries compared with the reference (plus corners)

GemmProblem bf16_problem(int64_t m, int64_t n, int64_t k, Layout layout) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = p.d_type = DType::bf16;
  p.layout = layout;
  return p;
}

// Unit roundoff of a stored type (half an ulp, relative): bf16 keeps 8 significant bits, fp16
// 11, fp32 24.
double unit_roundoff(DType t) {
  return std::ldexp(1.0, t == DType::bf16 ? -8 : t == DType::fp16 ? -11 : -24);
}

struct HostInputs {
  std::vector<double> a, b, c;  // as stored, with their leading dimensions
};

// One entry of D summed on the host, and the sum of its terms' magnitudes (the scale of any
// accumulation error). bf16 x bf16 products are exact in a double (16 significant bits of 53),
// so the sum is off by at most K * 2^-53 of `magnitude`.
struct HostEntry {
  double value = 0;
  double magnitude = 0;
};

HostEntry host_entry(const GemmProblem& p, const HostInputs& in, float alpha, float beta,
                     int64_t row, int64_t col) {
  const int64_t lda = p.lda_or_packed(), ldb = p.ldb_or_packed();
  double sum = 0, magnitude = 0;
  for (int64_t kk = 0; kk < p.k; ++kk) {
    // problem.hpp: A is stored M x K ('n') or K x M ('t'); B is stored N x K ('t') or K x N ('n').
    const double a = a_is_k_major(p.layout) ? in.a[size_t(row * lda + kk)]
                                            : in.a[size_t(kk * lda + row)];
    const double b = b_is_k_major(p.layout) ? in.b[size_t(col * ldb + kk)]
                                            : in.b[size_t(kk * ldb + col)];
    sum += a * b;
    magnitude += std::fabs(a * b);
  }
  HostEntry entry{double(alpha) * sum, std::fabs(double(alpha)) * magnitude};
  if (beta != 0.0f) {
    const double c = in.c[size_t(row * p.ldc_or_packed() + col)];  // C's own ld, never ldd
    entry.value += double(beta) * c;
    entry.magnitude += std::fabs(double(beta) * c);
  }
  return entry;
}

struct HostCheck {
  int64_t entries = 0;
  // gemm()'s D further from the host sum than its output rounding plus 2^-8 of the magnitude.
  int64_t gemm_failures = 0;
  // The reference's float64 D further from it than 2^-40 of the magnitude (its own fma order
  // and rounding stay below K * 2^-53 of it).
  int64_t reference_failures = 0;
  // Largest error of D beyond its own output rounding, over the magnitude: about 1e-8 for FP32
  // accumulation (sqrt(K) * 2^-24 typical), 1e-4 to 4e-4 for these shapes when split-K parts are
  // kept in bf16 (up to 2^-8 of each partial sum; simulated on the host for 2 and 4 splits).
  double worst_excess_error = 0;
  std::string first_gemm_failure, first_reference_failure;
};

struct FallbackRun {
  GemmCheck check;  // against bench::reference_gemm
  HostCheck host;   // against the host sums
};

// Which path the run takes: the planner's choice, or cuBLASLt forced.
enum class Path { planned, vendor };

// Runs gemm() with the vendor fallback allowed on packed A, B and C (so A's and C's rows keep
// whatever alignment M and N give them) and a D with guard rows and padded ldd.
FallbackRun run_fallback(GemmProblem p, float alpha, float beta, uint64_t seed, Path path) {
  p.lda = p.ldb = p.ldc = 0;
  p.ldd = round_up_to(p.n + 16, 8);  // the padding columns act as a guard on the right
  p.reads_c = beta != 0.0f;
  const int64_t lda = p.lda_or_packed(), ldb = p.ldb_or_packed(), ldc = p.ldc_or_packed();
  const size_t a_elems = size_t(stored_a(p).first * lda), b_elems = size_t(stored_b(p).first * ldb);
  const size_t c_elems = size_t(p.m * ldc), d_elems = size_t((p.m + 2 * kGuardRows) * p.ldd);
  const int in_bytes = dtype_bytes(p.a_type), out_bytes = dtype_bytes(p.d_type);

  bench::DeviceBuffer a(a_elems * in_bytes), b(b_elems * in_bytes), c(c_elems * out_bytes);
  bench::DeviceBuffer d(d_elems * out_bytes), ref(size_t(p.m * p.n) * sizeof(double));
  bench::fill_random(a.get(), a_elems, p.a_type, seed);
  bench::fill_random(b.get(), b_elems, p.b_type, seed + 1);
  bench::fill_random(c.get(), c_elems, p.d_type, seed + 2);
  bench::fill_poison(d.get(), d_elems, p.d_type);

  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.c = p.reads_c ? c.get() : nullptr;
  ops.d = static_cast<char*>(d.get()) + size_t(kGuardRows * p.ldd) * out_bytes;
  ops.alpha = alpha;
  ops.beta = beta;
  GemmOptions options;
  options.allow_vendor_fallback = true;  // the path under test
  options.autotune = 0;
  if (path == Path::vendor) options.config = GemmConfig::parse("cuBLASLt");
  const GemmReport report = gemm(p, ops, nullptr, options);
  bench::reference_gemm(p, ops, static_cast<double*>(ref.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after gemm");

  const std::vector<double> got = bench::download_as_double(d.get(), d_elems, p.d_type);
  std::vector<double> want(size_t(p.m * p.n));
  cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  HostInputs inputs{bench::download_as_double(a.get(), a_elems, p.a_type),
                    bench::download_as_double(b.get(), b_elems, p.b_type),
                    bench::download_as_double(c.get(), c_elems, p.d_type)};

  FallbackRun run;
  run.check.used_vendor = report.used_vendor;
  run.check.config = report.config.describe();
  run.check.reason = report.reason;
  // The bounds run_and_check uses: output rounding dominates, FP32 accumulation adds K * 2^-24.
  const double rtol =
      p.d_type == DType::bf16 ? 1.0 / 128 : p.d_type == DType::fp16 ? 1.0 / 1024 : 1e-5;
  const double atol = rtol + 1e-6 * double(p.k);
  const std::vector<double> inside(got.begin() + kGuardRows * p.ldd,
                                   got.begin() + (kGuardRows + p.m) * p.ldd);
  run.check.report = bench::check_result(inside, p.ldd, want, p.m, p.n, atol, rtol,
                                          kReferenceSamples, seed + 3);
  for (int64_t row = 0; row < p.m + 2 * kGuardRows; ++row)
    for (int64_t col = 0; col < p.ldd; ++col) {
      const bool in_d = row >= kGuardRows && row < kGuardRows + p.m && col < p.n;
      if (!in_d && !std::isnan(got[size_t(row * p.ldd + col)])) ++run.check.guard_violations;
    }

  HostCheck& host = run.host;
  auto check_entry = [&](int64_t row, int64_t col) {
    const HostEntry e = host_entry(p, inputs, alpha, beta, row, col);
    const double d_value = got[size_t((kGuardRows + row) * p.ldd + col)];
    const double ref_value = want[size_t(row * p.n + col)];
    const double gemm_error = std::fabs(d_value - e.value);
    const double output_rounding = unit_roundoff(p.d_type) * std::fabs(e.value);
    const double gemm_bound = output_rounding + std::ldexp(e.magnitude, -8);
    ++host.entries;
    if (!(gemm_error <= gemm_bound)) {  // NaN (unwritten) fails too
      if (host.first_gemm_failure.empty())
        host.first_gemm_failure = fmt::format("({}, {}): D {}, host {}, bound {}", row, col,
                                              d_value, e.value, gemm_bound);
      ++host.gemm_failures;
    }
    if (std::isfinite(gemm_error) && e.magnitude > 0)
      host.worst_excess_error =
          std::max(host.worst_excess_error, (gemm_error - output_rounding) / e.magnitude);
    if (!(std::fabs(ref_value - e.value) <= std::ldexp(e.magnitude, -40))) {
      if (host.first_reference_failure.empty())
        host.first_reference_failure =
            fmt::format("({}, {}): reference {}, host {}", row, col, ref_value, e.value);
      ++host.reference_failures;
    }
  };
  for (int64_t row : {int64_t(0), p.m - 1})
    for (int64_t col : {int64_t(0), p.n - 1}) check_entry(row, col);
  std::mt19937_64 rng(seed + 4);
  std::uniform_int_distribution<int64_t> pick_row(0, p.m - 1), pick_col(0, p.n - 1);
  for (int s = 0; s < kHostSamples; ++s) check_entry(pick_row(rng), pick_col(rng));
  return run;
}

void expect_host_sums_agree(const HostCheck& host, const std::string& label) {
  EXPECT_GE(host.entries, kHostSamples) << label;
  EXPECT_EQ(host.reference_failures, 0) << label << ": bench::reference_gemm "
                                        << host.first_reference_failure;
  EXPECT_EQ(host.gemm_failures, 0) << label << ": gemm() " << host.first_gemm_failure;
}

// The numbers a GPU run should leave in its log whether it passes or not: the error beyond
// output rounding tells split-K parts kept in bf16 (1e-4 and more of sum |terms| here) from FP32
// accumulation (about 1e-8).
void print_summary(const FallbackRun& run, const std::string& label) {
  std::printf("[ fallback ] %s: diff %.3g, %lld of %d sampled entries and the corners off "
              "the reference, worst error beyond output rounding %.3g of sum |terms| (%s)\n",
              label.c_str(), run.check.report.diff,
              static_cast<long long>(run.check.report.spot_failures), kReferenceSamples,
              run.host.worst_excess_error, run.check.reason.c_str());
}

}  // namespace

// A stored K x M (tn, tt) with M not a multiple of 8: rows of M bf16 are not 16-byte aligned,
// so TMA cannot describe A. cuBLASLt forced, and the planner's choice: A copied into padded
// rows for our kernel where that is predicted faster (1969 x 664 x 1640), cuBLASLt where the
// copy's launch outweighs its unaligned kernel (77 x 130 x 100) (plan/operand_copy.hpp).
TEST(CublasLtFallbackGpu, MnMajorAWithUnalignedRows) {
  AUTOGEMM_REQUIRE_GPU();
  for (Path path : {Path::vendor, Path::planned})
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1969, 664, 1640}, {77, 130, 100}})
      for (Layout layout : {Layout::tt, Layout::tn}) {
        const std::string label = fmt::format("{}x{}x{} {} {}", m, n, k, to_string(layout),
                                              path == Path::vendor ? "cuBLASLt" : "planned");
        const FallbackRun run =
            run_fallback(bf16_problem(m, n, k, layout), 1.0f, 0.0f, 1969, path);
        print_summary(run, label);
        if (path == Path::vendor) {
          EXPECT_TRUE(run.check.used_vendor) << label << ": " << run.check.reason;
        } else {
          EXPECT_EQ(run.check.used_vendor, m < 100) << label << ": " << run.check.reason;
          EXPECT_NE(run.check.reason.find(fmt::format("lda = {} elements", m)), std::string::npos)
              << label << ": " << run.check.reason;
        }
        AUTOGEMM_EXPECT_GEMM_OK(run.check, label);
        expect_host_sums_agree(run.host, label);
      }
}

// C packed at ldc = N with N * 2 bytes not a multiple of 16 (TMA's stride rule), D padded to
// ldd = N + 16 rounded to 8: C and D have different leading dimensions, beta = 0.5 reads C.
// cuBLASLt forced, and the planner's choice: our kernel, whose threads read C and write D.
TEST(CublasLtFallbackGpu, PackedCNextToPaddedD) {
  AUTOGEMM_REQUIRE_GPU();
  for (Path path : {Path::vendor, Path::planned})
    for (int64_t n : {int64_t(1004), int64_t(130), int64_t(2100)})
      for (Layout layout : {Layout::nt, Layout::tt}) {
        const std::string label = fmt::format("136x{}x1000 {} beta 0.5 {}", n, to_string(layout),
                                              path == Path::vendor ? "cuBLASLt" : "planned");
        const FallbackRun run =
            run_fallback(bf16_problem(136, n, 1000, layout), 1.0f, 0.5f, 41, path);
        print_summary(run, label);
        EXPECT_EQ(run.check.used_vendor, path == Path::vendor) << label << ": " << run.check.reason;
        if (path == Path::planned)
          EXPECT_NE(run.check.reason.find(fmt::format("ldc = {} elements", n)), std::string::npos)
              << label << ": " << run.check.reason;
        AUTOGEMM_EXPECT_GEMM_OK(run.check, label);
        expect_host_sums_agree(run.host, label);
      }
}
