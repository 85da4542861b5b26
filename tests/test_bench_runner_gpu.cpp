// The bench runner on a GPU: one bf16 and one FP8 case end to end (ours and cuBLASLt on the
// same inputs, timed, compared; FP8 inputs quantised from BF16 by quantize.hpp); a row
// cuBLASLt cannot serve (n/a, checked against the float64 reference), rows whose own call
// cuBLASLt declines (not served, n/a) and a row whose call fails (FAILED, the suite goes on).
#include <gtest/gtest.h>

#include <cmath>

#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "cli_test_util.hpp"
#include "bench_test_util.hpp"
#include "gpu_test_util.hpp"
#include "runtime/cublaslt.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

BenchItem item(int64_t m, int64_t n, int64_t k, DType in) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = DType::bf16;
  if (in == DType::e4m3) p.scaling = Scaling::block_1x128_128x128;
  return BenchItem{p, "test"};
}

// Bench options for the test GPU with `warmup` and `iters` calls.
}  // namespace

TEST(BenchRunnerGpu, OursAndCublasLtAgreeAndAreTimed) {
  AUTOGEMM_REQUIRE_GPU();
  // The FP8 row's baseline (and, until our FP8 kernel exists, ours) is block-scaled cuBLASLt.
  if (const std::string why = runtime::cublaslt_block_scaling_unavailable(); !why.empty())
    GTEST_SKIP() << why;
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const BenchOptions options = autogemm::testing::bench_options_for(gpu, 1, 5);
  std::size_t progress_calls = 0;
  const auto rows = run_bench({item(256, 512, 320, DType::bf16), item(256, 384, 512, DType::e4m3)},
                              options, gpu,
                              [&](std::size_t, std::size_t, const BenchItem*) { ++progress_calls; });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(progress_calls, 3u);
  for (const BenchRow& r : rows) {
    const std::string label = dtype_label(r.problem) + " " + r.config;
    EXPECT_EQ(r.unwritten, 0) << label;
    // Both write bf16: rounding alone gives ~1e-6; a wrong scale layout gives > 1e-2.
    EXPECT_LT(r.diff, r.problem.a_type == DType::e4m3 ? 1e-4 : 1e-5) << label;
    EXPECT_EQ(r.ours.samples, 5) << label;
    EXPECT_GT(r.ours.median_us, 0.0) << label;
    EXPECT_LE(r.ours.min_us, r.ours.median_us) << label;
    ASSERT_TRUE(r.baseline.has_value()) << label;
    EXPECT_GT(r.baseline->median_us, 0.0) << label;
    EXPECT_NEAR(r.ratio, r.baseline->median_us / r.ours.median_us, 1e-12) << label;
    EXPECT_NEAR(r.tflops, r.problem.flops() / r.ours.median_us * 1e-6, 1e-9) << label;
    EXPECT_FALSE(r.config.empty());
    EXPECT_EQ(r.diff_ref, "cublaslt") << label;
    EXPECT_EQ(r.failure, "") << label;
  }
  EXPECT_EQ(failed_rows(rows), 0u);
  EXPECT_EQ(rows_without_baseline(rows), 0u);
  EXPECT_FALSE(rows[0].baseline_fp8_per_tensor.has_value());
  ASSERT_TRUE(rows[1].baseline_fp8_per_tensor.has_value())
      << rows[1].baseline_fp8_per_tensor_unavailable;
  EXPECT_GT(rows[1].baseline_fp8_per_tensor->median_us, 0.0);
  EXPECT_EQ(rows[1].baseline_unavailable, "");
  // FP8 inputs come from BF16 data through the quantisation kernels, timed once per row.
  EXPECT_EQ(rows[0].quantize_us, 0.0);
  EXPECT_GT(rows[1].quantize_us, 0.0);
  const std::string json = rows_to_json(rows);
  EXPECT_NE(json.find("\"quantize_us\""), std::string::npos);
  EXPECT_EQ(csv_header().find("quantize"), std::string::npos);  // the CSV header is frozen
  EXPECT_GT(geomean_ratio(rows), 0.0);
}

TEST(BenchRunnerGpu, NoBaseline) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  BenchOptions options = autogemm::testing::bench_options_for(gpu, 0, 2);
  options.baseline = false;
  const auto rows = run_bench({item(128, 128, 128, DType::bf16)}, options, gpu);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].baseline.has_value());
  EXPECT_EQ(rows[0].ratio, 0.0);
  EXPECT_EQ(rows[0].unwritten, 0);
  EXPECT_EQ(rows[0].diff_ref, "");   // --no-baseline compares nothing
  EXPECT_EQ(rows[0].failure, "");
  EXPECT_EQ(csv_line(rows[0]).substr(csv_line(rows[0]).size() - 8), ",,,,,,\"\"");
}

