// GPU tests of autogemm::gemm() with our sm90 kernel (skipped without a Hopper GPU): every
// ladder step, both input types, all four layouts, output types, alpha/beta with C, padded
// leading dimensions and random shapes with tails, each checked against a float64 reference.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "ladder/ladder.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_maps.hpp"

using namespace autogemm;
using autogemm::testing::run_and_check;
using autogemm::testing::run_ladder_step_and_check;

static GemmProblem problem(int64_t m, int64_t n, int64_t k, DType in = DType::bf16,
                           Layout layout = Layout::nt, DType out = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = out;
  p.layout = layout;
  return p;
}

TEST(GemmGpu, EveryLadderStepIsCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  // Tails in all three dimensions: 515 = 4*128 + 3, 1000 = 7*128 + 104 (and 3*256 + 232),
  // K = 1000 = 15*64 + 40.
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  for (const auto& step : ladder::ladder_steps()) {
    auto check = run_ladder_step_and_check(problem(515, 1000, 1000), 1.0f, 0.0f,
                                           100 + step.number, step, gpu);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, "ladder step " << step.number << " " << step.name);
  }
}

TEST(GemmGpu, BothInputTypesAllLayoutsAllOutputs) {
  AUTOGEMM_REQUIRE_GPU();
  for (DType in : {DType::bf16, DType::fp16})
    for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt})
      for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {
        // M = 392: A stored K x M (layouts tn, tt) needs 16-byte rows; the M tail is covered above.
        auto check = run_and_check(problem(392, 648, 520, in, layout, out), 1.0f, 0.0f, 7);
        EXPECT_FALSE(check.used_vendor) << to_string(layout);
        AUTOGEMM_EXPECT_GEMM_OK(check, to_string(in) << " " << to_string(layout) << " -> "
                                                     << to_string(out));
      }
}

TEST(GemmGpu, AlphaBetaAndC) {
  AUTOGEMM_REQUIRE_GPU();
  for (Layout layout : {Layout::nt, Layout::tn})
    for (DType out : {DType::bf16, DType::fp32}) {
      auto check = run_and_check(problem(300, 264, 200, DType::bf16, layout, out), 0.75f, -1.5f, 11);
      AUTOGEMM_EXPECT_GEMM_OK(check, "alpha/beta " << to_string(layout) << " " << to_string(out));
    }
  // The same through every ladder step that stores differently (threads vs TMA epilogue).
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  for (const auto& step : ladder::ladder_steps()) {
    if (step.number != 3 && step.number != 10) continue;
    auto check = run_ladder_step_and_check(problem(257, 520, 136), 2.0f, 0.5f, 12, step, gpu);
    AUTOGEMM_EXPECT_GEMM_OK(check, "alpha/beta ladder step " << step.number);
  }
}

TEST(GemmGpu, PaddedLeadingDimensions) {
  AUTOGEMM_REQUIRE_GPU();
  for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt}) {
    auto check = run_and_check(problem(200, 328, 264, DType::bf16, layout), 1.0f, 1.0f, 13,
                               std::nullopt, /*padded_ld=*/true);
    AUTOGEMM_EXPECT_GEMM_OK(check, "padded " << to_string(layout));
  }
}

TEST(GemmGpu, RandomShapesWithTails) {
  AUTOGEMM_REQUIRE_GPU();
  std::mt19937_64 rng(2026);
  const int64_t primes[] = {1, 2, 3, 7, 13, 61, 127, 251, 509, 1021, 2039, 2999};
  for (int i = 0; i < 24; ++i) {
    // M is free (a run-time value of the kernel); N and K multiples of 8 keep the rows 16-byte
    // aligned so our TMA path serves them; the prime cases below go through cuBLASLt.
    int64_t m = i % 3 == 0 ? primes[rng() % 12] : 1 + int64_t(rng() % 3000);
    const int64_t n = 8 * (1 + int64_t(rng() % 375));
    const int64_t k = 8 * (1 + int64_t(rng() % 375));
    const Layout layout = static_cast<Layout>(rng() % 4);
    // A stored K x M (tn, tt) has rows of M elements: keep them 16-byte aligned.
    if (!a_is_k_major(layout)) m = (m + 7) / 8 * 8;
    auto check = run_and_check(problem(m, n, k, DType::bf16, layout), 1.0f, 0.0f, 1000 + i);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, m << "x" << n << "x" << k << " " << to_string(layout));
  }
}

TEST(GemmGpu, PrimeNAndKFallBackToCuBLASLtAndStayCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  for (auto [m, n, k] : {std::tuple{127, 509, 251}, {2999, 61, 1021}, {1, 13, 7}}) {
    auto check = run_and_check(problem(m, n, k), 1.0f, 0.0f, 77);
    EXPECT_TRUE(check.used_vendor) << "rows of " << k << " bf16 are not 16-byte aligned";
    AUTOGEMM_EXPECT_GEMM_OK(check, m << "x" << n << "x" << k);
  }
}

