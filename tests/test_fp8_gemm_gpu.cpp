// GPU tests of autogemm::gemm() with our FP8 kernel (block-scaled 1x128 / 128x128, per-tensor
// and rowwise: a scale per row of A and of B; skipped without a Hopper GPU). Each run:
//  - fills A and B with random e4m3 (or e5m2) values and the scales log-uniformly over
//    [1e-4, 1e3], so a scale taken from the wrong row, column block or k-block changes the
//    result by orders of magnitude instead of hiding in the noise;
//  - compares all of D with the float64 reference GEMM of the dequantised inputs
//    (bench::reference_gemm): diff < 1e-5, every element written, guard rows and padding
//    columns untouched;
//  - recomputes sampled entries on the host from the downloaded FP8 bytes and scales (exact in
//    float64) and checks each against a bound made of the output rounding and the FP8 matrix
//    units' accumulation error (relative to the sum of |terms|), on rows and columns chosen to
//    sit on tile and scale-block edges.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "autogemm/gemm.hpp"
#include "bench/compare.hpp"
#include "bench/epilogue_reference.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "gpu_test_util.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;

namespace {

constexpr int64_t kScaleBlock = 128;   // FP8 scale granularity along K (and N for B)
constexpr int64_t kGuardRows = 2;
// The case tables' vocabulary: scaling, D's type and the input type.
constexpr Scaling blk = Scaling::block_1x128_128x128, pt = Scaling::per_tensor,
                  rw = Scaling::rowwise, b1d = Scaling::block_1x128_1x128;
constexpr DType bf16 = DType::bf16, e4 = DType::e4m3;

struct Fp8Case {
  int64_t m, n, k;
  Scaling scaling = Scaling::block_1x128_128x128;
  DType d_type = DType::bf16;
  DType b_type = DType::e4m3;
  float alpha = 1.0f, beta = 0.0f;
  const char* config = nullptr;   // forced configuration (GemmConfig::parse), else the planner's
  double min_scale = 1e-4, max_scale = 1e3;   // scales are log-uniform in [min, max]
  // A fused bias (bf16) and activation: D checked against the float64 reference with the
  // epilogue applied on the host (no spot checks).
  Activation activation = Activation::none;
  bool bias = false;
};

struct Fp8Check {
  double diff = 0;                  // against the float64 reference of the dequantised inputs
  int64_t unwritten = 0;            // non-finite (still poisoned) elements inside M x N
  int64_t guard_violations = 0;     // changed elements outside M x N
  int64_t spot_failures = 0;        // host-recomputed entries outside the bound
  int64_t reference_mismatches = 0; // host recomputation disagreeing with the GPU reference
  int spots = 0;
  std::string first_failure;
  bool used_vendor = false;
  std::string config;
};

std::string describe(const Fp8Case& c) {
  return fmt::format("{}x{}x{} {} e4m3 x {} -> {} alpha {} beta {}{}{} [{}]", c.m, c.n, c.k,
                     to_string(c.scaling), to_string(c.b_type), to_string(c.d_type), c.alpha,
                     c.beta, c.bias ? " bias" : "",
                     c.activation != Activation::none
                         ? " " + std::string(to_string(c.activation))
                         : std::string(),
                     c.config ? c.config : "planner");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Scales spread over seven decades (log-uniform), host-generated and uploaded as fp32.
std::vector<double> upload_log_uniform_scales(void* device_ptr, std::size_t count,
                                              double min_scale, double max_scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(std::log(min_scale), std::log(max_scale));
  std::vector<double> values(count);
  for (double& v : values) v = std::exp(exponent(rng));
  bench::upload_from_double(device_ptr, values, DType::fp32);
  // What the kernel reads: the fp32 roundings.
  return bench::download_as_double(device_ptr, count, DType::fp32);
}

// Relative rounding of one output element.
double output_rounding(DType t) {
  return t == DType::bf16 ? std::ldexp(1.0, -8) : t == DType::fp16 ? std::ldexp(1.0, -11)
                                                                   : std::ldexp(1.0, -22);
}

Fp8Check run_fp8(const Fp8Case& c, uint64_t seed) {
  GemmProblem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.a_type = DType::e4m3;
  p.b_type = c.b_type;
  p.d_type = c.d_type;
  p.layout = Layout::nt;
  p.scaling = c.scaling;
  p.ldd = (p.n + 16 + 7) / 8 * 8;   // padding columns act as a guard on the right
  const int out_bytes = dtype_bytes(p.d_type);
  const int64_t k_blocks = ceil_div(p.k, kScaleBlock), n_blocks = ceil_div(p.n, kScaleBlock);
  const bool block = c.scaling == Scaling::block_1x128_128x128;
  const bool rowwise = c.scaling == Scaling::rowwise;
  const bool column_blocks = c.scaling == Scaling::block_1x128_1x128;   // B: 1x128 too
  p.epilogue.activation = c.activation;
  if (c.bias) p.epilogue.bias = DType::bf16;

  bench::DeviceBuffer a(std::size_t(p.m * p.k)), b(std::size_t(p.n * p.k));
  bench::DeviceBuffer cbuf(std::size_t(p.m * p.n) * out_bytes);
  const std::size_t d_elems = std::size_t((p.m + 2 * kGuardRows) * p.ldd);
  bench::DeviceBuffer d(d_elems * out_bytes), ref(std::size_t(p.m * p.n) * sizeof(double));
  const std::size_t sa_count = block || column_blocks ? std::size_t(p.m * k_blocks)
                               : rowwise              ? std::size_t(p.m)
                                                      : 1;
  const std::size_t sb_count = block           ? std::size_t(n_blocks * k_blocks)
                               : column_blocks ? std::size_t(p.n * k_blocks)
                               : rowwise       ? std::size_t(p.n)
                                               : 1;
  bench::DeviceBuffer scale_a(sa_count * sizeof(float)), scale_b(sb_count * sizeof(float));
  bench::fill_random(a.get(), std::size_t(p.m * p.k), p.a_type, seed);
  bench::fill_random(b.get(), std::size_t(p.n * p.k), p.b_type, seed + 1);
  bench::fill_random(cbuf.get(), std::size_t(p.m * p.n), p.d_type, seed + 2);
  bench::fill_poison(d.get(), d_elems, p.d_type);
  const std::vector<double> sa =
      upload_log_uniform_scales(scale_a.get(), sa_count, c.min_scale, c.max_scale, seed + 3);
  const std::vector<double> sb =
      upload_log_uniform_scales(scale_b.get(), sb_count, c.min_scale, c.max_scale, seed + 4);

  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.c = c.beta != 0.0f ? cbuf.get() : nullptr;
  ops.d = static_cast<char*>(d.get()) + std::size_t(kGuardRows * p.ldd) * out_bytes;
  ops.alpha = c.alpha;
  ops.beta = c.beta;
  ops.scale_a = static_cast<const float*>(scale_a.get());
  ops.scale_b = static_cast<const float*>(scale_b.get());
  bench::DeviceBuffer bias(c.bias ? std::size_t(p.n) * 2 : 0);
  bench::EpilogueVectors vectors;
  if (c.bias) {
    bench::fill_random(bias.get(), std::size_t(p.n), DType::bf16, seed + 6);
    vectors.bias = bench::download_as_double(bias.get(), std::size_t(p.n), DType::bf16);
    ops.bias = bias.get();
  }
  const bool fused = !p.epilogue.empty();
  GemmOptions options;
  options.allow_vendor_fallback = false;   // this tests our kernel: no silent cuBLASLt
  if (c.config) options.config = GemmConfig::parse(c.config);
  const GemmReport report = gemm(p, ops, nullptr, options);
  GemmProblem ref_problem = p;
  ref_problem.reads_c = c.beta != 0.0f;
  ref_problem.ldd = 0;   // the reference writes M x N packed
  GemmOperands ref_ops = ops;
  if (fused) {   // the scaled product alone; the epilogue in float64 on the host below
    ref_problem.epilogue = Epilogue{};
    ref_problem.reads_c = false;
    ref_ops.alpha = 1.0f;
    ref_ops.beta = 0.0f;
    ref_ops.bias = nullptr;
  }
  bench::reference_gemm(ref_problem, ref_ops, static_cast<double*>(ref.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the FP8 gemm");

  Fp8Check out;
  out.used_vendor = report.used_vendor;
  out.config = report.config.describe();
  const std::vector<double> got = bench::download_as_double(d.get(), d_elems, p.d_type);
  std::vector<double> want(std::size_t(p.m * p.n));
  cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  if (fused) {
    const std::vector<double> c_values =
        c.beta != 0.0f ? bench::download_as_double(cbuf.get(), std::size_t(p.m * p.n), p.d_type)
                       : std::vector<double>();
    bench::apply_epilogue_reference(p.epilogue, vectors, p.m, p.n, c.alpha, c.beta, c_values, p.n,
                                    want);
  }
  auto got_at = [&](int64_t row, int64_t col) {
    return got[std::size_t((row + kGuardRows) * p.ldd + col)];
  };

  std::vector<double> inside(want.size());
  for (int64_t row = 0; row < p.m; ++row)
    for (int64_t col = 0; col < p.n; ++col) {
      const double v = got_at(row, col);
      if (!std::isfinite(v)) ++out.unwritten;
      inside[std::size_t(row * p.n + col)] = v;
    }
  out.diff = bench::gemm_diff(inside, want);
  for (int64_t row = 0; row < p.m + 2 * kGuardRows; ++row)
    for (int64_t col = 0; col < p.ldd; ++col) {
      const bool in_d = row >= kGuardRows && row < kGuardRows + p.m && col < p.n;
      if (!in_d && !std::isnan(got[std::size_t(row * p.ldd + col)])) ++out.guard_violations;
    }

  if (fused) {   // the diff against the reference with the epilogue is the check
    out.spots = 1;
    return out;
  }
  // Spots: corners, the rows and columns on each side of tile (64) and scale-block (128)
  // boundaries, and random ones.
  std::set<std::pair<int64_t, int64_t>> spots;
  std::mt19937_64 rng(seed + 5);
  std::uniform_int_distribution<int64_t> any_row(0, p.m - 1), any_col(0, p.n - 1);
  for (int64_t row : {int64_t(0), p.m - 1})
    for (int64_t col : {int64_t(0), p.n - 1}) spots.insert({row, col});
  for (int64_t edge = 64; edge < std::max(p.m, p.n) && edge <= 1024; edge += 64)
    for (int64_t side : {edge - 1, edge}) {
      if (side < p.n) spots.insert({any_row(rng), side});
      if (side < p.m) spots.insert({side, any_col(rng)});
    }
  while (spots.size() < 200 && spots.size() < std::size_t(p.m * p.n))
    spots.insert({any_row(rng), any_col(rng)});
  const std::vector<double> c_host =
      c.beta != 0.0f ? bench::download_as_double(cbuf.get(), std::size_t(p.m * p.n), p.d_type)
                     : std::vector<double>();
  const double rounding = output_rounding(p.d_type);
  // Hopper's FP8 matrix units keep about 14 bits when accumulating (DeepSeek-V3 report); a
  // k-block is 4 wgmmas, promoted into fp32 afterwards: 2^-10 of the sum of |terms| is a wide
  // margin over that, and far below what one wrong scale (another decade) would cost.
  const double accumulation = std::ldexp(1.0, -10);
  for (auto [row, col] : spots) {
    const std::vector<double> a_row =
        bench::download_as_double(static_cast<const char*>(a.get()) + row * p.k, p.k, p.a_type);
    const std::vector<double> b_row =
        bench::download_as_double(static_cast<const char*>(b.get()) + col * p.k, p.k, p.b_type);
    double exact = 0, magnitude = 0;
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const int64_t kb = kk / kScaleBlock;
      const double scale = block ? sa[std::size_t(row * k_blocks + kb)] *
                                       sb[std::size_t((col / kScaleBlock) * k_blocks + kb)]
                           : column_blocks ? sa[std::size_t(row * k_blocks + kb)] *
                                                 sb[std::size_t(col * k_blocks + kb)]
                           : rowwise       ? sa[std::size_t(row)] * sb[std::size_t(col)]
                                           : sa[0] * sb[0];
      const double term = a_row[std::size_t(kk)] * b_row[std::size_t(kk)] * scale;
      exact += term;
      magnitude += std::fabs(term);
    }
    exact *= c.alpha;
    magnitude *= std::fabs(c.alpha);
    if (c.beta != 0.0f) {
      const double beta_c = double(c.beta) * c_host[std::size_t(row * p.n + col)];
      exact += beta_c;
      magnitude += std::fabs(beta_c);
    }
    const double reference = want[std::size_t(row * p.n + col)];
    if (std::fabs(reference - exact) > 1e-9 * magnitude + 1e-300) ++out.reference_mismatches;
    const double g = got_at(row, col);
    const double bound = rounding * std::fabs(exact) + accumulation * magnitude;
    ++out.spots;
    if (!(std::fabs(g - exact) <= bound)) {   // false for NaN
      ++out.spot_failures;
      if (out.first_failure.empty())
        out.first_failure = fmt::format("({}, {}): got {}, want {} (bound {}, sum |terms| {})",
                                        row, col, g, exact, bound, magnitude);
    }
  }
  return out;
}

#define EXPECT_FP8_OK(check, fp8_case)                                                       \
  do {                                                                                       \
    const std::string label_ = describe(fp8_case) + " ran " + (check).config;                \
    EXPECT_FALSE((check).used_vendor) << label_;                                             \
    EXPECT_LT((check).diff, 1e-5) << label_;                                                 \
    EXPECT_EQ((check).unwritten, 0) << label_;                                               \
    EXPECT_EQ((check).guard_violations, 0) << label_;                                        \
    EXPECT_GT((check).spots, 0) << label_;                                                   \
    EXPECT_EQ((check).spot_failures, 0) << label_ << ": " << (check).first_failure;          \
    EXPECT_EQ((check).reference_mismatches, 0) << label_;                                    \
  } while (0)

void run_cases(const std::vector<Fp8Case>& cases, uint64_t seed) {
  for (const Fp8Case& c : cases) {
    SCOPED_TRACE(describe(c));
    const Fp8Check check = run_fp8(c, seed++);
    EXPECT_FP8_OK(check, c);
  }
}

}  // namespace

TEST(Fp8GemmGpu, PublicSuiteShapes) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{64, 2112, 7168},
             {64, 2112, 7168, pt},
             {128, 7168, 2048},
             {64, 32768, 512},
             {512, 2112, 7168},   // the float64 reference is slow: M = 512 gets the big tiles
             {512, 2112, 7168, pt}},
            1000);
}