// Block-scaled cuBLASLt refuses M not a multiple of 4 (cuBLAS docs; runtime/cublaslt.cpp): the
// row's baseline is n/a with that reason, and the row is still timed and checked, against the
// float64 GEMM of the unquantised BF16 inputs, at DeepGEMM's FP8 threshold. A row with a
// baseline before and after it runs as usual (the suite goes on).
TEST(BenchRunnerGpu, Fp8RowCublasLtRefusesIsCheckedAgainstFloat64) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const auto rows = run_bench({item(256, 384, 512, DType::bf16), item(257, 2112, 1024, DType::e4m3),
                               item(128, 256, 256, DType::bf16)},
                              autogemm::testing::bench_options_for(gpu, 1, 3), gpu);
  ASSERT_EQ(rows.size(), 3u);
  const BenchRow& r = rows[1];
  EXPECT_FALSE(r.baseline.has_value());
  EXPECT_NE(r.baseline_unavailable, "");
  if (runtime::cublaslt_block_scaling_unavailable().empty())
    EXPECT_NE(r.baseline_unavailable.find("m = 257"), std::string::npos) << r.baseline_unavailable;
  EXPECT_EQ(r.ratio, 0.0);
  EXPECT_EQ(r.diff_ref, "float64");
  EXPECT_EQ(r.checked_rows, 257);
  EXPECT_LT(r.diff, 1e-3) << r.config;
  EXPECT_GT(r.diff, 0.0) << "quantised inputs cannot match the unquantised GEMM exactly";
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_EQ(r.failure, "");
  EXPECT_EQ(r.ours.samples, 3);
  EXPECT_GT(r.ours.median_us, 0.0);
  for (const BenchRow* other : {&rows[0], &rows[2]}) {
    EXPECT_TRUE(other->baseline.has_value());
    EXPECT_EQ(other->diff_ref, "cublaslt");
    EXPECT_EQ(other->failure, "");
  }
  EXPECT_EQ(rows_without_baseline(rows), 1u);
  EXPECT_NE(format_table(rows).find("n/a"), std::string::npos);
  EXPECT_NE(format_summary(rows, true).find("1 of 3 rows had no cuBLASLt baseline (n/a)"),
            std::string::npos);
  EXPECT_NEAR(geomean_ratio(rows), std::sqrt(rows[0].ratio * rows[2].ratio), 1e-12);
}

// FP8 rows of the odd suite that no kernel of ours takes (K = 1000 and K = 2049: rows TMA cannot
// describe), so gemm() sends them to block-scaled cuBLASLt, which declines them (no algorithm
// for 1000^3 on cuBLASLt 13.1; M = 2049 not a multiple of 4): each is not served (n/a, with
// cuBLASLt's reason), never FAILED, and the suite goes on. A row cuBLASLt does serve is timed.
// The command exits 0: nothing failed.
TEST(BenchRunnerGpu, Fp8RowsCublasLtDeclinesAreNotServedNotFailed) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const auto rows = run_bench({item(1000, 1000, 1000, DType::e4m3),
                               item(2049, 2049, 2049, DType::e4m3),
                               item(256, 384, 512, DType::bf16)},
                              autogemm::testing::bench_options_for(gpu, 1, 3), gpu);
  ASSERT_EQ(rows.size(), 3u);
  for (const BenchRow& r : rows) {
    EXPECT_EQ(r.failure, "") << r.problem.m;
    if (r.ours_unavailable.empty()) {
      EXPECT_GT(r.ours.samples, 0) << r.problem.m;
      EXPECT_FALSE(r.diff_ref.empty()) << r.problem.m;
      EXPECT_LT(r.diff, r.diff_limit) << r.problem.m;
    } else {
      EXPECT_EQ(r.ours.samples, 0) << r.problem.m;
      EXPECT_EQ(r.diff_ref, "") << r.problem.m;
      EXPECT_FALSE(r.baseline.has_value()) << r.problem.m;
    }
  }
  // Served by cuBLASLt only while no kernel of ours takes K = 2049 (the planner decides).
  const bool unaligned_not_served = !rows[1].ours_unavailable.empty();
  if (unaligned_not_served)
    EXPECT_NE(rows[1].ours_unavailable.find("m = 2049"), std::string::npos)
        << rows[1].ours_unavailable;
  EXPECT_TRUE(rows[2].ours_unavailable.empty());
  EXPECT_TRUE(rows[2].baseline.has_value());
  EXPECT_EQ(failed_rows(rows), 0u);
  if (rows_not_served(rows) > 0)
    EXPECT_NE(format_summary(rows, true).find("not served (n/a)"), std::string::npos);

  const autogemm::testing::CliRun run = autogemm::testing::run_cli(
      "bench --m 2049 --n 2049 --k 2049 --dtype fp8 --warmup 1 --iters 2");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.find("FAILED"), std::string::npos) << run.out;
  if (unaligned_not_served)
    EXPECT_NE(run.out.find("(not served: gemm() runs this shape through cuBLASLt"),
              std::string::npos)
        << run.out;
}