// A configuration of "cuBLASLt" (what `autogemm plan` prints for a vendor plan) runs cuBLASLt.
TEST(GemmGpu, ForcedVendorConfigurationRunsCuBLASLt) {
  AUTOGEMM_REQUIRE_GPU();
  auto check = run_and_check(problem(200, 264, 520), 1.0f, 0.0f, 91, GemmConfig::parse("cuBLASLt"));
  EXPECT_TRUE(check.used_vendor) << check.config << ": " << check.reason;
  AUTOGEMM_EXPECT_GEMM_OK(check, "forced cuBLASLt");
  // Forcing the vendor while forbidding it is a contradiction, refused before anything runs.
  GemmOptions contradiction;
  contradiction.config = GemmConfig::parse("cuBLASLt");
  contradiction.allow_vendor_fallback = false;
  const GemmProblem p = problem(200, 264, 520);
  bench::DeviceBuffer a(size_t(p.m) * p.k * 2), b(size_t(p.n) * p.k * 2), d(size_t(p.m) * p.n * 2);
  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  std::string message;
  try {
    gemm(p, ops, nullptr, contradiction);
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("allow_vendor_fallback = false"), std::string::npos) << message;
}

TEST(GemmGpu, PublicSuiteDecodeShapesAtPlannersChoice) {
  AUTOGEMM_REQUIRE_GPU();
  for (auto [m, n, k] : {std::tuple{64, 2112, 7168}, {128, 4096, 7168}, {1, 7168, 2048}}) {
    auto check = run_and_check(problem(m, n, k), 1.0f, 0.0f, 5);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, m << "x" << n << "x" << k);
  }
}

TEST(GemmGpu, BadArgumentsAreRejectedBeforeAnythingRuns) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = problem(64, 64, 64);
  GemmOperands ops;
  try {
    gemm(p, ops, nullptr);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "a");
  }
  GemmConfig bad;
  bad.block_m = 96;
  ops.a = ops.b = ops.d = reinterpret_cast<void*>(0x1000);
  GemmOptions options;
  options.config = bad;
  EXPECT_THROW(gemm(p, ops, nullptr, options), InvalidArgument);
  // A forced n-tail kernel where N leaves no partial column of tiles (64 of 64): refused with
  // the rule, before anything is launched.
  GemmConfig no_tail = GemmConfig::parse("64x64x64 s4 c1 p g8 ntk");
  options.config = no_tail;
  try {
    gemm(p, ops, nullptr, options);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "options.config");
    EXPECT_NE(std::string(e.what()).find("it holds 0"), std::string::npos) << e.what();
  }
}

namespace {

// A BF16 problem with a forced configuration, alpha, beta and D's type.
struct ForcedCase {
  int64_t m, n, k;
  const char* config;
  float alpha, beta;
  DType out;
};

void run_forced_cases(const std::vector<ForcedCase>& cases, uint64_t seed) {
  for (const ForcedCase& c : cases) {
    const GemmProblem p = problem(c.m, c.n, c.k, DType::bf16, Layout::nt, c.out);
    const GemmConfig config = GemmConfig::parse(c.config);
    auto check = run_and_check(p, c.alpha, c.beta, seed, config);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, c.config << " on " << c.m << "x" << c.n << "x" << c.k);
  }
}

// A forced configuration in any layout and types, with padded leading dimensions (`padded`) and
// D's own row stride (`ldd`; 0: the harness's, N + 16 rounded to 8).
struct LayoutCase {
  int64_t m, n, k;
  Layout layout;
  const char* config;
  float alpha, beta;
  DType in, out;
  bool padded;
  int64_t ldd = 0;
};

void run_layout_cases(const std::vector<LayoutCase>& cases, uint64_t seed) {
  for (const LayoutCase& c : cases) {
    GemmProblem p = problem(c.m, c.n, c.k, c.in, c.layout, c.out);
    p.ldd = c.ldd;
    auto check = run_and_check(p, c.alpha, c.beta, seed++, GemmConfig::parse(c.config), c.padded);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, c.config << " on " << c.m << "x" << c.n << "x" << c.k << " "
                                             << to_string(c.layout));
  }
}

}  // namespace

TEST(GemmGpu, SplitKIsCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  run_forced_cases(
      {{77, 1000, 2000, "64x64x64 s8 c1 p g8 sk4", 1.0f, 0.0f, DType::bf16},
       // K = 576 is 9 k-blocks: with 4 splits of 3, the last split is empty and stores zeros.
       {64, 520, 576, "64x128x64 s6 c1 p g8 sk4", 0.5f, 2.0f, DType::bf16},
       {200, 264, 1000, "128x64x64 s6 c2 p g8 sk3", 1.0f, -1.0f, DType::fp32},
       {128, 2112, 7168, "64x128x64 s8 c1 p g8 cl2x1/b sk2", 1.0f, 0.0f, DType::fp16}},
      31);
}

