// The bench's suite summary (bench/bench_summary.hpp): geomean ratio to cuBLASLt, the lowest row,
// rows below 0.95 and the median prediction error, in the table's lines and in --json.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_report.hpp"
#include "bench/bench_summary.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

BenchRow row(int64_t m, double ours_us, double base_us, double predicted_us,
             const std::string& tag = "") {
  BenchRow r;
  r.problem.m = m;
  r.problem.n = 4096;
  r.problem.k = 4096;
  r.tag = tag;
  r.config = "128x128x64 s4 c2";
  r.ours = TimingStats{10, ours_us, ours_us, ours_us, ours_us};
  if (base_us > 0) {
    r.baseline = TimingStats{10, base_us, base_us, base_us, base_us};
    r.ratio = base_us / ours_us;
  }
  r.predicted_us = predicted_us;
  return r;
}

}  // namespace

TEST(BenchSummary, FourNumbersOfASuite) {
  std::vector<BenchRow> rows = {
      row(64, 10, 12, 11, "decode"),    // ratio 1.2, error 10%
      row(128, 10, 9, 13),              // 0.9 (below 0.95), error 30%
      row(256, 10, 9.4, 10.5),          // 0.94 (below), error 5%
      row(512, 10, 10, 8),              // 1.0, error 20%
      row(1024, 10, 0, 0),              // no baseline, no prediction
  };
  BenchRow failed = row(2048, 10, 1, 10);
  failed.failure = "boom";              // failed rows count nowhere
  rows.push_back(failed);
  BenchRow vendor = row(4096, 10, 10, 50);
  vendor.used_vendor = true;            // no prediction error for cuBLASLt's own time
  rows.push_back(vendor);

  const SuiteSummary s = summarize_suite(rows);
  EXPECT_EQ(s.compared, 5u);
  EXPECT_NEAR(s.geomean_ratio, std::pow(1.2 * 0.9 * 0.94 * 1.0 * 1.0, 1.0 / 5), 1e-9);
  EXPECT_DOUBLE_EQ(s.lowest_ratio, 0.9);
  EXPECT_EQ(s.lowest_shape, "128x4096x4096");
  EXPECT_EQ(s.below_low, 2u);
  EXPECT_EQ(s.predicted, 4u);
  EXPECT_NEAR(s.median_prediction_error, 0.15, 1e-12);   // (0.10 + 0.20) / 2

  const std::string text = format_suite_summary(s);
  EXPECT_NE(text.find("lowest ratio 0.900 at 128x4096x4096; 2 of 5 rows below 0.95"),
            std::string::npos) << text;
  EXPECT_NE(text.find("median prediction error"), std::string::npos) << text;
  EXPECT_NE(text.find("15.0% over 4 rows"), std::string::npos) << text;
  EXPECT_NE(format_summary(rows, true).find("lowest ratio 0.900"), std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(rows_to_json(rows))["summary"];
  EXPECT_EQ(j.at("rows_compared"), 5);
  EXPECT_EQ(j.at("rows_below_low_ratio"), 2);
  EXPECT_EQ(j.at("lowest_shape"), "128x4096x4096");
  EXPECT_DOUBLE_EQ(j.at("lowest_ratio").get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(j.at("low_ratio").get<double>(), 0.95);
  EXPECT_NEAR(j.at("median_prediction_error").get<double>(), 0.15, 1e-12);
}

TEST(BenchSummary, LowestRowNamesItsTagAndEmptySuitesSayNothing) {
  const SuiteSummary s = summarize_suite({row(64, 10, 8, 0, "decode")});
  EXPECT_EQ(s.lowest_shape, "64x4096x4096 (decode)");
  EXPECT_EQ(s.predicted, 0u);
  EXPECT_EQ(format_suite_summary(s).find("prediction"), std::string::npos);
  const SuiteSummary none = summarize_suite({});
  EXPECT_EQ(format_suite_summary(none), "");
  EXPECT_FALSE(summary_json(none).contains("lowest_shape"));
}

// A fused-epilogue run: what fusing saves (unfused / fused, geomean) and what it costs on the
// compute-bound rows (fused / plain - 1, the largest), in the table's columns, the lines under
// it and --json.
TEST(BenchSummary, FusedEpilogueSavingsAndCost) {
  const auto fused = [](int64_t m, double ours_us, double plain_us, double unfused_us) {
    BenchRow r = row(m, ours_us, 0, 0);
    r.problem.epilogue.bias = DType::bf16;
    r.problem.epilogue.activation = Activation::silu;
    r.plain = TimingStats{10, plain_us, plain_us, plain_us, plain_us};
    r.unfused = TimingStats{10, unfused_us, unfused_us, unfused_us, unfused_us};
    return r;
  };
  std::vector<BenchRow> rows = {fused(64, 10, 9.5, 15),        // saves 1.5x
                                fused(4096, 100, 98, 120),     // costs 2.0%
                                fused(8192, 200, 190, 240)};   // costs 5.3%
  BenchRow failed = fused(16384, 1, 1, 100);
  failed.failure = "boom";
  rows.push_back(failed);
  const EpilogueSummary s = summarize_epilogue(rows);
  EXPECT_EQ(s.rows, 3u);
  EXPECT_NEAR(s.geomean_unfused_over_fused, std::cbrt(1.5 * 1.2 * 1.2), 1e-9);
  EXPECT_EQ(s.compute_bound_rows, 2u);
  EXPECT_NEAR(s.max_compute_bound_overhead, 200.0 / 190 - 1, 1e-12);
  EXPECT_EQ(s.max_overhead_shape, "8192x4096x4096");

  const std::string table = format_table(rows);
  EXPECT_NE(table.find("unfused_us"), std::string::npos) << table;
  EXPECT_NE(table.find("+5.3%"), std::string::npos) << table;
  EXPECT_NE(table.find("1.500"), std::string::npos) << table;
  const std::string summary = format_summary(rows, false);
  EXPECT_NE(summary.find("unfused sequence / fused, geomean 1.293 over 3 rows"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("at M >= 4096: +5.3% (8192x4096x4096) over 2 rows"), std::string::npos)
      << summary;
  const nlohmann::json j = nlohmann::json::parse(rows_to_json(rows));
  EXPECT_EQ(j.at("epilogue").at("rows"), 3);
  EXPECT_EQ(j.at("rows").at(0).at("epilogue"), "bias bf16, silu");
  EXPECT_DOUBLE_EQ(j.at("rows").at(0).at("unfused_time_us").get<double>(), 15.0);

  // A plain run says nothing of it.
  EXPECT_EQ(summarize_epilogue({row(64, 10, 12, 0)}).rows, 0u);
  EXPECT_EQ(format_table({row(64, 10, 12, 0)}).find("unfused_us"), std::string::npos);
}