// A forced configuration the rules refuse for one shape (the decode family's 16-byte loads
// need K a multiple of 8 bf16: K = 250) fails that row with the reason; the next row still
// runs.
TEST(BenchRunnerGpu, AFailedRowDoesNotStopTheSuite) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  BenchOptions options = autogemm::testing::bench_options_for(gpu, 1, 3);
  options.config = GemmConfig::parse("mma 8x16x128");
  const auto rows =
      run_bench({item(4, 512, 250, DType::bf16), item(4, 512, 320, DType::bf16)}, options, gpu);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].failure.find("options.config"), std::string::npos) << rows[0].failure;
  EXPECT_NE(rows[0].failure.find("k = 250"), std::string::npos) << rows[0].failure;
  EXPECT_EQ(rows[0].ours.samples, 0);
  EXPECT_EQ(rows[1].failure, "");
  EXPECT_EQ(rows[1].config, "mma 8x16x128");
  EXPECT_LT(rows[1].diff, 1e-5);
  EXPECT_EQ(failed_rows(rows), 1u);
  EXPECT_NE(format_table(rows).find("FAILED"), std::string::npos);
}

// --l2-warm (BenchOptions::flush_l2 = false): no flush between the timed calls. A memory-bound
// FP8 row whose inputs fit the L2 (64 x 2048 x 2048: 4.3 MB) is still compared, fully written
// and timed, with its same-bytes copy; and with nothing flushed between the calls it is not
// slower than the flushed run by more than the noise (warm L2 can only remove DRAM traffic).
TEST(BenchRunnerGpu, WarmL2SkipsTheFlush) {
  AUTOGEMM_REQUIRE_GPU();
  if (const std::string why = runtime::cublaslt_block_scaling_unavailable(); !why.empty())
    GTEST_SKIP() << why;
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  BenchOptions options = autogemm::testing::bench_options_for(gpu, 3, 21);
  const BenchItem row = item(64, 2048, 2048, DType::e4m3);
  const BenchRow flushed = run_bench({row}, options, gpu).front();
  options.flush_l2 = false;
  const BenchRow warm = run_bench({row}, options, gpu).front();
  EXPECT_EQ(warm.unwritten, 0);
  EXPECT_LT(warm.diff, 1e-4);
  EXPECT_EQ(warm.ours.samples, 21);
  ASSERT_TRUE(warm.same_bytes_copy.has_value());
  EXPECT_GT(warm.ours.median_us, 0.0);
  EXPECT_LT(warm.ours.median_us, flushed.ours.median_us * 1.15)
      << "warm " << warm.ours.median_us << " us, flushed " << flushed.ours.median_us << " us";
}

// The command: every row is shown (the failed one as FAILED, with the reason), the summary
// counts it, and the exit code is 1.
TEST(BenchRunnerGpu, CommandShowsFailedRowsAndExitsNonZero) {
  AUTOGEMM_REQUIRE_GPU();
  const autogemm::testing::CliRun run = autogemm::testing::run_cli(
      "bench --m 4 --n 512 --k 250,256 --config \"mma 8x16x128\" --warmup 1 --iters 2");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("(FAILED: options.config = mma 8x16x128"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("     4    512    256"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1 of 2 rows FAILED: 4x512x250"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("over 1 row with a cuBLASLt baseline"), std::string::npos) << run.out;
}

// A fused-epilogue row: ours fused, our plain GEMM and the unfused sequence timed in the same
// loop, ours and the unfused D checked against the float64 reference with the whole epilogue;
// cuBLASLt's own fused epilogue is the baseline where it has one (bias + gelu_tanh), n/a with
// the reason where it has none (silu, scales).
TEST(BenchRunnerGpu, FusedEpilogueAgainstPlainUnfusedAndCublasLt) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const BenchOptions options = autogemm::testing::bench_options_for(gpu, 1, 5);
  BenchItem gelu = item(300, 1024, 512, DType::bf16);
  gelu.problem.epilogue.bias = DType::bf16;
  gelu.problem.epilogue.activation = Activation::gelu_tanh;
  BenchItem silu = item(64, 2048, 1024, DType::bf16);
  silu.problem.epilogue.bias = DType::fp32;
  silu.problem.epilogue.activation = Activation::silu;
  silu.problem.epilogue.row_scale = silu.problem.epilogue.col_scale = true;
  const auto rows = run_bench({gelu, silu}, options, gpu);
  ASSERT_EQ(rows.size(), 2u);
  for (const BenchRow& r : rows) {
    const std::string label = r.problem.epilogue.describe() + " " + r.config;
    EXPECT_EQ(r.failure, "") << label;
    EXPECT_EQ(r.diff_ref, "float64") << label;
    EXPECT_LT(r.diff, 1e-5) << label;
    EXPECT_EQ(r.unwritten, 0) << label;
    ASSERT_TRUE(r.plain.has_value() && r.unfused.has_value()) << label;
    EXPECT_EQ(r.unfused->samples, 5) << label;
    EXPECT_GT(r.unfused->median_us, 0.0) << label;
  }
  ASSERT_TRUE(rows[0].baseline.has_value()) << rows[0].baseline_unavailable;
  EXPECT_FALSE(rows[1].baseline.has_value());
  EXPECT_NE(rows[1].baseline_unavailable.find("cuBLASLt fuses only"), std::string::npos)
      << rows[1].baseline_unavailable;
}