namespace {

// Same inputs, three calls of a forced configuration: D bitwise equal each time and fully
// written. Split-K's and stream-K's sums are added in a fixed order by whichever piece of a tile
// arrives last, and the arrival counters must be left zero for the next call on the stream (a
// counter left at 1 would make no piece the last one: D unwritten).
void expect_repeatable(const GemmProblem& p, const char* config_text, uint64_t seed) {
  const GemmConfig config = GemmConfig::parse(config_text);
  bench::DeviceBuffer a(size_t(p.m) * p.k * 2), b(size_t(p.n) * p.k * 2);
  bench::fill_random(a.get(), size_t(p.m) * p.k, p.a_type, seed);
  bench::fill_random(b.get(), size_t(p.n) * p.k, p.b_type, seed + 1);
  std::vector<std::vector<double>> results;
  for (int call = 0; call < 3; ++call) {
    bench::DeviceBuffer d(size_t(p.m) * p.n * 2);
    bench::fill_poison(d.get(), size_t(p.m) * p.n, p.d_type);
    GemmOperands ops;
    ops.a = a.get();
    ops.b = b.get();
    ops.d = d.get();
    GemmOptions options;
    options.config = config;
    gemm(p, ops, nullptr, options);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    results.push_back(bench::download_as_double(d.get(), size_t(p.m) * p.n, p.d_type));
  }
  int64_t poisoned = 0, differing = 0;
  for (size_t i = 0; i < results[0].size(); ++i) {
    poisoned += std::isnan(results[0][i]) ? 1 : 0;
    for (int call = 1; call < 3; ++call)
      differing += std::memcmp(&results[0][i], &results[size_t(call)][i], sizeof(double)) != 0;
  }
  EXPECT_EQ(poisoned, 0) << config_text;
  EXPECT_EQ(differing, 0) << config_text;
}

}  // namespace

TEST(GemmGpu, SplitKIsDeterministicAndRepeatable) {
  AUTOGEMM_REQUIRE_GPU();
  expect_repeatable(problem(200, 1000, 4000), "128x64x64 s6 c2 p g8 sk4", 61);
}

// Stream-K (stk, kernels/sm90/stream_k.cuh): whole tiles in waves, then each CTA's equal run of
// the shared tiles' k-blocks, a cut tile summed by its last piece. Swapped (the middle's one
// tile column) and not, every layout, alpha and beta with C, fp16 and fp32 D, the remainder
// alone (400 rows: 120 of 384 tiles) and with a wave (2000 x 3000: 60 + 132), runs of 2-3
// k-blocks (K = 300), tiles cut into up to 4 pieces, and M and N tails.
TEST(GemmGpu, StreamKIsCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const DType bf16 = DType::bf16, fp16 = DType::fp16, fp32 = DType::fp32;
  run_layout_cases(
      {{164, 6144, 4096, Layout::nt, "128x168x64 s4 c1 p g8 swap stk", 1.0f, 0.0f, bf16, bf16, false},
       {208, 3000, 2000, Layout::nn, "128x208x64 s4 c2 p g8 swap stk", 0.5f, 1.0f, bf16, bf16, true},
       {400, 12288, 4096, Layout::nt, "128x128x64 s6 c2 p g8 stk", 1.0f, 0.0f, bf16, bf16, false},
       {300, 2000, 3000, Layout::nn, "128x128x64 s6 c2 p g8 stk", 0.5f, 2.0f, bf16, bf16, true},
       {1000, 1000, 1000, Layout::tn, "128x128x64 s4 c2 p g8 stk", 1.0f, -1.0f, bf16, fp32, true},
       {2000, 3000, 520, Layout::tt, "128x256x64 s3 c2 p g8 stk", 1.0f, 0.0f, fp16, fp16, false},
       {777, 1000, 300, Layout::nt, "64x64x64 s8 c1 p g1 stk", 1.0f, 0.5f, bf16, bf16, false},
       {4096, 2112, 7168, Layout::nt, "128x128x64 s6 c2 p g8 stk", 1.0f, 0.0f, bf16, bf16, false}},
      91);
  expect_repeatable(problem(164, 6144, 4096), "128x168x64 s4 c1 p g8 swap stk", 95);
  expect_repeatable(problem(777, 1000, 300), "64x64x64 s8 c1 p g1 stk", 97);
}

// Each stream has its own arrival counters: split-K calls on four streams at once, from four
// threads, three calls each with different tile counts, all correct.
TEST(GemmGpu, SplitKOnSeveralStreamsAtOnce) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<autogemm::testing::GemmCheck> checks(4);
  const auto errors = autogemm::testing::run_on_own_streams(4, [&checks](int t, cudaStream_t stream) {
    for (int rep = 0; rep < 3; ++rep)
      checks[size_t(t)] = run_and_check(problem(64 + 32 * t, 512 + 128 * rep, 3000), 1.0f, 0.0f,
                                        300 + 10 * t + rep,
                                        GemmConfig::parse("64x64x64 s8 c1 p g8 sk4"),
                                        false, 0, stream);
  });
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[size_t(t)], "") << "thread " << t;
    AUTOGEMM_EXPECT_GEMM_OK(checks[size_t(t)], "thread " << t);
  }
}

// The n-tail kernel (ntk, plan/n_tail.hpp): the main kernel computes the whole tiles and a
// narrow second kernel, launched as its programmatic dependent, the last column of tiles.
// Every layout (B K-major and MN-major: the tail's B starts at a row or at a column), padded
// leading dimensions, alpha and beta with C, fp32 output, tails of 16, 32 and 64 columns, a
// cluster, and M tails. Every element of D must be written once and the padding stay poisoned.
TEST(GemmGpu, NTailKernelIsCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const DType bf16 = DType::bf16, fp32 = DType::fp32;
  run_layout_cases(
      {{1000, 2112, 1024, Layout::nt, "128x128x64 s4 c2 p g8 ntk", 1.0f, 0.0f, bf16, bf16, false},
       {1000, 2112, 1024, Layout::nn, "128x128x64 s4 c2 p g8 ntk", 0.5f, 2.0f, bf16, bf16, true},
       {776, 1056, 520, Layout::tt, "128x128x64 s4 c2 p g8 ntk", 1.0f, -1.0f, bf16, fp32, true},
       {2048, 4112, 512, Layout::nt, "128x256x64 s3 c2 p g8 cl2x1/b ntk", 1.0f, 0.0f, bf16, bf16,
        false}},
      43);
}

