// GPU tests of grouped GEMM (include/autogemm/grouped.hpp; skipped without a Hopper GPU): the
// contiguous and masked layouts with ragged group sizes (empty groups, one row, sizes off the
// tile), N and K tails, every output type, forced tiles and the planner's choice. Each group is
// checked against the float64 reference (diff, every valid row written, sampled entries), and
// in the masked layout every row past masked_m[g] must still hold its poison, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "autogemm/grouped.hpp"
#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/epilogue_reference.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;

namespace {

struct GroupedCheck {
  double worst_diff = 0;
  int64_t unwritten = 0;       // valid rows' elements still poisoned
  int64_t spot_failures = 0;
  int64_t masked_rows_touched = 0;   // masked layout: elements past masked_m[g] changed
  std::string first_failure;
  std::string config;
};

// Runs grouped_gemm on random inputs with the given rows per group: contiguous (runs padded to
// 128 rows) or masked (max_m = the largest rounded up to 64, or `max_m` when given).
GroupedCheck run_grouped(Grouping grouping, const std::vector<int64_t>& rows, int64_t n,
                         int64_t k, DType in, DType out_type, uint64_t seed,
                         std::optional<GemmConfig> config = std::nullopt, int64_t max_m = 0,
                         bool fp8 = false, const Epilogue& epilogue = {}) {
  GemmProblem p;
  p.epilogue = epilogue;
  p.grouping = grouping;
  p.num_groups = int64_t(rows.size());
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = out_type;
  const int64_t largest = *std::max_element(rows.begin(), rows.end());
  std::vector<int64_t> starts;   // first stored row of each group
  if (grouping == Grouping::masked) {
    p.m = max_m > 0 ? max_m : std::max<int64_t>(64, (largest + 63) / 64 * 64);
    for (size_t g = 0; g < rows.size(); ++g) starts.push_back(int64_t(g) * p.m);
  } else {
    p.m = std::max<int64_t>(contiguous_rows(rows), kGroupedRowAlignment);
    starts = check_contiguous_groups(p, rows);
  }
  p.expected_m = std::max<int64_t>(1, largest);
  const int64_t stored = p.stored_rows();
  const int64_t n_d = p.d_cols();   // D's columns: N, or N / 2 gated
  const int in_bytes = dtype_bytes(in), out_bytes = dtype_bytes(out_type);
  bench::DeviceBuffer a(size_t(stored) * k * in_bytes), b(size_t(p.num_groups) * n * k * in_bytes);
  bench::DeviceBuffer d(size_t(stored) * n_d * out_bytes);
  bench::fill_random(a.get(), size_t(stored) * k, in, seed);
  bench::fill_random(b.get(), size_t(p.num_groups) * n * k, in, seed + 1);
  bench::fill_poison(d.get(), size_t(stored) * n_d, out_type);
  // Block-scaled FP8: a and b above are the BF16 sources the reference multiplies; the call
  // gets their e4m3 quantisation (A as one matrix, 1x128; each group's B 128x128).
  const int64_t k_blocks = (k + 127) / 128, n_blocks = (n + 127) / 128;
  bench::DeviceBuffer qa, qb, sa, sb;
  if (fp8) {
    qa = bench::DeviceBuffer(size_t(stored) * k);
    qb = bench::DeviceBuffer(size_t(p.num_groups) * n * k);
    sa = bench::DeviceBuffer(size_t(stored) * k_blocks * sizeof(float));
    sb = bench::DeviceBuffer(size_t(p.num_groups) * n_blocks * k_blocks * sizeof(float));
    quantize_fp8_1x128(a.get(), in, stored, k, k, qa.get(), static_cast<float*>(sa.get()));
    for (int64_t g = 0; g < p.num_groups; ++g)
      quantize_fp8_128x128(static_cast<const char*>(b.get()) + size_t(g) * n * k * in_bytes, in,
                           n, k, k, static_cast<char*>(qb.get()) + size_t(g) * n * k,
                           static_cast<float*>(sb.get()) + size_t(g) * n_blocks * k_blocks);
    p.a_type = p.b_type = DType::e4m3;
    p.scaling = Scaling::block_1x128_128x128;
  }
  bench::DeviceBuffer groups_on_device;
  GroupedOperands ops;
  ops.a = fp8 ? qa.get() : a.get();
  ops.b = fp8 ? qb.get() : b.get();
  ops.d = d.get();
  if (fp8) {
    ops.scale_a = static_cast<const float*>(sa.get());
    ops.scale_b = static_cast<const float*>(sb.get());
  }
  // The fused epilogue's vectors: bias and col_scale per group ([groups, N]), row_scale per
  // stored row; scales in [0.5, 1.5).
  bench::DeviceBuffer bias, row_scale, col_scale;
  bench::EpilogueVectors vectors;
  const size_t group_cols = size_t(p.num_groups) * n;
  if (epilogue.bias) {
    bias = bench::DeviceBuffer(group_cols * dtype_bytes(*epilogue.bias));
    bench::fill_random(bias.get(), group_cols, *epilogue.bias, seed + 3);
    vectors.bias = bench::download_as_double(bias.get(), group_cols, *epilogue.bias);
    ops.bias = bias.get();
  }
  if (epilogue.row_scale) {
    row_scale = bench::DeviceBuffer(size_t(stored) * sizeof(float));
    bench::fill_uniform(row_scale.get(), size_t(stored), DType::fp32, seed + 4, 0.5, 1.5);
    vectors.row_scale = bench::download_as_double(row_scale.get(), size_t(stored), DType::fp32);
    ops.row_scale = static_cast<const float*>(row_scale.get());
  }
  if (epilogue.col_scale) {
    col_scale = bench::DeviceBuffer(group_cols * sizeof(float));
    bench::fill_uniform(col_scale.get(), group_cols, DType::fp32, seed + 5, 0.5, 1.5);
    vectors.col_scale = bench::download_as_double(col_scale.get(), group_cols, DType::fp32);
    ops.col_scale = static_cast<const float*>(col_scale.get());
  }
  std::vector<int32_t> host_groups;
  if (grouping == Grouping::masked) {
    for (int64_t r : rows) host_groups.push_back(int32_t(r));
  } else {
    host_groups = contiguous_group_index(p, rows);
  }
  groups_on_device = bench::DeviceBuffer(host_groups.size() * sizeof(int32_t));
  cuda_check(cudaMemcpy(groups_on_device.get(), host_groups.data(),
                        host_groups.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
             "cudaMemcpy(groups)");
  (grouping == Grouping::masked ? ops.masked_m : ops.group_index) =
      static_cast<const int32_t*>(groups_on_device.get());
  GemmOptions options;
  options.config = config;
  const GemmReport report = grouped_gemm(p, ops, nullptr, options);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after grouped_gemm");

  GroupedCheck out;
  out.config = report.config.describe();
  const std::vector<double> got = bench::download_as_double(d.get(), size_t(stored) * n_d, out_type);
  const double rtol =
      out_type == DType::bf16 ? 1.0 / 128 : out_type == DType::fp16 ? 1.0 / 1024 : 1e-5;
  for (size_t g = 0; g < rows.size(); ++g) {
    const int64_t valid = std::min(rows[g], grouping == Grouping::masked ? p.m : rows[g]);
    if (valid > 0) {
      GemmProblem one;
      one.m = valid;
      one.n = n;
      one.k = k;
      one.a_type = one.b_type = in;
      one.d_type = out_type;
      GemmOperands group_ops;
      group_ops.a = static_cast<const char*>(a.get()) + size_t(starts[g]) * k * in_bytes;
      group_ops.b = static_cast<const char*>(b.get()) + g * size_t(n) * k * in_bytes;
      bench::DeviceBuffer ref(size_t(valid) * n * sizeof(double));
      bench::reference_gemm(one, group_ops, static_cast<double*>(ref.get()), nullptr);
      std::vector<double> want(size_t(valid) * n);
      cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double),
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy(reference)");
      if (!epilogue.empty()) {   // this group's slice of each vector
        bench::EpilogueVectors mine;
        const auto slice = [](const std::vector<double>& v, int64_t from, int64_t count) {
          return v.empty() ? v
                           : std::vector<double>(v.begin() + from, v.begin() + from + count);
        };
        mine.bias = slice(vectors.bias, int64_t(g) * n, n);
        mine.col_scale = slice(vectors.col_scale, int64_t(g) * n, n);
        mine.row_scale = slice(vectors.row_scale, starts[g], valid);
        bench::apply_epilogue_reference(epilogue, mine, valid, n, 1.0, 0.0, {}, n, want);
      }
      const std::vector<double> mine(got.begin() + starts[g] * n_d,
                                     got.begin() + (starts[g] + valid) * n_d);
      const bench::CheckReport r = bench::check_result(mine, n_d, want, valid, n_d,
                                                       rtol + 1e-6 * k, rtol, fp8 ? 0 : 64,
                                                       seed + 7 + g);
      out.worst_diff = std::max(out.worst_diff, fp8 ? r.diff / 100 : r.diff);   // < 1e-3 FP8
      out.unwritten += r.unwritten;
      // FP8: sampled entries (and the corners check_result always takes) differ from the
      // unquantised reference by the quantisation, which the diff bounds.
      if (!fp8) out.spot_failures += r.spot_failures;
      if (out.first_failure.empty() && !r.first_failure.empty())
        out.first_failure = "group " + std::to_string(g) + ": " + r.first_failure;
    }
    if (grouping == Grouping::masked)
      for (int64_t row = starts[g] + std::max<int64_t>(valid, 0); row < starts[g] + p.m; ++row)
        for (int64_t col = 0; col < n_d; ++col)
          if (!std::isnan(got[size_t(row * n_d + col)])) ++out.masked_rows_touched;
  }
  return out;
}

#define EXPECT_GROUPED_OK(check, label)                                                     \
  do {                                                                                      \
    EXPECT_LT((check).worst_diff, 1e-5) << label << " [" << (check).config << "]";         \
    EXPECT_EQ((check).unwritten, 0) << label << " [" << (check).config << "]";             \
    EXPECT_EQ((check).spot_failures, 0) << label << " [" << (check).config << "] "         \
                                        << (check).first_failure;                           \
    EXPECT_EQ((check).masked_rows_touched, 0) << label << " [" << (check).config << "]";   \
  } while (0)

}  // namespace