TEST(Fp8GemmGpu, DecodeSizes) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases;
  for (int64_t m : {1, 16, 64, 128}) cases.push_back({m, 4096, 7168});
  cases.push_back({1, 4096, 7168, Scaling::per_tensor});
  run_cases(cases, 2000);
}

// K not a multiple of 128 (last k-block partly zero-filled by TMA; its scale still applies),
// N and M tails, K = 16 (one partial k-block).
TEST(Fp8GemmGpu, Tails) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{256, 2100, 7232},
             {100, 1000, 1040},
             {77, 130, 16},
             {333, 257, 4112},
             {200, 1000, 1040, Scaling::per_tensor}},
            3000);
}

// Tiles whose columns straddle two 128-column B scale blocks (block_n 96, 160, 48, 80), and
// the widest tiles the planner's register rule allows.
TEST(Fp8GemmGpu, TilesStraddlingBScaleBlocks) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases;
  for (const char* config : {"128x96x128 s6 c2 p g8", "128x160x128 s4 c2 p g8",
                             "64x48x128 s8 c1 p g8", "128x80x128 s4 c1 p g8",
                             "256x80x128 s4 c2 p g8"}) {
    cases.push_back({300, 1000, 1040, Scaling::block_1x128_128x128, DType::bf16, DType::e4m3,
                     1.0f, 0.0f, config});
  }
  cases.push_back({300, 1000, 1040, Scaling::per_tensor, DType::bf16, DType::e4m3, 1.0f, 0.0f,
                   "64x176x128 s4 c1 p g8"});
  run_cases(cases, 4000);
}