// D leaves the TMA epilogue in 128-byte column boxes and one tail box (kernels/sm90/
// gemm_layout.cuh d_main_boxes): every kind of tail slab, with C loaded by TMA through the same
// two maps (beta != 0), N tails inside a tile and a multicast pair. bf16 D: 16 columns (32 B,
// 32-byte swizzle), 32 (64 B, 64-byte swizzle), 48 (96 B, dense), 8 (16 B, dense; N <= 8); fp32
// D: 16 columns (64 B), or none (block_n 64 = two main boxes).
TEST(GemmGpu, TmaStoreTailBoxesAreCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const DType bf16 = DType::bf16, fp32 = DType::fp32;
  run_forced_cases({{1000, 1000, 520, "128x208x64 s3 c2 p g8", 1.0f, 0.0f, bf16},
                    {515, 1000, 264, "128x240x64 s3 c2 p g8", 0.75f, -1.5f, bf16},
                    {1000, 2000, 1000, "128x240x64 s3 c2 p g8 cl2x1/b", 1.0f, 0.0f, bf16},
                    {257, 1000, 136, "128x176x64 s3 c2 p g8", 2.0f, 0.5f, fp32},
                    {300, 700, 200, "64x80x64 s6 c1 p g8", 1.0f, 1.0f, fp32},
                    {130, 3000, 512, "128x112x64 s6 c1 p g8", 1.0f, 0.0f, bf16},
                    {200, 520, 264, "64x48x64 s8 c1 p g8", 1.0f, 1.0f, bf16},
                    {200, 520, 264, "64x48x64 s8 c1 p g8", 1.0f, 1.0f, fp32},
                    {300, 1000, 264, "64x96x64 s8 c1 p g8", 1.0f, -1.0f, bf16},
                    {300, 8, 264, "64x8x64 s8 c1 p g8", 1.0f, 0.5f, bf16},
                    {300, 72, 264, "64x16x64 s8 c1 p g8", 1.0f, 0.0f, fp32},
                    // Widths of an odd number of 8-column groups, with dense tail boxes of 16
                    // bytes (200 bf16 = 3 x 64 + 8 columns), 96 (152 fp32 = 4 x 32 + 24) and 48
                    // (24 bf16, no main box).
                    {1000, 1000, 520, "128x200x64 s3 c2 p g8", 1.0f, 0.5f, bf16},
                    {257, 1000, 136, "128x152x64 s4 c2 p g8", 1.0f, 0.0f, fp32},
                    {300, 1000, 264, "64x24x64 s8 c1 p g8", 1.0f, -1.0f, bf16}},
                   44);
}

// Ping-pong consumers (whole tiles in turn; the ring read past the other's k-blocks, the
// staging buffer taken in turn): weight-gradient storage (tn, fp32 D += the product) and the
// forward one, K tails, M and N tails, one tile (the second consumer idle), an odd tile count
// per CTA, multicast pairs, 64- and 256-row tiles, and not persistent.
TEST(GemmGpu, PingPongConsumersAreCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const DType bf16 = DType::bf16, fp16 = DType::fp16, fp32 = DType::fp32;
  run_layout_cases(
      {{1000, 1000, 4096, Layout::tn, "128x128x64 s5 c2 p g8 pp", 1.0f, 1.0f, bf16, fp32, false},
       {4096, 2048, 1000, Layout::tn, "128x128x64 s5 c2 p g8 cl2x1/b pp", 2.0f, 1.0f, bf16, fp32,
        false},
       {100, 120, 520, Layout::tn, "128x128x64 s5 c2 p g8 pp", 1.0f, 1.0f, bf16, fp32, false},
       {384, 384, 2048, Layout::tn, "128x128x64 s5 c2 p g8 pp", 1.0f, -1.0f, bf16, fp32, false},
       {1000, 3000, 1000, Layout::nt, "128x128x64 s5 c2 p g8 pp", 1.0f, 0.0f, bf16, bf16, false},
       {777, 1000, 136, Layout::nt, "64x256x64 s4 c2 p g8 pp", 0.5f, 2.0f, fp16, fp16, true},
       {1000, 520, 1000, Layout::nn, "256x64x64 s3 c2 p g8 pp", 1.0f, 0.0f, bf16, fp32, false},
       {2000, 2000, 264, Layout::nt, "128x128x64 s5 c2 g8 pp", 1.0f, 0.5f, bf16, bf16, false}},
      71);
}

