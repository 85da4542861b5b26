// The FP8 fields of bench reports on the host: quantisation time and unavailable baselines in
// JSON and in the table; the frozen CSV keeps its columns and leaves the baseline empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_report.hpp"
#include "bench/timing.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

BenchRow fp8_row(bool with_baseline) {
  BenchRow r;
  r.problem.m = 64;
  r.problem.n = 7168;
  r.problem.k = 16384;
  r.problem.a_type = r.problem.b_type = DType::e4m3;
  r.problem.scaling = Scaling::block_1x128_128x128;
  r.tag = "decode";
  r.config = "cuBLASLt";
  r.used_vendor = true;
  r.ours = summarize({100.0, 101.0});
  r.quantize_us = 12.5;
  r.baseline_fp8_per_tensor = summarize({90.0});
  if (with_baseline) {
    r.baseline = summarize({110.0});
    r.ratio = 1.1;
  } else {
    r.baseline_unavailable = "cuBLASLt 12.8.4 has no 128-element / 128x128 block scaling";
    r.diff = std::nan("");
  }
  return r;
}

}  // namespace

TEST(BenchReportFp8, JsonCarriesQuantizeTimeAndWhyABaselineIsMissing) {
  const nlohmann::json j = nlohmann::json::parse(rows_to_json({fp8_row(false), fp8_row(true)}));
  const auto& missing = j["rows"][0];
  EXPECT_EQ(missing["quantize_us"].get<double>(), 12.5);
  EXPECT_EQ(missing["baseline_unavailable"].get<std::string>(), fp8_row(false).baseline_unavailable);
  EXPECT_FALSE(missing.contains("baseline_time_us"));
  EXPECT_FALSE(missing.contains("ratio"));
  EXPECT_TRUE(missing.contains("baseline_fp8_per_tensor_time_us"));
  const auto& present = j["rows"][1];
  EXPECT_FALSE(present.contains("baseline_unavailable"));
  EXPECT_EQ(present["ratio"].get<double>(), 1.1);
  // Only the row with a baseline counts in the geometric mean.
  EXPECT_DOUBLE_EQ(j["geomean_ratio"].get<double>(), 1.1);
}

TEST(BenchReportFp8, Bf16RowsHaveNoFp8Fields) {
  BenchRow r;
  r.problem.m = r.problem.n = r.problem.k = 128;
  r.ours = summarize({5.0});
  const nlohmann::json j = nlohmann::json::parse(rows_to_json({r}));
  EXPECT_FALSE(j["rows"][0].contains("quantize_us"));
  EXPECT_FALSE(j["rows"][0].contains("baseline_unavailable"));
}

TEST(BenchReportFp8, TableAndCsv) {
  const std::string table = format_table({fp8_row(false)});
  EXPECT_NE(table.find("no cuBLASLt baseline: cuBLASLt 12.8.4"), std::string::npos) << table;
  EXPECT_NE(table.find("quantise A, B: 12.50 us"), std::string::npos) << table;
  const std::string line = csv_line(fp8_row(false));
  EXPECT_EQ(line.substr(line.size() - 8), ",,,,,,\"\"") << line;  // baseline and diff empty
  const std::string header = csv_header();
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), std::count(header.begin(), header.end(), ','))
      << line;
}