// The rest of the family's schedules with FP8: clusters multicasting A or B, split-K, a
// non-persistent grid, per-tensor scaling with four stages.
TEST(Fp8GemmGpu, Schedules) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{512, 1024, 2048, blk, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 cl2x1/b"},
             {128, 2112, 7168, blk, bf16, e4, 1.0f, 0.0f, "64x32x128 s8 c1 p g8 cl1x2/a"},
             {64, 2112, 7168, blk, bf16, e4, 1.0f, 0.0f, "64x64x128 s8 c1 p g8 sk4"},
             {300, 1000, 1040, blk, bf16, e4, 1.0f, 0.0f, "128x112x128 s5 c2 g8"},
             {300, 1000, 1040, Scaling::per_tensor, bf16, e4, 1.0f, 0.0f, "128x64x128 s4 c2 p g8"}},
            5000);
}

// D staged in chunks (dcN) behind the FP8 promotion: fp32 D with C (2 chunks of 2 boxes), bf16
// D in a multicast pair (2 chunks of 1 box), tails in M and N.
TEST(Fp8GemmGpu, DStagedInChunks) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{300, 1000, 1040, blk, DType::fp32, e4, 0.5f, -1.25f, "128x128x128 s5 c2 p g8 dc2"},
             {512, 1000, 2048, blk, bf16, e4, 1.0f, 0.5f, "128x128x128 s5 c2 p g8 cl2x1/b dc1"}},
            5100);
}