TEST(GemmGpu, RaggedNStaysInsideD) {
  AUTOGEMM_REQUIRE_GPU();
  // N * 2 bytes not a multiple of 16: TMA stores would write up to the next 16-byte boundary
  // of each row, so these must take the plain-store epilogue (split-K's too);
  // run_and_check pads ldd and checks every padding column stays poisoned.
  for (int64_t n : {int64_t(1004), int64_t(130), int64_t(2100)})
    for (Layout layout : {Layout::nt, Layout::tt}) {
      // padded_ld: C's rows must be 16-byte aligned too, or the call goes to cuBLASLt.
      auto check = run_and_check(problem(136, n, 1000, DType::bf16, layout), 1.0f, 0.5f, 41,
                                 std::nullopt, /*padded_ld=*/true);
      EXPECT_FALSE(check.used_vendor);
      AUTOGEMM_EXPECT_GEMM_OK(check, "n = " << n << " " << to_string(layout));
    }
  auto split = run_and_check(problem(64, 130, 4096), 1.0f, 0.0f, 42,
                             GemmConfig::parse("64x64x64 s8 c1 p g8 sk4"));
  AUTOGEMM_EXPECT_GEMM_OK(split, "split-K with n = 130");
}

// Swapped operands (swap_ab, plan/swap_ab.hpp): the kernel computes D^T = B^T A^T and D is
// staged as the caller's rows and stored by TMA, or written transposed by the threads where
// TMA cannot store the caller's rows (N = 1003: rows end mid 16-byte chunk; ldd = 4103). Every
// layout (the kernel's operands trade storage letters), M
// tails from 1 to 63 rows (wgmma N of 8 and 16-column steps; 64 where the call's A is stored
// K x M, an N-major kernel B) and one past a tile (several tile columns), N tails inside a tile row, split-K, two consumers, a cluster, alpha and beta
// with C, fp32 and fp16 output, padded and odd leading dimensions of D, and A and B copied
// into padded rows first (K odd). Every element of D must be written once and the padding
// stay poisoned.
TEST(GemmGpu, SwappedOperandsAreCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const DType bf16 = DType::bf16, fp16 = DType::fp16, fp32 = DType::fp32;
  run_layout_cases(
      {{32, 7168, 2048, Layout::nt, "64x32x128 s8 c1 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       {1, 1000, 1000, Layout::nt, "64x8x64 s8 c1 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       {5, 1000, 520, Layout::nn, "64x8x64 s8 c1 p g8 swap", 0.5f, 2.0f, bf16, bf16, true},
       {17, 2112, 7168, Layout::tn, "64x64x128 s6 c1 p g8 sk4 swap", 1.0f, -1.0f, bf16, fp32, true},
       {48, 1032, 1000, Layout::tt, "128x64x64 s6 c2 p g8 swap", 1.0f, 0.0f, fp16, fp16, false},
       {63, 4100, 776, Layout::nt, "128x64x64 s6 c2 p g8 cl2x1/b swap", 1.0f, 0.5f, bf16, bf16, true,
        4100 + 3},
       {24, 300, 4096, Layout::nt, "64x32x64 s8 c1 p g8 sk3 swap", 1.0f, 0.0f, bf16, bf16, false, 301},
       {200, 1000, 1000, Layout::nn, "128x64x64 s6 c2 p g8 swap", 1.0f, 1.0f, bf16, bf16, true},
       {32, 1000, 1001, Layout::nt, "64x32x64 s8 c1 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       // Many rows of A fitted along wgmma's N (kSwapAbFitMinM): several tile columns with a
       // ragged last one, TMA's transposed boxes with and without C, fp32 output in 32-column
       // boxes, a 256-row tile with two boxes per consumer, and the threads' fallback.
       {852, 4096, 1000, Layout::nt, "128x224x64 s3 c2 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       {1153, 3000, 520, Layout::nn, "128x176x64 s4 c2 p g8 cl2x1/b swap", 1.0f, 0.5f, bf16,
        bf16, true},
       {700, 1100, 776, Layout::tt, "256x128x64 s2 c2 p g8 swap", 1.0f, 0.0f, fp16, fp16, false},
       {300, 1024, 640, Layout::tn, "128x192x64 s3 c2 p g8 swap", 2.0f, -1.0f, bf16, fp32, true},
       {300, 1003, 800, Layout::nt, "128x112x64 s6 c2 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       // Widths of an odd number of 8-column groups (wgmma's N step): the transposed boxes
       // hold 216, 200 or 152 caller rows, the one-tile swap 24; ragged last tile columns.
       {852, 4096, 1000, Layout::nt, "128x216x64 s3 c2 p g8 swap", 1.0f, 0.0f, bf16, bf16, false},
       {200, 1000, 776, Layout::nn, "128x200x64 s4 c2 p g8 cl2x1/b swap", 1.0f, 1.0f, bf16, bf16,
        true},
       {300, 1024, 640, Layout::nn, "128x152x64 s4 c2 p g8 swap", 2.0f, -1.0f, bf16, fp32, true},
       {20, 1000, 520, Layout::nn, "64x24x64 s8 c1 p g8 swap", 1.0f, 0.5f, fp16, fp16, true},
       {23, 1003, 800, Layout::nt, "64x24x64 s8 c1 p g8 swap", 1.0f, 0.0f, bf16, bf16, false}},
      71);
  uint64_t seed = 81;
  // The planner's own choice where it swaps (M <= 32; FP8: Fp8UnquantisedGpu.SwappedOperands):
  // correct whichever it picks.
  for (int64_t m : {int64_t(32), int64_t(24)}) {
    auto check = run_and_check(problem(m, 4096, 14336), 1.0f, 0.0f, seed++);
    EXPECT_FALSE(check.used_vendor);
    AUTOGEMM_EXPECT_GEMM_OK(check, "planner's " << check.config << " at m = " << m);
  }
}

TEST(GemmGpu, AutotuneKeepsTheFastestCandidateAndStaysCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  // A decode shape where the planner's candidates differ (split-K, tile widths).
  auto check = run_and_check(problem(128, 2112, 7168), 1.0f, 0.0f, 51, std::nullopt, false,
                             /*autotune=*/6);
  EXPECT_FALSE(check.used_vendor);
  EXPECT_NE(check.reason.find("autotuned over"), std::string::npos) << check.reason;
  AUTOGEMM_EXPECT_GEMM_OK(check, "autotuned " << check.config);
}

TEST(GemmGpu, TwoAtomKBlocksEveryLayout) {
  AUTOGEMM_REQUIRE_GPU();
  // BLOCK_K = 128 bf16: two 128-byte swizzle atoms per stage ([atom][rows][128 B] for K-major
  // operands, 128 K rows per 64-wide slab for MN-major ones). K = 1000 leaves a partial stage.
  for (const char* config : {"128x128x128 s3 c1 p g8", "64x64x128 s6 c1 p g8 sk2",
                             "128x192x128 s2 c2 p g8 cl2x1/b"})
    for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt}) {
      auto check = run_and_check(problem(392, 648, 1000, DType::bf16, layout), 1.0f, 0.0f, 61,
                                 GemmConfig::parse(config));
      EXPECT_FALSE(check.used_vendor);
      AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << to_string(layout));
    }
}

