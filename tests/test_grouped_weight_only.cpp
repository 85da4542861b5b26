// Grouped weight-only GEMM (include/autogemm/grouped.hpp with problem.weight_format): the masked
// layout of a MoE decode step, every expert's packed weight in one [groups, N, ...] tensor, on
// the decode family. CPU: the rules and the planner's picks (compiled without spills). GPU
// (skipped without a Hopper GPU): each group's valid rows against float64 of A and the group's
// dequantised weight, rows past masked_m[g] left as they were, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/weights.hpp"
#include "bench/compare.hpp"
#include "bench/tensors.hpp"
#include "bench/weights_bench.hpp"
#include "cli_test_util.hpp"
#include "codegen/decode_source.hpp"
#include "cuda/cuda_check.hpp"
#include "error_test_util.hpp"
#include "gpu_test_util.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "plan/kernel_spec.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;

namespace {

constexpr WeightFormat kFormats[] = {WeightFormat::int4_g128, WeightFormat::int4_g128_zp,
                                     WeightFormat::mxfp4, WeightFormat::int8_channel};

GemmProblem masked_problem(int64_t groups, int64_t max_m, int64_t expected, int64_t n, int64_t k,
                           WeightFormat f) {
  GemmProblem p;
  p.grouping = Grouping::masked;
  p.num_groups = groups;
  p.m = max_m;
  p.expected_m = expected;
  p.n = n;
  p.k = k;
  p.weight_format = f;
  return p;
}

}  // namespace

TEST(GroupedWeightOnly, MaskedOnlyAndNoFusedEpilogue) {
  GemmProblem contiguous = masked_problem(4, 128, 4, 1024, 1024, WeightFormat::int4_g128);
  contiguous.grouping = Grouping::contiguous;
  const std::string why = expect_invalid([&] { validate(contiguous); }, "grouping");
  EXPECT_NE(why.find("masked layout"), std::string::npos) << why;
  GemmProblem fused = masked_problem(4, 64, 4, 1024, 1024, WeightFormat::int4_g128);
  fused.epilogue.activation = Activation::silu;
  const std::string fused_why = expect_invalid([&] { validate(fused); }, "epilogue");
  EXPECT_NE(fused_why.find("no fused epilogue"), std::string::npos) << fused_why;
  validate(masked_problem(4, 64, 4, 1024, 1024, WeightFormat::int4_g128));
}

// Every format plans on the decode family, in tiles that never cross a group, and the packed
// bytes of every group are what the model streams.
TEST(GroupedWeightOnly, PlannedOnTheDecodeFamily) {
  const GpuInfo h200 = device_preset("h200");
  for (WeightFormat f : kFormats)
    for (int64_t expected : {1, 4, 16, 64}) {
      const GemmProblem p = masked_problem(8, 64, expected, 2048, 4096, f);
      const Plan plan = plan_gemm(p, h200);
      const GemmConfig& c = plan.best().config;
      EXPECT_EQ(c.instruction, Instruction::mma) << to_string(f) << " expected " << expected;
      EXPECT_EQ(p.m % c.block_m, 0) << c.describe();
      EXPECT_GE(plan.best().prediction.dram_bytes, 8 * p.b_bytes());
    }
}

// The planner's picks and the GPU test's forced split-K and 16-row tiles compile without spills
// (the masked group arithmetic beside the rest).
TEST(GroupedWeightOnly, PicksAndForcedTilesCompileWithoutSpills) {
  const GpuInfo h200 = device_preset("h200");
  const auto compiles = [](const KernelLaunch& kernel, const std::string& what) {
    const jit::CompiledKernel compiled = jit::compile_to_cubin(codegen::decode_kernel_source(kernel));
    EXPECT_FALSE(jit::parse_ptxas_usage(compiled.log).has_spills()) << what << "\n" << compiled.log;
  };
  for (WeightFormat f : kFormats) {
    for (int64_t expected : {2, 32}) {
      const Plan plan = plan_gemm(masked_problem(16, 64, expected, 2816, 2048, f), h200);
      compiles(plan.spec.kernels.front(),
               std::string(to_string(f)) + " " + plan.best().config.describe());
    }
    for (const char* forced : {"mma 8x32x128 sk3", "mma 16x32x128 s2"}) {
      const KernelSpec spec = plan::make_spec(masked_problem(8, 64, 8, 1040, 1536, f),
                                              GemmConfig::parse(forced), h200, "forced");
      compiles(spec.kernels.front(), std::string(to_string(f)) + " " + forced);
    }
  }
}

