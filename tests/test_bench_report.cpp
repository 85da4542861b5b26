// Bench output on the host: the exact CSV header, CSV quoting, JSON, statistics, progress; rows
// without a baseline (n/a, checked against the float64 reference) and rows that FAILED.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/timing.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

GemmProblem bf16_problem(int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

BenchRow measured_row() {
  BenchRow r;
  r.problem = bf16_problem(4096, 7168, 16384);
  r.tag = "prefill";
  r.config = "128x256x64 s3 c2 p g8 cl2x1/b";
  r.ours = summarize({1000.0, 1010.0, 990.0});
  r.tflops = r.problem.flops() / r.ours.median_us * 1e-6;
  r.gbps = r.problem.min_bytes() / r.ours.median_us * 1e-3;
  r.baseline = summarize({1100.0});
  r.baseline_tflops = r.problem.flops() / 1100.0 * 1e-6;
  r.ratio = 1.1;
  r.diff = 1.5e-6;
  r.diff_ref = "cublaslt";
  r.diff_limit = 1e-5;
  r.checked_rows = r.problem.m;
  return r;
}

// A row cuBLASLt could not serve: no baseline, checked against the float64 reference.
BenchRow row_without_baseline() {
  BenchRow r = measured_row();
  r.problem.m = 257;
  r.baseline.reset();
  r.ratio = 0;
  r.baseline_unavailable =
      "m = 257: cuBLASLt block-scaled FP8 needs M and N multiples of 4";
  r.diff = 2.5e-4;
  r.diff_ref = "float64";
  r.diff_limit = 1e-3;
  r.checked_rows = 257;
  return r;
}

// A row whose call threw: nothing timed.
BenchRow failed_row() {
  BenchRow r;
  r.problem = bf16_problem(64, 100, 64);
  r.tag = "odd";
  r.diff = std::nan("");
  r.failure = "options.config = 128x256x64 s3 c2 p g8: needs N >= 256";
  return r;
}

// Splits one CSV line, honouring RFC 4180 quotes.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

TEST(BenchReport, CsvHeaderIsExact) {
  EXPECT_EQ(csv_header(),
            "m,n,k,dtype,layout,config,time_us,tflops,gbps,baseline_time_us,baseline_tflops,"
            "ratio,diff,diff_ref,failure");
}

TEST(BenchReport, CsvLineHasTheHeaderFieldsInOrder) {
  const BenchRow r = measured_row();
  const auto fields = csv_fields(csv_line(r));
  ASSERT_EQ(fields.size(), 15u) << csv_line(r);
  EXPECT_EQ(fields[0], "4096");
  EXPECT_EQ(fields[1], "7168");
  EXPECT_EQ(fields[2], "16384");
  EXPECT_EQ(fields[3], "bf16");
  EXPECT_EQ(fields[4], "nt");
  EXPECT_EQ(fields[5], r.config);
  EXPECT_NEAR(std::stod(fields[6]), 1000.0, 1e-9);
  EXPECT_NEAR(std::stod(fields[7]), r.tflops, 0.01);
  EXPECT_NEAR(std::stod(fields[8]), r.gbps, 0.01);
  EXPECT_NEAR(std::stod(fields[9]), 1100.0, 1e-9);
  EXPECT_NEAR(std::stod(fields[10]), r.baseline_tflops, 0.01);
  EXPECT_NEAR(std::stod(fields[11]), 1.1, 1e-9);
  EXPECT_NEAR(std::stod(fields[12]), 1.5e-6, 1e-9);
  EXPECT_EQ(fields[13], "cublaslt");
  EXPECT_EQ(fields[14], "");
  // The config is always quoted (it may hold commas in the future).
  EXPECT_NE(csv_line(r).find(",\"128x256x64 s3"), std::string::npos);
}

TEST(BenchReport, CsvQuotesInsideConfigAreDoubled) {
  BenchRow r = measured_row();
  r.config = "odd, \"quoted\" config";
  const auto fields = csv_fields(csv_line(r));
  ASSERT_EQ(fields.size(), 15u);
  EXPECT_EQ(fields[5], r.config);
}

TEST(BenchReport, CsvWithoutBaselineLeavesItsFieldsEmpty) {
  BenchRow r = measured_row();
  r.baseline.reset();
  r.diff_ref.clear();   // --no-baseline: nothing compared
  const auto fields = csv_fields(csv_line(r));
  ASSERT_EQ(fields.size(), 15u);
  for (int i = 9; i < 15; ++i) EXPECT_EQ(fields[std::size_t(i)], "") << "field " << i;
}

TEST(BenchReport, CsvRowWithoutBaselineStillHasItsFloat64Diff) {
  const auto fields = csv_fields(csv_line(row_without_baseline()));
  ASSERT_EQ(fields.size(), 15u);
  for (int i = 9; i < 12; ++i) EXPECT_EQ(fields[std::size_t(i)], "") << "field " << i;
  EXPECT_NEAR(std::stod(fields[12]), 2.5e-4, 1e-9);
  EXPECT_EQ(fields[13], "float64");
  EXPECT_EQ(fields[14], "");
}

TEST(BenchReport, CsvFailedRowHasNoTimesAndSaysWhy) {
  const BenchRow r = failed_row();
  const auto fields = csv_fields(csv_line(r));
  ASSERT_EQ(fields.size(), 15u) << csv_line(r);
  for (int i = 6; i < 14; ++i) EXPECT_EQ(fields[std::size_t(i)], "") << "field " << i;
  EXPECT_EQ(fields[14], r.failure);
  // Read back: the failed row has nothing to draw and is skipped; the others keep their check.
  std::stringstream csv;
  csv << csv_header() << "\n" << csv_line(r) << "\n" << csv_line(row_without_baseline()) << "\n";
  const std::vector<BenchRow> rows = rows_from_csv(csv, "--replot", "x.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem.m, 257);
  EXPECT_EQ(rows[0].diff_ref, "float64");
  EXPECT_FALSE(rows[0].baseline.has_value());
}

TEST(BenchReport, CsvWrittenBeforeDiffRefReadsTheDiffAsCublasLts) {
  std::stringstream csv(
      "m,n,k,dtype,layout,config,time_us,tflops,gbps,baseline_time_us,baseline_tflops,ratio,"
      "diff\n64,7168,2048,bf16,nt,\"c\",10.000,1.00,1.00,11.000,1.00,1.1000,2.000e-06\n"
      "64,7168,2048,bf16,nt,\"c\",10.000,1.00,1.00,,,,\n");
  const std::vector<BenchRow> rows = rows_from_csv(csv, "--replot", "old.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].diff_ref, "cublaslt");
  EXPECT_NEAR(rows[0].diff, 2e-6, 1e-12);
  EXPECT_EQ(rows[1].diff_ref, "");
  EXPECT_TRUE(std::isnan(rows[1].diff));
}

TEST(BenchReport, Fp8RowsSayFp8) {
  BenchRow r = measured_row();
  r.problem.a_type = r.problem.b_type = DType::e4m3;
  r.problem.scaling = Scaling::block_1x128_128x128;
  EXPECT_EQ(csv_fields(csv_line(r))[3], "fp8");
  EXPECT_EQ(dtype_label(r.problem), "fp8");
}

TEST(BenchReport, JsonHoldsRowsAndGeomean) {
  BenchRow a = measured_row(), b = measured_row();
  b.ratio = 4.4;
  b.baseline_fp8_per_tensor = summarize({500.0});
  const auto j = nlohmann::json::parse(rows_to_json({a, b}));
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["m"], 4096);
  EXPECT_EQ(j["rows"][0]["config"], a.config);
  EXPECT_EQ(j["rows"][0]["tag"], "prefill");
  EXPECT_DOUBLE_EQ(j["rows"][0]["time_us"].get<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(j["rows"][0]["min_time_us"].get<double>(), 990.0);
  EXPECT_DOUBLE_EQ(j["rows"][0]["baseline_time_us"].get<double>(), 1100.0);
  EXPECT_FALSE(j["rows"][0].contains("baseline_fp8_per_tensor_time_us"));
  EXPECT_DOUBLE_EQ(j["rows"][1]["baseline_fp8_per_tensor_time_us"].get<double>(), 500.0);
  EXPECT_NEAR(j["geomean_ratio"].get<double>(), std::sqrt(1.1 * 4.4), 1e-12);
}

TEST(BenchReport, JsonSaysWhatTheDiffIsAgainstAndWhichRowsFailed) {
  const auto j = nlohmann::json::parse(
      rows_to_json({measured_row(), row_without_baseline(), failed_row()}));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["diff_ref"], "cublaslt");
  EXPECT_EQ(j["rows"][1]["diff_ref"], "float64");
  EXPECT_DOUBLE_EQ(j["rows"][1]["diff"].get<double>(), 2.5e-4);
  EXPECT_DOUBLE_EQ(j["rows"][1]["diff_limit"].get<double>(), 1e-3);
  EXPECT_EQ(j["rows"][1]["checked_rows"], 257);
  EXPECT_FALSE(j["rows"][1].contains("ratio"));
  EXPECT_FALSE(j["rows"][0].contains("failure"));
  EXPECT_EQ(j["rows"][2]["failure"], failed_row().failure);
  EXPECT_FALSE(j["rows"][2].contains("diff"));
  EXPECT_EQ(j["rows_without_baseline"], 1);
  EXPECT_EQ(j["failed_rows"], 1);
  EXPECT_NEAR(j["geomean_ratio"].get<double>(), 1.1, 1e-12);
}

TEST(BenchReport, TableShowsNaForAMissingBaselineAndFailedRows) {
  BenchRow no_baseline_asked = measured_row();
  no_baseline_asked.baseline.reset();
  no_baseline_asked.diff_ref.clear();
  const std::string table =
      format_table({measured_row(), row_without_baseline(), failed_row(), no_baseline_asked});
  std::vector<std::string> lines;
  std::stringstream in(table);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << table;
  EXPECT_NE(lines[0].find("ref"), std::string::npos) << table;
  EXPECT_NE(lines[1].find("cuBLASLt"), std::string::npos) << table;
  EXPECT_NE(lines[2].find("n/a"), std::string::npos) << table;
  EXPECT_NE(lines[2].find("2.50e-04 float64"), std::string::npos) << table;
  EXPECT_NE(lines[2].find("no cuBLASLt baseline: m = 257"), std::string::npos) << table;
  EXPECT_NE(lines[3].find("FAILED"), std::string::npos) << table;
  EXPECT_NE(lines[3].find("(FAILED: options.config = 128x256x64"), std::string::npos) << table;
  EXPECT_EQ(lines[4].find("n/a"), std::string::npos) << table;   // not asked for: "-"
}

TEST(BenchReport, SummaryCountsRowsWithoutBaselineAndFailures) {
  std::vector<BenchRow> rows;
  for (int i = 0; i < 9; ++i) rows.push_back(measured_row());
  for (int i = 0; i < 3; ++i) rows.push_back(row_without_baseline());
  std::string summary = format_summary(rows, true);
  EXPECT_NE(summary.find("geomean ratio (cuBLASLt time / ours; > 1: autogemm faster): 1.100 over "
                         "9 rows with a cuBLASLt baseline"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("3 of 12 rows had no cuBLASLt baseline (n/a)"), std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("FAILED"), std::string::npos) << summary;

  BenchRow wrong = measured_row();   // timed, with a baseline, but its D is wrong
  wrong.ratio = 100;
  wrong.failure = "wrong result: diff 3.000e-01 against cublaslt is not under 1e-05";
  rows.push_back(wrong);
  rows.push_back(failed_row());
  summary = format_summary(rows, true);
  EXPECT_NE(summary.find("1.100 over 9 rows"), std::string::npos) << summary;  // not the wrong one
  EXPECT_NE(summary.find("3 of 14 rows had no cuBLASLt baseline"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2 of 14 rows FAILED: 4096x7168x16384 64x100x64"), std::string::npos)
      << summary;
  EXPECT_EQ(failed_rows(rows), 2u);
  EXPECT_EQ(rows_without_baseline(rows), 3u);
  EXPECT_EQ(timed_rows(rows).size(), 13u);
  // --no-baseline: no ratio line.
  EXPECT_EQ(format_summary({failed_row()}, false).find("geomean"), std::string::npos);
}

TEST(BenchReport, TableShowsEachRow) {
  const std::string table = format_table({measured_row()});
  EXPECT_NE(table.find("128x256x64 s3 c2 p g8 cl2x1/b"), std::string::npos);
  EXPECT_NE(table.find("1000.00"), std::string::npos) << table;
  EXPECT_NE(table.find("1.100"), std::string::npos) << table;
}

TEST(BenchReport, TableAddsThePerTensorColumnForFp8) {
  BenchRow fp8 = measured_row();
  fp8.baseline_fp8_per_tensor = summarize({777.0});
  const std::string table = format_table({measured_row(), fp8});
  EXPECT_NE(table.find("per-tensor"), std::string::npos) << table;
  EXPECT_NE(table.find("777.00"), std::string::npos) << table;
  EXPECT_EQ(format_table({measured_row()}).find("per-tensor"), std::string::npos);
}

TEST(BenchReport, ProgressText) {
  EXPECT_EQ(progress_text(0, 4, nullptr, 8), "[>       ] 0/4");
  BenchItem item{bf16_problem(64, 7168, 2048), "decode"};
  EXPECT_EQ(progress_text(2, 4, &item, 8), "[====>   ] 2/4 64x7168x2048");
  EXPECT_EQ(progress_text(4, 4, nullptr, 8), "[========] 4/4");
}

TEST(BenchTiming, MedianOddEvenMinMaxMean) {
  const TimingStats odd = summarize({5.0, 1.0, 3.0});
  EXPECT_EQ(odd.samples, 3);
  EXPECT_EQ(odd.median_us, 3.0);
  EXPECT_EQ(odd.min_us, 1.0);
  EXPECT_EQ(odd.max_us, 5.0);
  EXPECT_EQ(odd.mean_us, 3.0);
  const TimingStats even = summarize({4.0, 1.0, 10.0, 2.0});
  EXPECT_EQ(even.median_us, 3.0);  // mean of 2 and 4
  EXPECT_EQ(even.mean_us, 4.25);
  EXPECT_THROW(summarize({}), InvalidArgument);
}

TEST(BenchTiming, GeometricMeanSkipsNonPositive) {
  EXPECT_NEAR(geometric_mean({2.0, 8.0}), 4.0, 1e-12);
  EXPECT_NEAR(geometric_mean({2.0, 0.0, -1.0, 8.0, NAN}), 4.0, 1e-12);
  EXPECT_EQ(geometric_mean({}), 0.0);
  BenchRow with = measured_row(), without = measured_row();
  without.baseline.reset();
  without.ratio = 100;  // ignored: no baseline
  EXPECT_NEAR(geomean_ratio({with, without}), 1.1, 1e-12);
}