// What one call costs the host (planning cache lookup, kernel lookup, tensor maps, launch): at
// decode sizes a GEMM takes ~10-20 us on the GPU, so a host path near that would leave the GPU
// waiting between back-to-back calls. 200 calls are enqueued without synchronising (the stream
// holds them all) and the host's time is divided among them; cuBLASLt through the bench's
// wrapper is timed the same way beside it. The bound is loose (a regression guard: a call that
// re-planned, re-built a kernel key per launch or synchronised would exceed it); the figures are
// printed for docs/perf.
// Each thread keeps the tensor maps it encoded (runtime/tensor_maps.cpp). A map must follow
// every argument that decides its bytes, and calls that alternate between operand sets must
// each read their own.
TEST(GemmGpu, CachedTensorMapsFollowTheOperands) {
  AUTOGEMM_REQUIRE_GPU();
  const GemmProblem p = problem(192, 640, 1024);
  const GemmConfig config = GemmConfig::parse("128x128x64 s4 c2 p g8");
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const KernelLaunch kernel = make_kernel_spec(p, config, gpu).kernels.front();
  const size_t a_elems = size_t(p.m) * p.k, b_elems = size_t(p.n) * p.k;
  const size_t d_elems = size_t(p.m) * p.n;
  bench::DeviceBuffer a1(a_elems * 2), b1(b_elems * 2), a2(a_elems * 2), b2(b_elems * 2);
  bench::fill_random(a1.get(), a_elems, p.a_type, 81);
  bench::fill_random(b1.get(), b_elems, p.b_type, 82);
  bench::fill_random(a2.get(), a_elems, p.a_type, 83);
  bench::fill_random(b2.get(), b_elems, p.b_type, 84);
  std::vector<bench::DeviceBuffer> d;
  for (int i = 0; i < 3; ++i) {
    d.emplace_back(d_elems * 2);
    bench::fill_poison(d.back().get(), d_elems, p.d_type);
  }
  auto operands = [&](const bench::DeviceBuffer& a, const bench::DeviceBuffer& b, int out) {
    GemmOperands ops;
    ops.a = a.get();
    ops.b = b.get();
    ops.d = d[size_t(out)].get();
    return ops;
  };

  // The bytes: a repeated encoding is the same map; another pointer or leading dimension is not.
  auto same = [](const CUtensorMap& x, const CUtensorMap& y) {
    return std::memcmp(&x, &y, sizeof(CUtensorMap)) == 0;
  };
  const auto first = runtime::make_gemm_tensor_maps(kernel, operands(a1, b1, 0));
  const auto again = runtime::make_gemm_tensor_maps(kernel, operands(a1, b1, 0));
  EXPECT_TRUE(same(first.a, again.a) && same(first.b, again.b) && same(first.d, again.d));
  const auto other = runtime::make_gemm_tensor_maps(kernel, operands(a2, b1, 1));
  EXPECT_FALSE(same(first.a, other.a));
  EXPECT_TRUE(same(first.b, other.b));
  EXPECT_FALSE(same(first.d, other.d));
  GemmProblem padded = p;
  padded.lda = p.k + 64;   // same pointer and shape, rows further apart
  const auto strided = runtime::make_gemm_tensor_maps(
      make_kernel_spec(padded, config, gpu).kernels.front(), operands(a1, b1, 0));
  EXPECT_FALSE(same(first.a, strided.a));

  // The results: operand sets 1, 2, 1 again; the third call must equal the first bit for bit.
  GemmOptions options;
  options.config = config;
  gemm(p, operands(a1, b1, 0), nullptr, options);
  gemm(p, operands(a2, b2, 1), nullptr, options);
  gemm(p, operands(a1, b1, 2), nullptr, options);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<std::vector<double>> got;
  for (const auto& buffer : d)
    got.push_back(bench::download_as_double(buffer.get(), d_elems, p.d_type));
  int64_t poisoned = 0, first_vs_third = 0, first_vs_second = 0;
  for (size_t i = 0; i < d_elems; ++i) {
    for (const auto& g : got) poisoned += std::isnan(g[i]) ? 1 : 0;
    first_vs_third += std::memcmp(&got[0][i], &got[2][i], sizeof(double)) != 0;
    first_vs_second += got[0][i] != got[1][i];
  }
  EXPECT_EQ(poisoned, 0);
  EXPECT_EQ(first_vs_third, 0);
  EXPECT_GT(first_vs_second, int64_t(d_elems) / 2);   // other inputs, other sums
}