// `bench --grouped FILE --weights F` takes bf16 rows only, and says so before any device query;
// `plan` explains a masked weight-only problem.
TEST(GroupedWeightOnly, BenchAndPlanCommands) {
  using autogemm::testing::run_cli;
  const auto fp16 = run_cli("bench --grouped " AUTOGEMM_SOURCE_DIR
                            "/bench/suites/grouped-moe-decode.csv --weights int4-g128 --dtype fp16");
  EXPECT_EQ(fp16.exit_code, 2) << fp16.out;
  EXPECT_NE(fp16.out.find("--dtype"), std::string::npos) << fp16.out;
  const auto bad = run_cli("bench --grouped " AUTOGEMM_SOURCE_DIR
                           "/bench/suites/grouped-moe-decode.csv --weights int5");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("int5"), std::string::npos) << bad.out;
  const auto plan = run_cli("plan --grouped masked --groups 8 --m-per-group 2 --m 64 --n 4096 "
                            "--k 7168 --weights int4-g128 --device h200");
  EXPECT_EQ(plan.exit_code, 0) << plan.out;
  EXPECT_NE(plan.out.find("decode family"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("masked"), std::string::npos) << plan.out;
}

namespace {

// grouped_gemm on masked groups with these valid rows (max_m 64 or 128): each group's weight
// quantised from random values, A random, D poisoned. Returns the worst group diff and counts
// the rows written that should not be and the valid ones left unwritten.
struct MaskedCheck {
  double worst_diff = 0;
  int64_t unwritten = 0, spot_failures = 0, masked_rows_touched = 0;
  std::string config, first_failure;
};

MaskedCheck run_masked(WeightFormat f, const std::vector<int32_t>& rows, int64_t max_m, int64_t n,
                       int64_t k, uint32_t seed, std::optional<GemmConfig> config = std::nullopt) {
  const int64_t groups = int64_t(rows.size());
  const GemmProblem p = masked_problem(groups, max_m, std::max(1, *std::max_element(rows.begin(), rows.end())), n, k, f);
  // Every group's [N, K] weight, stacked: one [groups x N, K] weight packs the same bytes as
  // the groups packed one after another (rows are independent).
  const PackedWeight packed = quantize_weight(bench::random_weight(groups * n, k, seed).data(), groups * n, k, f);
  const std::vector<float> deq = dequantize_weight(packed);
  const bench::DeviceWeight weight = bench::upload_weight(packed);
  const int64_t stored = groups * max_m;
  bench::DeviceBuffer a(size_t(stored * k) * 2), d(size_t(stored * n) * 2), counts(rows.size() * 4);
  bench::fill_random(a.get(), size_t(stored * k), DType::bf16, seed + 1);
  bench::fill_poison(d.get(), size_t(stored * n), DType::bf16);
  const std::vector<double> poison = bench::download_as_double(d.get(), size_t(stored * n), DType::bf16);
  cuda_check(cudaMemcpy(counts.get(), rows.data(), rows.size() * 4, cudaMemcpyHostToDevice),
             "cudaMemcpy(masked_m)");
  GemmOperands dense;
  weight.set_operands(dense);
  GroupedOperands ops;
  ops.a = a.get();
  ops.b = dense.b;
  ops.b_scales = dense.b_scales;
  ops.b_zeros = dense.b_zeros;
  ops.d = d.get();
  ops.masked_m = static_cast<const int32_t*>(counts.get());
  GemmOptions options;
  options.config = config;
  const GemmReport report = grouped_gemm(p, ops, nullptr, options);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after grouped_gemm");
  MaskedCheck out;
  out.config = report.config.describe();
  const std::vector<double> all_a = bench::download_as_double(a.get(), size_t(stored * k), DType::bf16);
  const std::vector<double> got = bench::download_as_double(d.get(), size_t(stored * n), DType::bf16);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t valid = std::min<int64_t>(std::max(rows[size_t(g)], 0), max_m);
    const size_t first = size_t(g * max_m);
    for (size_t i = (first + size_t(valid)) * size_t(n); i < (first + size_t(max_m)) * size_t(n); ++i)
      if (std::memcmp(&got[i], &poison[i], sizeof(double)) != 0) ++out.masked_rows_touched;
    if (valid == 0) continue;
    const std::vector<double> a_g(all_a.begin() + std::ptrdiff_t(first * size_t(k)),
                                  all_a.begin() + std::ptrdiff_t((first + size_t(valid)) * size_t(k)));
    const std::vector<float> w_g(deq.begin() + std::ptrdiff_t(g * n * k), deq.begin() + std::ptrdiff_t((g + 1) * n * k));
    const std::vector<double> want = bench::weight_reference(a_g, w_g, valid, n, k);
    const std::vector<double> got_g(got.begin() + std::ptrdiff_t(first * size_t(n)),
                                    got.begin() + std::ptrdiff_t((first + size_t(valid)) * size_t(n)));
    const auto check = bench::check_result(got_g, n, want, valid, n, 1e-4, 1.0 / 256, 256, seed + g);
    out.worst_diff = std::max(out.worst_diff, check.diff);
    out.unwritten += check.unwritten;
    out.spot_failures += check.spot_failures;
    if (out.first_failure.empty() && !check.first_failure.empty())
      out.first_failure = "group " + std::to_string(g) + ": " + check.first_failure;
  }
  return out;
}

}  // namespace