// Two promotion temporaries (pb2): the k-loop runs in chunks of 8 k-blocks, then 4, then 1-3,
// so K covers every path (16, 17, 20, 22, 12, 15, 1 and 3 k-blocks), plus split-K ranges, a cluster, per-tensor
// scaling and, per-tensor only, tiles straddling B scale blocks (block scaling rejects that
// pairing: plan/rules.cpp).
TEST(Fp8GemmGpu, OverlappedPromotion) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases;
  for (int64_t k : {2048, 2176, 2560, 2816, 1536, 1920, 112, 272})
    cases.push_back({300, 1000, k, blk, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 pb2"});
  cases.push_back({512, 1024, 2048, blk, bf16, e4, 1.0f, 0.0f,
                   "128x128x128 s5 c2 p g8 cl2x1/b pb2"});
  cases.push_back({77, 1000, 1408, blk, bf16, e4, 1.0f, 0.0f, "64x128x128 s8 c1 p g8 pb2"});
  cases.push_back({77, 1000, 1408, pt, bf16, e4, 1.0f, 0.0f, "64x96x128 s8 c1 p g8 pb2"});
  cases.push_back({64, 2112, 7168, blk, bf16, e4, 1.0f, 0.0f, "64x64x128 s8 c1 p g8 sk4 pb2"});
  cases.push_back({64, 2112, 7040, blk, bf16, e4, 1.0f, 0.0f, "64x32x128 s8 c1 p g8 sk3 pb2"});
  cases.push_back({300, 1000, 1040, pt, bf16, e4, 1.0f, 0.0f, "128x112x128 s5 c2 p g8 pb2"});
  cases.push_back({300, 1000, 1040, blk, DType::fp32, e4, 0.5f, -1.25f,
                   "128x128x128 s4 c2 p g8 pb2"});
  run_cases(cases, 7000);
}

// Ordered issue (oi): the consumers take turns issuing. With one temporary each m64 slab is
// issued, waited for and promoted alone (256-row tiles: two slabs per consumer), with two it
// keeps the pb2 chunks. Tails in M, N and K, M smaller than one tile (one consumer's rows are
// all outside D), several tiles per CTA (the turns carry across tiles), split-K ranges, a
// cluster, per-tensor scaling and tiles straddling B scale blocks.
TEST(Fp8GemmGpu, OrderedIssue) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases;
  for (const char* config : {"256x128x128 s3 c2 p g8 oi",
                             "128x128x128 s5 c2 p g8 oi",
                             "128x192x128 s4 c2 p g8 oi",
                             "128x128x128 s5 c2 p g8 pb2 oi"}) {
    cases.push_back({300, 1000, 1040, blk, bf16, e4, 1.0f, 0.0f, config});
    cases.push_back({1100, 2112, 2192, blk, bf16, e4, 1.0f, 0.0f, config});
    cases.push_back({33, 504, 272, blk, bf16, e4, 1.0f, 0.0f, config});
  }
  cases.push_back({512, 1024, 2048, blk, bf16, e4, 1.0f, 0.0f,
                   "256x128x128 s3 c2 p g8 cl2x1/b oi"});
  // A scales transposed inside the call (M >= 1024, a tile's scale rows >= 32 KB), with tails.
  cases.push_back({1100, 520, 4112, blk, bf16, e4, 1.0f, 0.0f, "256x128x128 s3 c2 p g8 oi"});
  cases.push_back({1100, 520, 8208, blk, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 pb2"});
  cases.push_back({300, 1000, 1040, pt, bf16, e4, 1.0f, 0.0f, "256x112x128 s3 c2 p g8 oi"});
  cases.push_back({300, 1000, 1040, blk, bf16, e4, 1.0f, 0.0f, "256x96x128 s3 c2 p g8 oi"});
  cases.push_back({300, 1000, 1040, blk, DType::fp32, e4, 0.5f, -1.25f,
                   "128x128x128 s4 c2 p g8 oi"});
  cases.push_back({256, 2112, 7168, blk, DType::fp32, e4, 1.0f, 0.0f,
                   "128x128x128 s4 c2 p g8 sk2 oi"});
  run_cases(cases, 7000);
}

// The n-tail kernel (ntk, plan/n_tail.hpp): a narrow second kernel for the last column of
// tiles, with its B scale rows offset by whole 128-column blocks. Two temporaries, ordered
// issue on 256-row tiles with A's scales transposed (M >= 1024, shared by both kernels), fp32
// output with alpha and beta, per-tensor scaling with a 16-column tail, a cluster.
TEST(Fp8GemmGpu, NTailKernel) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{1000, 2112, 1024, blk, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 pb2 ntk"},
             {1100, 2112, 4096, blk, bf16, e4, 1.0f, 0.0f, "256x128x128 s3 c2 p g8 oi ntk"},
             {300, 1056, 1040, blk, DType::fp32, e4, 0.5f, -1.25f, "128x128x128 s4 c2 p g8 ntk"},
             {777, 1040, 2048, pt, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 pb2 ntk"},
             {1024, 2112, 2048, blk, bf16, e4, 1.0f, 0.0f, "128x128x128 s5 c2 p g8 cl2x1/b pb2 ntk"}},
            7600);
}

// fp32 and fp16 outputs, alpha and beta with C, and B in e5m2.
TEST(Fp8GemmGpu, OutputTypesAlphaBetaAndE5m2) {
  AUTOGEMM_REQUIRE_GPU();
  run_cases({{300, 1000, 1040, blk, DType::fp32, DType::e4m3, 0.5f, -1.25f},
             // fp16 overflows at 65504 and is subnormal below 6e-5: scales in [0.03, 1].
             {300, 1000, 1040, pt, DType::fp16, DType::e4m3, 1.0f, 0.0f, nullptr, 0.03, 1.0},
             {300, 1000, 1040, blk, DType::bf16, DType::e4m3, 1.0f, 2.0f},
             {300, 1000, 1040, blk, DType::bf16, DType::e5m2, 1.0f, 0.0f}},
            6000);
}

// Rowwise scaling (a scale per row of A, per token, and per row of B, per output channel): the
// main loop sums unscaled products and the fused epilogue applies both scales. The planner's
// choices from decode to prefill (small M on swapped tiles, where the scales are indexed in the
// kernel's transposed orientation), forced tiles with tails, split K, two temporaries, a
// cluster, the n-tail kernel, fp32 output with alpha and beta, and with a bias and SiLU.
TEST(Fp8GemmGpu, RowwiseScaling) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases = {{1, 4096, 7168, rw},   {16, 2112, 7168, rw},
                                {64, 2112, 7168, rw},  {300, 1000, 1040, rw},
                                {4096, 2112, 1024, rw}, {77, 1000, 1408, rw}};
  for (const char* config :
       {"64x32x128 s8 c1 p g8 swap", "64x16x128 s8 c1 p g8 sk2 swap", "128x64x128 s6 c2 p g8 sk3",
        "64x96x128 s8 c1 p g8 pb2", "128x128x128 s5 c2 p g8 cl2x1/b pb2", "128x128x128 s4 c2 p g8 ntk"})
    cases.push_back({300, 1040, 1408, rw, bf16, e4, 1.0f, 0.0f, config});
  cases.push_back({300, 1000, 1040, rw, DType::fp32, e4, 0.5f, -1.25f});
  cases.push_back({300, 1000, 1040, rw, bf16, DType::e5m2});
  Fp8Case fused{300, 1000, 1040, rw, bf16, e4, 1.0f, 0.0f, nullptr, 0.03, 1.0};
  fused.bias = true;
  fused.activation = Activation::silu;
  cases.push_back(fused);
  fused.m = 13;   // swapped tiles
  cases.push_back(fused);
  run_cases(cases, 7800);
}