TEST(GemmGpu, HostCostPerCall) {
  AUTOGEMM_REQUIRE_GPU();
  const GemmProblem p = problem(64, 2112, 7168);
  bench::DeviceBuffer a(size_t(p.m) * p.k * 2), b(size_t(p.n) * p.k * 2);
  bench::DeviceBuffer d(size_t(p.m) * p.n * 2);
  bench::fill_random(a.get(), size_t(p.m) * p.k, p.a_type, 71);
  bench::fill_random(b.get(), size_t(p.n) * p.k, p.b_type, 72);
  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  constexpr int kCalls = 200;
  auto host_us_per_call = [&](const std::function<void()>& call) {
    call();   // plans, compiles or loads, allocates what the first call needs
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    const auto end = std::chrono::steady_clock::now();
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return std::chrono::duration<double, std::micro>(end - start).count() / kCalls;
  };
  GemmOptions split;
  split.config = GemmConfig::parse("64x32x64 s8 c1 p g8 sk2");
  const double planned = host_us_per_call([&] { gemm(p, ops, stream); });
  const double split_k = host_us_per_call([&] { gemm(p, ops, stream, split); });
  const double vendor = host_us_per_call([&] { runtime::cublaslt_gemm(p, ops, stream); });
  // Where ours goes: the launcher alone (no argument checks, no plan lookup), and its four
  // tensor maps (encoded once, then copied from the thread's cache).
  std::string reason;
  const KernelSpec chosen = plan_gemm(p, *autogemm::testing::sm90_gpu(&reason)).spec;
  const double launcher = host_us_per_call([&] { runtime::launch(chosen, ops, stream); });
  const double maps = host_us_per_call([&] {
    (void)runtime::make_gemm_tensor_maps(chosen.kernels.front(), ops);
  });
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::printf("host cost per call, 64 x 2112 x 7168 bf16: planner's choice %.2f us (launcher "
              "%.2f, of which cached tensor maps %.2f), forced sk2 %.2f us, cuBLASLt %.2f us\n",
              planned, launcher, maps, split_k, vendor);
  EXPECT_LT(planned, 25.0);
  EXPECT_LT(split_k, 25.0);
}

// A split-K call captured into a CUDA graph: its stream's workspace comes from an uncaptured
// call on the same stream (runtime/split_k.cpp: cudaStreamGetId fails on a capturing stream),
// and the graph's replays write D. Captured with no uncaptured call before, it is refused by
// name instead.
TEST(GemmGpu, SplitKCallCapturedIntoAGraphAfterAWarmUp) {
  AUTOGEMM_REQUIRE_GPU();
  GemmOptions options;
  options.config = GemmConfig::parse("64x128x64 s8 c1 p g8 sk2");
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::string failure;
  const auto check = autogemm::testing::run_call_and_check(
      problem(200, 256, 2048), 1.0f, 0.0f, 29, false, stream,
      [&](const GemmProblem& q, const GemmOperands& ops, cudaStream_t s) {
        gemm(q, ops, s, options);  // the warm-up
        cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        bench::fill_poison(ops.d, size_t(q.m) * q.ldd, q.d_type);
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), "begin capture");
        GemmReport report;
        try {
          report = gemm(q, ops, s, options);
        } catch (const std::exception& e) {
          failure = e.what();  // the capture ends before it is reported
        }
        cudaGraph_t graph = nullptr;
        (void)cudaStreamEndCapture(s, &graph);
        if (failure.empty()) {
          cudaGraphExec_t exec = nullptr;
          cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
          for (int replay = 0; replay < 2; ++replay)
            cuda_check(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
          cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
          (void)cudaGraphExecDestroy(exec);
        }
        if (graph) (void)cudaGraphDestroy(graph);
        return report;
      });
  EXPECT_TRUE(failure.empty()) << failure;
  EXPECT_EQ(check.config, options.config->describe());
  AUTOGEMM_EXPECT_GEMM_OK(check, "sk2 replayed from a graph");

  // Another stream, captured before any uncaptured call on it: refused, naming the rule.
  cudaStream_t fresh = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&fresh, cudaStreamNonBlocking), "cudaStreamCreate");
  const GemmProblem p = problem(200, 256, 2048);
  bench::DeviceBuffer a(size_t(p.m) * p.k * 2), b(size_t(p.n) * p.k * 2), d(size_t(p.m) * p.n * 2);
  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  cuda_check(cudaStreamBeginCapture(fresh, cudaStreamCaptureModeRelaxed), "begin capture");
  std::string refused;
  try {
    gemm(p, ops, fresh, options);
  } catch (const InvalidArgument& e) {
    refused = e.what();
  }
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(fresh, &graph);
  if (graph) (void)cudaGraphDestroy(graph);
  EXPECT_NE(refused.find("warm-up"), std::string::npos) << refused;
  cuda_check(cudaStreamDestroy(fresh), "cudaStreamDestroy");
  cuda_check(cudaStreamDestroy(stream), "cudaStreamDestroy");
}