TEST(GroupedGpu, ContiguousRaggedGroups) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 2300;
  // Empty groups, one row, sizes just off the 128-row alignment, a group of several runs.
  const std::vector<int64_t> rows{1, 0, 130, 127, 400, 0, 64};
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{256, 512}, {200, 1000}, {4096, 7168}}) {
    const auto check = run_grouped(Grouping::contiguous, rows, n, k, DType::bf16, DType::bf16,
                                   seed++);
    EXPECT_GROUPED_OK(check, "contiguous n " << n << " k " << k);
  }
}

TEST(GroupedGpu, MaskedRowsPastTheMaskStayUntouched) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 2400;
  // masked_m of 0, 1, a partial tile, exactly max_m, and one past max_m (ignored past it).
  const std::vector<int64_t> rows{0, 1, 37, 128, 64, 150};
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{4096, 7168}, {200, 1000}}) {
    const auto check = run_grouped(Grouping::masked, rows, n, k, DType::bf16, DType::bf16,
                                   seed++, std::nullopt, /*max_m=*/128);
    EXPECT_GROUPED_OK(check, "masked n " << n << " k " << k);
  }
}

TEST(GroupedGpu, ForcedTilesAndOutputTypes) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 2500;
  const std::vector<int64_t> rows{200, 5, 129, 256};
  for (const char* config : {"64x128x64 s6 c1 p g8", "128x192x64 s3 c2 p g8",
                             "128x128x64 s4 c2 p g8 cl1x2/a", "64x64x128 s4 c1"})
    for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
      for (DType out : {DType::bf16, DType::fp32}) {
        const auto check = run_grouped(grouping, rows, 768, 1024, DType::bf16, out, seed++,
                                       GemmConfig::parse(config), grouping == Grouping::masked ? 256 : 0);
        EXPECT_GROUPED_OK(check, config << " " << to_string(grouping) << " -> " << to_string(out));
        EXPECT_EQ(check.config, config);
      }
  const auto fp16 = run_grouped(Grouping::masked, rows, 512, 256, DType::fp16, DType::fp16, seed++);
  EXPECT_GROUPED_OK(fp16, "fp16 masked");
}

