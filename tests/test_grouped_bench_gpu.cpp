// `autogemm bench --grouped` on a GPU (skipped without a Hopper GPU): two small rows end to end
// (a contiguous and a masked one: ours checked against the float64 reference and untouched rows
// past masked_m, both baselines run, compared with ours and timed, the masked row's own-bytes
// copy, the dense twin timed), the same two rows in block-scaled FP8 (checked against the
// unquantised inputs, the block-scaled cuBLASLt loop, grouped-batched n/a), an FP32 D that
// cuBLAS's grouped-batched call may decline (n/a, the row goes on), a suite whose calls all fail
// (each row FAILED, none stops the run), and the command itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "bench/grouped_bench.hpp"
#include "bench/grouped_report.hpp"
#include "cli_test_util.hpp"
#include "bench_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

GroupedCase make_case(Grouping kind, int64_t groups, int64_t m, int64_t n, int64_t k, int line) {
  GroupedCase c;
  c.kind = kind;
  c.groups = groups;
  c.m_per_group = m;
  c.n = n;
  c.k = k;
  c.tag = "test";
  c.line = line;
  return c;
}

// Two rows small enough for the reference to check every row of every group: a contiguous row
// whose groups straddle the 128-row padding, and a masked row with 40-ish of 64 rows valid.
std::vector<GroupedItem> two_rows(DType out, DType in = DType::bf16) {
  return make_grouped_items({make_case(Grouping::contiguous, 3, 100, 256, 256, 1),
                             make_case(Grouping::masked, 4, 40, 128, 256, 2)},
                            "test", in, out, 2026);
}

}  // namespace

TEST(GroupedBenchGpu, TwoRowsEndToEnd) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  std::size_t progress_calls = 0;
  const std::vector<GroupedItem> items = two_rows(DType::bf16);
  const std::vector<GroupedRow> rows =
      run_grouped_bench(items, autogemm::testing::bench_options_for(gpu, 1, 3),
                        [&](std::size_t, std::size_t, const GroupedItem*) { ++progress_calls; });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(progress_calls, 3u);
  for (const GroupedRow& r : rows) {
    const std::string label = grouped_label(r.item) + " " + r.config;
    EXPECT_EQ(r.failure, "") << label;
    EXPECT_FALSE(r.config.empty()) << label;
    EXPECT_EQ(r.unwritten, 0) << label;
    EXPECT_LT(r.diff, 1e-5) << label;
    EXPECT_GE(r.worst_group, 0) << label;
    EXPECT_EQ(r.checked_rows, r.item.valid_rows()) << label;   // small: every row checked
    EXPECT_EQ(r.ours.samples, 3) << label;
    EXPECT_NEAR(r.tflops, r.item.useful_flops() / r.ours.median_us * 1e-6, 1e-9) << label;
    EXPECT_NEAR(r.gbps, r.item.bytes() / r.ours.median_us * 1e-3, 1e-9) << label;
    // The loop runs, agrees with ours over every valid row, and is timed as one CUDA graph.
    ASSERT_TRUE(r.loop.time.has_value()) << label << " " << r.loop.unavailable;
    EXPECT_LT(r.loop.diff_to_ours, 1e-5) << label;
    EXPECT_NEAR(r.loop.ratio, r.loop.time->median_us / r.ours.median_us, 1e-12) << label;
    EXPECT_EQ(r.loop.note, "") << label;
    // cuBLAS 12.5+ has the grouped-batched call and its documented types include bf16 -> bf16.
    ASSERT_TRUE(r.batched.time.has_value()) << label << " " << r.batched.unavailable;
    EXPECT_LT(r.batched.diff_to_ours, 1e-5) << label;
    // Our dense kernel on the same valid rows, timed in the same loop.
    ASSERT_TRUE(r.dense.time.has_value()) << label << " " << r.dense.unavailable;
    EXPECT_FALSE(r.dense.config.empty()) << label;
    EXPECT_NEAR(r.dense.ratio, r.dense.time->median_us / r.ours.median_us, 1e-12) << label;
  }
  EXPECT_FALSE(rows[0].same_bytes_copy.has_value());   // contiguous: no copy share
  ASSERT_TRUE(rows[1].same_bytes_copy.has_value());
  EXPECT_GT(same_bytes_share(rows[1]), 0.0);
  EXPECT_EQ(rows[1].poison_changed, 0);
  EXPECT_EQ(grouped_failed_rows(rows), 0u);
  EXPECT_GT(geomean_loop_ratio(rows), 0.0);
}