// D staged in chunks (GemmConfig::d_chunk_boxes, epilogue.cuh store_tma): each chunk of
// 128-byte boxes is loaded (C), staged and stored through one small buffer in turn, so fp32
// 128x256 tiles keep 4 stages. Persistent CTAs with several tiles each (a chunk's buffer follows
// the last tile's store), M and N tails (the last tile's last chunks wholly past N), padded
// leading dimensions, fp32, bf16 and fp16 D, beta 0 and not, clusters, 64- and 128-row consumer
// slabs; each against the float64 reference.
TEST(GemmGpu, DStagedInChunks) {
  AUTOGEMM_REQUIRE_GPU();
  using L = Layout;
  const DType bf16 = DType::bf16, fp16 = DType::fp16, fp32 = DType::fp32;
  run_layout_cases(
      {{1000, 3000, 1024, L::tn, "128x256x64 s4 c2 p g8 dc2", 1.0f, 1.0f, bf16, fp32, false},
       {2048, 4096, 640, L::nt, "128x256x64 s4 c2 p g8 cl2x1/b dc2", 0.5f, -1.0f, bf16, fp32, true},
       {1000, 4000, 320, L::nt, "128x128x64 s6 c2 p g8 dc2", 1.0f, 0.0f, bf16, fp32, false},
       {1024, 2048, 384, L::tt, "256x128x64 s4 c2 p g8 dc1", 1.0f, 0.5f, bf16, fp32, false},
       {1536, 2304, 704, L::nn, "128x256x64 s4 c2 p g8 dc2", 1.0f, 0.25f, fp16, fp16, false},
       {777, 2000, 520, L::nt, "128x256x64 s4 c2 p g8 cl2x1/b dc1", 1.0f, 1.0f, bf16, bf16, true}},
      4343);
}

// C loaded ahead (gemm_layout.cuh c_loaded_ahead): a consumer's store leader loads its tile's C
// into the staging kCLeadKBlocks before the k-loop's end (one consumer: at its start in shorter
// loops; two: after the loop there), once the last tile's bulk store has read it. Persistent
// CTAs with several tiles each (so every load follows a store of the buffer), loops shorter and
// longer than the lead, M and N tails, padded leading dimensions, fp32 and fp16 D, clusters with
// multicast, one and two consumers, swapped operands (D^T staged), and the layouts whose C rows
// TMA reads the same way; each against the float64 reference with C. Ping-pong consumers keep
// their C after the k-loop.
TEST(GemmGpu, CLoadedAheadOverManyTilesPerCta) {
  AUTOGEMM_REQUIRE_GPU();
  using L = Layout;
  const DType bf16 = DType::bf16, fp16 = DType::fp16, fp32 = DType::fp32;
  run_layout_cases(
      {{2048, 4096, 512, L::nt, "64x128x64 s6 c1 p g8", 1.0f, 1.0f, bf16, bf16, false},
       {1000, 4000, 1088, L::nt, "64x128x64 s6 c1 p g8 cl2x1/b", 0.5f, -1.0f, bf16, bf16, true},
       {2000, 3000, 256, L::tn, "128x128x64 s4 c1 p g8", 1.0f, 1.0f, bf16, fp32, true},
       {1536, 2304, 704, L::nn, "64x192x64 s6 c1 p g8", 1.0f, 0.25f, fp16, fp16, false},
       {1024, 2048, 384, L::nt, "128x96x64 s7 c1 p g8 cl2x1/b", 1.0f, 1.0f, bf16, bf16, true},
       {24, 8192, 1024, L::nt, "128x24x64 s8 c1 p g8 swap", 1.0f, 1.0f, bf16, bf16, false},
       {1000, 4000, 320, L::nt, "128x256x64 s3 c2 p g8 cl2x1/b", 0.5f, -1.0f, bf16, bf16, true},
       {2048, 4096, 1600, L::nt, "128x256x64 s3 c2 p g8", 1.0f, 1.0f, bf16, bf16, false},
       {2000, 3000, 1024, L::tn, "128x128x64 s5 c2 p g8 cl2x1/b", 1.0f, 1.0f, bf16, fp32, true},
       {1536, 2304, 1344, L::nn, "128x192x64 s4 c2 p g8", 1.0f, 0.25f, fp16, fp16, false},
       {1024, 2048, 384, L::nt, "128x128x64 s5 c2 p g8 pp", 1.0f, 1.0f, bf16, bf16, false}},
      4242);
}