// Empty groups, one row, a partial tile, a full max_m and a count past it (read as max_m), N off
// the tiles; the planner's pick, forced split-K (whose skipped tiles touch no counter) and a
// 16-row tile with two steps ahead.
TEST(GroupedWeightOnlyGpu, MaskedGroupsAgainstFloat64OfTheDequantisedWeights) {
  AUTOGEMM_REQUIRE_GPU();
  uint32_t seed = 5400;
  const std::vector<int32_t> rows = {0, 1, 7, 64, 3, 70, 0, 12};
  for (WeightFormat f : kFormats)
    for (const char* forced : {static_cast<const char*>(nullptr), "mma 8x32x128 sk3", "mma 16x32x128 s2"}) {
      std::optional<GemmConfig> config;
      if (forced) config = GemmConfig::parse(forced);
      const MaskedCheck c = run_masked(f, rows, 64, 1040, 1536, seed, config);
      seed += 10;
      const std::string what = std::string(to_string(f)) + " " + c.config;
      EXPECT_LT(c.worst_diff, 1e-5) << what;
      EXPECT_EQ(c.unwritten, 0) << what;
      EXPECT_EQ(c.spot_failures, 0) << what << ": " << c.first_failure;
      EXPECT_EQ(c.masked_rows_touched, 0) << what;
    }
}

// A packed weight's scales and zeros are checked before anything launches, as gemm() checks them.
TEST(GroupedWeightOnlyGpu, MissingScalesRefusedBeforeTheLaunch) {
  AUTOGEMM_REQUIRE_GPU();
  const GemmProblem p = masked_problem(2, 64, 1, 256, 256, WeightFormat::int4_g128_zp);
  bench::DeviceBuffer a(size_t(128 * 256) * 2), b(size_t(512 * 128)), d(size_t(128 * 256) * 2),
      scales(size_t(512 * 2) * 2), counts(8);
  GroupedOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  ops.masked_m = static_cast<const int32_t*>(counts.get());
  expect_invalid([&] { grouped_gemm(p, ops, nullptr); }, "b_scales");
  ops.b_scales = scales.get();
  expect_invalid([&] { grouped_gemm(p, ops, nullptr); }, "b_zeros");
}