// Block-scaled FP8 in both layouts (groups of ragged M, most not multiples of 4), D bf16 and
// fp32: each group judged against the float64 product of the unquantised BF16 data (DeepGEMM's
// diff < 1e-3, and above 1e-6: the quantisation shows, so the reference did not multiply the
// e4m3 values), every valid entry written, masked rows past masked_m keep their poison; the
// block-scaled cuBLASLt loop agrees with ours (or, on a cuBLAS without block scaling, is n/a),
// cublasGemmGroupedBatchedEx is n/a, the dense twin is timed.
TEST(GroupedBenchGpu, Fp8RowsAgainstTheUnquantisedInputs) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  for (DType out : {DType::bf16, DType::fp32}) {
    const std::vector<GroupedRow> rows =
        run_grouped_bench(two_rows(out, DType::e4m3), autogemm::testing::bench_options_for(gpu, 1, 3));
    ASSERT_EQ(rows.size(), 2u);
    for (const GroupedRow& r : rows) {
      const std::string label = grouped_label(r.item) + " -> " + std::string(to_string(out)) +
                                " " + r.config;
      EXPECT_TRUE(block_scaled_fp8(r.item.problem)) << label;
      EXPECT_EQ(r.failure, "") << label;
      EXPECT_EQ(r.diff_limit, 1e-3) << label;
      EXPECT_LT(r.diff, 1e-3) << label;
      EXPECT_GT(r.diff, 1e-6) << label;
      EXPECT_EQ(r.unwritten, 0) << label;
      EXPECT_EQ(r.checked_rows, r.item.valid_rows()) << label;
      EXPECT_EQ(r.poison_changed, 0) << label;
      EXPECT_EQ(r.ours.samples, 3) << label;
      if (r.loop.time) {
        EXPECT_LT(r.loop.diff_to_ours, 1e-4) << label;
      } else {
        EXPECT_NE(r.loop.unavailable.find("block scaling"), std::string::npos)
            << label << " " << r.loop.unavailable;
      }
      EXPECT_FALSE(r.batched.time.has_value()) << label;
      EXPECT_NE(r.batched.unavailable.find("takes no block-scaled FP8"), std::string::npos)
          << label << " " << r.batched.unavailable;
      ASSERT_TRUE(r.dense.time.has_value()) << label << " " << r.dense.unavailable;
      EXPECT_GT(r.dense.ratio, 0.0) << label;
    }
    EXPECT_EQ(rows[1].item.problem.grouping, Grouping::masked);
    EXPECT_EQ(grouped_failed_rows(rows), 0u);
    EXPECT_NE(format_grouped_summary(rows, true).find("n/a on every FP8 row"), std::string::npos);
  }
}

// An FP32 D from bf16 inputs is not among cublasGemmGroupedBatchedEx's documented types: when
// cuBLAS declines it the baseline is n/a with cuBLAS's status, and the row is still checked,
// timed against the loop and not FAILED.
TEST(GroupedBenchGpu, AGroupedBatchedRefusalIsNaNotAFailure) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const std::vector<GroupedRow> rows = run_grouped_bench(two_rows(DType::fp32),
                                                         autogemm::testing::bench_options_for(gpu, 0, 2));
  ASSERT_EQ(rows.size(), 2u);
  for (const GroupedRow& r : rows) {
    const std::string label = grouped_label(r.item);
    EXPECT_EQ(r.failure, "") << label;
    EXPECT_LT(r.diff, 1e-5) << label;
    EXPECT_TRUE(r.loop.time.has_value()) << label << " " << r.loop.unavailable;
    if (!r.batched.time)
      EXPECT_NE(r.batched.unavailable.find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos)
          << label << " " << r.batched.unavailable;
  }
  if (!rows[0].batched.time)
    EXPECT_NE(format_grouped_table(rows).find("n/a"), std::string::npos);
}

// Every call fails (the forced vendor path: grouped_gemm() has no cuBLASLt form): each row says
// FAILED and why, nothing of it is timed, and the run goes on to the next row.
TEST(GroupedBenchGpu, AFailingRowDoesNotStopTheSuite) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  BenchOptions options = autogemm::testing::bench_options_for(gpu, 0, 1);
  options.config = GemmConfig::parse("cuBLASLt");
  const std::vector<GroupedRow> rows = run_grouped_bench(two_rows(DType::bf16), options);
  ASSERT_EQ(rows.size(), 2u);
  for (const GroupedRow& r : rows) {
    EXPECT_NE(r.failure, "") << grouped_label(r.item);
    EXPECT_EQ(r.ours.samples, 0);
  }
  EXPECT_EQ(grouped_failed_rows(rows), 2u);
  EXPECT_NE(format_grouped_summary(rows, true).find("2 of 2 rows FAILED: line 1 line 2"),
            std::string::npos);
}

TEST(GroupedBenchGpu, TheCommandMeasuresASuiteAndWritesItsCsv) {
  AUTOGEMM_REQUIRE_GPU();
  const std::string suite = ::testing::TempDir() + "autogemm_grouped_gpu_suite.csv";
  const std::string csv = ::testing::TempDir() + "autogemm_grouped_gpu_suite_out.csv";
  {
    std::ofstream f(suite);
    f << "kind,groups,m_per_group,n,k,tag\ncontiguous,2,130,256,128,a\nmasked,3,20,256,128,b\n";
  }
  std::remove(csv.c_str());
  const auto run = autogemm::testing::run_cli("bench --grouped " + suite +
                                              " --warmup 1 --iters 2 --csv " + csv);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("geomean ratio against the per-group cuBLASLt loop"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("grouped TFLOP/s / our dense kernel's"), std::string::npos) << run.out;
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, grouped_csv_header());
  int lines = 0;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 2);
  std::remove(suite.c_str());
  std::remove(csv.c_str());
}