// 1x128 scales on both operands (weight gradients, K = the tokens): every column of D takes its
// own scale per k-block. Log-uniform scales over 7 decades make a scale from the wrong column or
// k-block show; fp32 D accumulated (beta 1), bf16 D, tails in M, N and K (K a multiple of 16, a
// partial last scale block), 64- and 128-row tiles, the n-tile widths the planner offers, turns
// (ordered issue, one slab a consumer), and split K (the planner's sk8 at 64 x 512 x 16384, sk2
// at 8 x 7168 x 4096).
TEST(Fp8GemmGpu, ScalesPerColumnAndKBlock) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<Fp8Case> cases = {{300, 1000, 1040, b1d, DType::fp32, e4, 1.0f, 1.0f},
                                {1024, 2048, 4096, b1d, DType::fp32, e4, 1.0f, 1.0f},
                                {200, 136, 144, b1d, bf16, e4},
                                {64, 4096, 512, b1d, DType::fp32, e4, 1.0f, 1.0f},
                                {64, 512, 16384, b1d, DType::fp32, e4, 1.0f, 1.0f},
                                {8, 7168, 4096, b1d, bf16, e4}};
  for (const char* config : {"128x128x128 s4 c2 p g8", "64x96x128 s6 c1 p g8",
                             "128x160x128 s3 c2 p g8", "128x128x128 s4 c2 p g8 cl2x1/b",
                             "128x128x128 s4 c2 p g8 oi", "128x160x128 s3 c2 p g8 cl2x1/b oi"})
    cases.push_back({512, 1000, 1040, b1d, DType::fp32, e4, 1.0f, 1.0f, config});
  run_cases(cases, 9000);
}