TEST(GroupedGpu, ManyExpertsFewTokens) {
  AUTOGEMM_REQUIRE_GPU();
  std::vector<int64_t> rows;
  for (int g = 0; g < 32; ++g) rows.push_back((g * 7) % 41);   // 0..40 tokens per expert
  const auto masked = run_grouped(Grouping::masked, rows, 7168, 2048, DType::bf16, DType::bf16, 2600);
  EXPECT_GROUPED_OK(masked, "32 experts masked");
  const auto contiguous =
      run_grouped(Grouping::contiguous, rows, 7168, 2048, DType::bf16, DType::bf16, 2601);
  EXPECT_GROUPED_OK(contiguous, "32 experts contiguous");
}

// Block-scaled FP8 (1x128 A scales per stored row, 128x128 B scales per group) in both
// layouts, against the unquantised BF16 inputs (diff < 1e-3; the check divides it by 100 to
// share the BF16 threshold).
// The fused epilogue per group: each group's bias and column scales ([groups, N]), a scale per
// stored row, every activation's path, both layouts, BF16 and block-scaled FP8, a forced tile
// with a tail and the planner's.
TEST(GroupedGpu, FusedEpiloguePerGroup) {
  AUTOGEMM_REQUIRE_GPU();
  Epilogue all;
  all.bias = DType::fp32;
  all.activation = Activation::silu;
  all.row_scale = all.col_scale = true;
  Epilogue gelu;
  gelu.bias = DType::bf16;
  gelu.activation = Activation::gelu_tanh;
  const std::vector<int64_t> rows = {130, 0, 64, 257};
  uint64_t seed = 2800;
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const Epilogue& e : {all, gelu}) {
      const auto planned = run_grouped(grouping, rows, 1000, 512, DType::bf16, DType::bf16, seed++,
                                       std::nullopt, 0, false, e);
      EXPECT_GROUPED_OK(planned, to_string(grouping) << " " << e.describe());
      const auto forced = run_grouped(grouping, rows, 1000, 512, DType::bf16, DType::bf16, seed++,
                                      GemmConfig::parse("128x96x64 s4 c2 p g8"), 0, false, e);
      EXPECT_GROUPED_OK(forced, to_string(grouping) << " " << e.describe() << " forced");
    }
  const auto fp8 = run_grouped(Grouping::contiguous, rows, 1024, 1024, DType::bf16, DType::bf16,
                               seed++, std::nullopt, 0, true, gelu);
  EXPECT_LT(fp8.worst_diff, 1e-5) << fp8.config;   // worst_diff is FP8's diff / 100
  EXPECT_EQ(fp8.unwritten, 0) << fp8.config;
}

