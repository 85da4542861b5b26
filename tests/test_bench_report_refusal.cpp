// cuBLASLt declining a problem in the bench, on the host: which errors leave a call n/a (a
// runtime::CublasLtRefusal) and which fail the row; how a row autogemm did not serve (its own
// call went to cuBLASLt, which declined it) is reported: n/a with the reason, not FAILED, left
// out of the rows without a baseline and of the plot.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "bench/timing.hpp"
#include "runtime/cublaslt.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

GemmProblem fp8_problem(int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = DType::e4m3;
  p.d_type = DType::bf16;
  p.scaling = Scaling::block_1x128_128x128;
  return p;
}

constexpr const char* kDeclined =
    "m = 2049: cuBLASLt block-scaled FP8 needs M and N multiples of 4 (cuBLAS docs)";

// A row of the odd suite in FP8: K = 2049 rows TMA cannot describe, so gemm() sends it to
// cuBLASLt, which declines M = 2049; the baseline's scale conversion declined it first.
BenchRow not_served_row() {
  BenchRow r;
  r.problem = fp8_problem(2049, 2049, 2049);
  r.tag = "unaligned";
  r.diff = std::nan("");
  r.diff_limit = 1e-3;
  r.quantize_us = 35.3;
  r.ours_unavailable = kDeclined;
  r.baseline_unavailable = kDeclined;
  return r;
}

// A row ours served while cuBLASLt declined the baseline: checked against float64.
BenchRow row_without_baseline() {
  BenchRow r;
  r.problem = fp8_problem(257, 2112, 1024);
  r.tag = "odd-m";
  r.config = "128x128x128 s5 c2 p g8 pb2";
  r.ours = summarize({20.0, 21.0});
  r.baseline_unavailable = "m = 257: cuBLASLt block-scaled FP8 needs M and N multiples of 4";
  r.diff = 2.5e-4;
  r.diff_ref = "float64";
  r.diff_limit = 1e-3;
  r.checked_rows = 257;
  return r;
}

BenchRow measured_row() {
  BenchRow r = row_without_baseline();
  r.problem.m = 256;
  r.baseline_unavailable.clear();
  r.baseline = summarize({22.0});
  r.ratio = 1.1;
  r.diff = 1e-6;
  r.diff_ref = "cublaslt";
  return r;
}

}  // namespace

TEST(BenchRefusal, CublasLtDecliningIsARefusalEverythingElseFailsTheRow) {
  const runtime::CublasLtLimit limit("m", "1531", "cuBLASLt block-scaled FP8 needs M and N "
                                                  "multiples of 4");
  ASSERT_TRUE(cublaslt_refusal(limit).has_value());
  EXPECT_EQ(*cublaslt_refusal(limit), limit.what());
  const runtime::CublasLtUnsupported no_algorithm(
      "cublasLtMatmulAlgoGetHeuristic: cuBLASLt has no algorithm for M=1000 N=1000 K=1000 "
      "(CUBLAS_STATUS_NOT_SUPPORTED)");
  ASSERT_TRUE(cublaslt_refusal(no_algorithm).has_value());
  EXPECT_EQ(*cublaslt_refusal(no_algorithm), no_algorithm.what());
  // Real errors: a CUDA error, a failed cuBLASLt call, our own kernel's argument errors.
  EXPECT_FALSE(cublaslt_refusal(CudaError("cudaMallocAsync(cuBLASLt block scales): out of "
                                          "memory")).has_value());
  EXPECT_FALSE(cublaslt_refusal(CudaError("cublasLtMatmul: CUBLAS_STATUS_EXECUTION_FAILED"))
                   .has_value());
  EXPECT_FALSE(cublaslt_refusal(InvalidArgument("options.config", "128x128x64 s3 c2 p g8",
                                                "needs N >= 128")).has_value());
  EXPECT_FALSE(cublaslt_refusal(std::runtime_error("anything else")).has_value());
}

