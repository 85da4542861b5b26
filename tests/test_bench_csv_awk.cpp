// scripts/bench_csv_rows.awk (what scripts/gpu-configs.sh prints per row) on CSV written by the
// bench report code itself: it reads columns by header name, so the diff_ref and failure columns
// (which shifted the positional fields the script used to read) and any later column cannot
// shift what it prints. Needs awk (mawk on Debian) and no GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "bench/bench_report.hpp"
#include "bench/timing.hpp"

using namespace autogemm;
using namespace autogemm::bench;
namespace fs = std::filesystem;

namespace {

struct AwkRun {
  int exit_code = -1;
  std::vector<std::string> lines;   // stdout and stderr together
};

// awk -f scripts/bench_csv_rows.awk on `csv_text`, written to a file of its own.
AwkRun run_awk(const std::string& csv_text) {
  static int counter = 0;
  const fs::path csv = fs::path(::testing::TempDir()) /
                       ("autogemm_bench_csv_awk_" + std::to_string(::getpid()) + "_" +
                        std::to_string(counter++) + ".csv");
  std::ofstream(csv, std::ios::binary) << csv_text;
  const std::string command = "awk -f " + std::string(AUTOGEMM_SOURCE_DIR) +
                              "/scripts/bench_csv_rows.awk " + csv.string() + " 2>&1";
  AwkRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) out += buffer.data();
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream in(out);
  for (std::string line; std::getline(in, line);) run.lines.push_back(line);
  fs::remove(csv);
  return run;
}

BenchRow measured_row() {
  BenchRow r;
  r.problem.m = 4096;
  r.problem.n = 7168;
  r.problem.k = 16384;
  r.config = "128x256x64 s3 c2 p g8 cl2x1/b";
  r.ours = summarize({1000.0});
  r.tflops = 962.07;
  r.gbps = 211.0;
  r.baseline = summarize({1100.0});
  r.baseline_tflops = 874.6;
  r.ratio = 1.1;
  r.diff = 1.5e-6;
  r.diff_ref = "cublaslt";
  return r;
}

}  // namespace

TEST(BenchCsvAwk, PrintsEachRowsFieldsByName) {
  BenchRow no_baseline = measured_row();   // cuBLASLt declined: checked against float64
  no_baseline.problem.m = 257;
  no_baseline.baseline.reset();
  no_baseline.ratio = 0;
  no_baseline.diff = 2.5e-4;
  no_baseline.diff_ref = "float64";
  BenchRow wrong = measured_row();   // timed, but its D is wrong
  wrong.failure = "wrong result: diff 3.000e-01 against cublaslt is not under 1e-05";
  BenchRow threw;                    // our call threw: nothing timed; commas and quotes inside
  threw.problem.m = threw.problem.n = threw.problem.k = 64;
  threw.diff = std::nan("");
  threw.failure = "options.config = \"128x256x64 s3\": needs N >= 256, got 64";
  BenchRow not_served;               // cuBLASLt declined our own call
  not_served.problem.m = not_served.problem.n = not_served.problem.k = 2049;
  not_served.diff = std::nan("");
  not_served.ours_unavailable = "m = 2049: cuBLASLt block-scaled FP8 needs M and N multiples of 4";

  std::string csv = csv_header() + "\n";
  for (const BenchRow& r : {measured_row(), no_baseline, wrong, threw, not_served})
    csv += csv_line(r) + "\n";
  const AwkRun run = run_awk(csv);
  ASSERT_EQ(run.exit_code, 0) << csv;
  ASSERT_EQ(run.lines.size(), 5u) << csv;
  EXPECT_EQ(run.lines[0],
            "   1000.0 us   962.1 TFLOP/s  cuBLASLt    1100.0 us  ratio 1.100  diff 1.500e-06 "
            "(cublaslt)  ran 128x256x64 s3 c2 p g8 cl2x1/b");
  EXPECT_EQ(run.lines[1],
            "   1000.0 us   962.1 TFLOP/s  cuBLASLt       n/a     ratio n/a  diff 2.500e-04 "
            "(float64)  ran 128x256x64 s3 c2 p g8 cl2x1/b");
  EXPECT_NE(run.lines[2].find("ratio 1.100"), std::string::npos) << run.lines[2];
  EXPECT_NE(run.lines[2].find("  FAILED: " + wrong.failure), std::string::npos) << run.lines[2];
  EXPECT_EQ(run.lines[3], "not timed: FAILED: " + threw.failure);
  EXPECT_EQ(run.lines[4].rfind("not timed: autogemm did not serve it", 0), 0u) << run.lines[4];
}

// A column added to the CSV, wherever it goes, and the columns in another order: the same
// fields are read.
TEST(BenchCsvAwk, ColumnOrderAndNewColumnsDoNotShiftIt) {
  const std::string header = csv_header(), line = csv_line(measured_row());
  const AwkRun today = run_awk(header + "\n" + line + "\n");
  ASSERT_EQ(today.exit_code, 0);
  ASSERT_EQ(today.lines.size(), 1u);
  // A new column before config and one after failure, as diff_ref and failure were added.
  const std::size_t config_column = header.find("config");
  const std::size_t config_field = line.find("\"");
  const AwkRun added = run_awk(header.substr(0, config_column) + "new_one," +
                               header.substr(config_column) + ",new_two\n" +
                               line.substr(0, config_field) + "\"x, y\"," +
                               line.substr(config_field) + ",7\n");
  ASSERT_EQ(added.exit_code, 0);
  EXPECT_EQ(added.lines, today.lines);
  // Shuffled, and without the optional diff_ref column.
  const AwkRun shuffled = run_awk(
      "ratio,config,diff,baseline_time_us,tflops,time_us,m,n,k\n"
      "1.1000,\"128x256x64 s3 c2 p g8 cl2x1/b\",1.500e-06,1100.000,962.07,1000.000,4096,7168,"
      "16384\n");
  ASSERT_EQ(shuffled.exit_code, 0);
  EXPECT_EQ(shuffled.lines, std::vector<std::string>{
                                "   1000.0 us   962.1 TFLOP/s  cuBLASLt    1100.0 us  ratio "
                                "1.100  diff 1.500e-06  ran 128x256x64 s3 c2 p g8 cl2x1/b"});
}

TEST(BenchCsvAwk, AHeaderWithoutAColumnItNeedsIsRefused) {
  const AwkRun run = run_awk("m,n,k,time_us\n64,64,64,1.0\n");
  EXPECT_EQ(run.exit_code, 2);
  ASSERT_FALSE(run.lines.empty());
  EXPECT_NE(run.lines[0].find("the header has no column tflops baseline_time_us ratio diff "
                              "config"),
            std::string::npos)
      << run.lines[0];
}