// The gated epilogue per group (MoE SwiGLU / GeGLU): each expert's B holds its gate and up
// rows interleaved in runs of 8, D has N / 2 columns per group; both layouts, BF16 and
// block-scaled FP8, with each group's bias, forced tiles with tails and the planner's.
TEST(GroupedGpu, GatedEpiloguePerGroup) {
  AUTOGEMM_REQUIRE_GPU();
  Epilogue swiglu;
  swiglu.activation = Activation::silu;
  swiglu.gated = true;
  Epilogue geglu = swiglu;
  geglu.activation = Activation::gelu_erf;
  geglu.bias = DType::fp32;
  geglu.row_scale = true;
  const std::vector<int64_t> rows = {130, 0, 64, 257};
  uint64_t seed = 2900;
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const Epilogue& e : {swiglu, geglu}) {
      const auto planned = run_grouped(grouping, rows, 1024, 512, DType::bf16, DType::bf16, seed++,
                                       std::nullopt, 0, false, e);
      EXPECT_GROUPED_OK(planned, to_string(grouping) << " " << e.describe());
      const auto forced = run_grouped(grouping, rows, 1040, 512, DType::bf16, DType::bf16, seed++,
                                      GemmConfig::parse("128x96x64 s4 c2 p g8"), 0, false, e);
      EXPECT_GROUPED_OK(forced, to_string(grouping) << " " << e.describe() << " forced");
    }
  const auto fp8 = run_grouped(Grouping::masked, rows, 2048, 1024, DType::bf16, DType::bf16,
                               seed++, std::nullopt, 0, true, swiglu);
  // worst_diff is FP8's diff / 100. D = silu(gate) * up multiplies two quantised products, so
  // their errors add: twice a single GEMM's 1e-3 (the H200 measured 1.31e-3).
  EXPECT_LT(fp8.worst_diff, 2e-5) << fp8.config;
  EXPECT_EQ(fp8.unwritten, 0) << fp8.config;
}

TEST(GroupedGpu, BlockScaledFp8BothLayouts) {
  AUTOGEMM_REQUIRE_GPU();
  const std::vector<int64_t> rows{0, 1, 70, 128, 33};
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{4096, 7168}, {384, 1024}}) {
      const auto check = run_grouped(grouping, rows, n, k, DType::bf16, DType::bf16, 2700,
                                     std::nullopt, grouping == Grouping::masked ? 128 : 0, true);
      EXPECT_GROUPED_OK(check, "fp8 " << to_string(grouping) << " n " << n << " k " << k);
    }
}