// What the cuBLASLt path really throws for a shape it declines is what the bench takes for a
// refusal (no GPU: the limit is checked before any device work).
TEST(BenchRefusal, TheCublasLtPathsRefusalIsRecognised) {
  GemmOperands ops;
  ops.a = reinterpret_cast<const void*>(0x10000);
  ops.b = reinterpret_cast<const void*>(0x20000);
  ops.d = reinterpret_cast<void*>(0x30000);
  ops.scale_a = reinterpret_cast<const float*>(0x40000);
  ops.scale_b = reinterpret_cast<const float*>(0x50000);
  try {
    runtime::cublaslt_gemm(fp8_problem(2049, 2048, 2048), ops, nullptr);
    FAIL() << "M = 2049 block-scaled FP8 was not declined";
  } catch (const Error& e) {
    const std::optional<std::string> reason = cublaslt_refusal(e);
    ASSERT_TRUE(reason.has_value()) << e.what();
    EXPECT_EQ(*reason, e.what());
  }
}

TEST(BenchRefusal, RowNotServedIsNaNotFailed) {
  const std::vector<BenchRow> rows = {measured_row(), row_without_baseline(), not_served_row()};
  EXPECT_EQ(failed_rows(rows), 0u);
  EXPECT_EQ(rows_not_served(rows), 1u);
  // Only the row ours served and checked against float64 counts as "no baseline".
  EXPECT_EQ(rows_without_baseline(rows), 1u);
  EXPECT_EQ(timed_rows(rows).size(), 2u);
  EXPECT_NEAR(geomean_ratio(rows), 1.1, 1e-12);

  const std::string table = format_table(rows);
  std::vector<std::string> lines;
  std::stringstream in(table);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << table;
  const std::string& row = lines[3];
  EXPECT_EQ(row.find("FAILED"), std::string::npos) << table;
  EXPECT_NE(row.find(" n/a "), std::string::npos) << table;
  EXPECT_NE(row.find(std::string("(not served: gemm() runs this shape through cuBLASLt, which "
                                 "declined it: ") + kDeclined + ")"),
            std::string::npos)
      << table;
  // The baseline's reason is the same refusal: said once.
  EXPECT_EQ(row.find("no cuBLASLt baseline"), std::string::npos) << table;
  EXPECT_NE(lines[2].find("no cuBLASLt baseline: m = 257"), std::string::npos) << table;

  const std::string summary = format_summary(rows, true);
  EXPECT_NE(summary.find("1.100 over 1 row with a cuBLASLt baseline"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1 of 3 rows had no cuBLASLt baseline (n/a); checked against the "
                         "float64 reference instead"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1 of 3 rows not served (n/a): gemm() runs it through cuBLASLt, which "
                         "declined it: 2049x2049x2049"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("FAILED"), std::string::npos) << summary;
  // --no-baseline: our call is declined all the same.
  EXPECT_NE(format_summary({not_served_row()}, false).find("1 of 1 row not served"),
            std::string::npos);
}

TEST(BenchRefusal, RowNotServedInJsonAndCsv) {
  const auto j = nlohmann::json::parse(rows_to_json({measured_row(), not_served_row()}));
  EXPECT_EQ(j["rows_not_served"], 1);
  EXPECT_EQ(j["failed_rows"], 0);
  EXPECT_EQ(j["rows_without_baseline"], 0);
  EXPECT_EQ(j["rows"][1]["ours_unavailable"], kDeclined);
  EXPECT_FALSE(j["rows"][1].contains("failure"));
  EXPECT_FALSE(j["rows"][1].contains("diff"));
  EXPECT_FALSE(j["rows"][0].contains("ours_unavailable"));

  // CSV: no time, no baseline, no diff and no failure; read back, it has nothing to draw.
  const std::string line = csv_line(not_served_row());
  EXPECT_EQ(line, "2049,2049,2049,fp8,nt,\"\",,,,,,,,,\"\"");
  std::stringstream csv;
  csv << csv_header() << "\n" << line << "\n" << csv_line(measured_row()) << "\n";
  const std::vector<BenchRow> read = rows_from_csv(csv, "--replot", "odd-fp8.csv");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].problem.m, 256);
}
