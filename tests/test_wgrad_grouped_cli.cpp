// Grouped (mixture-of-experts) weight gradients on the command line: `plan --wgrad --groups G`
// and `bench --wgrad FILE` with a grouped suite (bench/suites/wgrad-moe.csv). Without a GPU: the
// plan's experts line and its refusals, the suite's parsing and drawn runs, the bench's refusals
// and its plan of every row, the report's columns. On an sm_90a GPU: small rows through the bench
// (ours checked against float64 and the cuBLASLt loop, both timed), a row whose calls fail, and
// the command end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "bench/grouped_wgrad_bench.hpp"
#include "bench/grouped_wgrad_report.hpp"
#include "bench/grouped_wgrad_suite.hpp"
#include "bench_test_util.hpp"
#include "cli_test_util.hpp"
#include "error_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using namespace autogemm::bench;
using autogemm::testing::expect_invalid;
using autogemm::testing::run_cli;

namespace {

const std::string kMoeSuite = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/wgrad-moe.csv";
const std::string kDenseSuite =
    std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/wgrad-dense.csv";

std::vector<GroupedWgradCase> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_grouped_wgrad_suite(in, "suite.csv");
}

GroupedWgradCase make_case(int64_t m, int64_t n, int64_t tokens_per_group, int64_t groups,
                           int line) {
  GroupedWgradCase c;
  c.m = m;
  c.n = n;
  c.tokens_per_group = tokens_per_group;
  c.groups = groups;
  c.tag = "test";
  c.line = line;
  return c;
}

// A suite file of `text` in the temporary folder, removed with it.
class SuiteFile {
 public:
  explicit SuiteFile(const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("wgrad-moe-test-" +
               std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
               std::to_string(counter_++) + ".csv")) {
    std::ofstream(path_) << text;
  }
  ~SuiteFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace

TEST(WgradGroupedCli, PlanPrintsTheExperts) {
  const auto run = run_cli("plan --wgrad --groups 8 --m 4096 --n 14336 --k 16384 --device h200");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("wgrad      8 experts: dW [8, 4096, 14336] += dY_g^T X_g, expert g over "
                         "its run of the 16384 tokens (2048 expected per expert)"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("-> fp32, layout tn"), std::string::npos) << run.out;
  // Neither the dense line nor the grouped GEMM's (rows along M) describes it.
  EXPECT_EQ(run.out.find("dW [4096, 14336] += dY^T X"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("grouped    "), std::string::npos) << run.out;
  // Without --k, the experts give it: K = groups x tokens per group.
  const auto derived =
      run_cli("plan --wgrad --groups 32 --tokens-per-group 512 --m 4096 --n 7168 --device h200");
  EXPECT_EQ(derived.exit_code, 0) << derived.out;
  EXPECT_NE(derived.out.find("M=4096 N=7168 K=16384"), std::string::npos) << derived.out;
  EXPECT_NE(derived.out.find("the 16384 tokens (512 expected per expert)"), std::string::npos)
      << derived.out;
  // An expected count other than K / groups is what the planner is told.
  const auto json = run_cli(
      "plan --wgrad --groups 4 --tokens-per-group 100 --m 64 --n 64 --k 1000 --device h200 "
      "--json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"expected_group_k\": 100"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"grouping\": \"k_contiguous\""), std::string::npos) << json.out;
}

TEST(WgradGroupedCli, PlanRefusesBadArguments) {
  const std::string shape = " --m 4096 --n 7168 --k 16384 --device h200";
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"plan --wgrad --groups 0" + shape, "--groups = 0: must be >= 1"},
           {"plan --wgrad --groups 4 --m 4000 --n 64 --k 64 --device h200", "multiple of 64"},
           {"plan --wgrad --groups 4 --m 64 --n 64 --device h200", "--k = (not given)"},
           {"plan --wgrad --groups 4 --tokens-per-group 0" + shape, "--tokens-per-group = 0"},
           {"plan --wgrad --tokens-per-group 8" + shape, "goes with --wgrad --groups"},
           {"plan --tokens-per-group 8 --groups 4" + shape, "goes with --wgrad --groups"},
           {"plan --wgrad --groups 4 --m-per-group 8" + shape, "--tokens-per-group"},
           {"plan --wgrad --grouped contiguous --groups 4" + shape, "--wgrad --groups G"},
           {"plan --wgrad --groups 4 --dtype fp8" + shape, "type"},
           {"plan --wgrad --groups 4 --out-dtype bf16" + shape, "dw_type"},
           {"plan --m 64 --n 64 --device h200", "--k = (not given): is required"}}) {
    const auto run = run_cli(args);
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.out;
    EXPECT_NE(run.out.find(says), std::string::npos) << args << "\n" << run.out;
  }
}

TEST(WgradGroupedCli, SuiteParsing) {
  const auto cases = parse("# experts\nm,n,tokens_per_group,groups,tag\n"
                           "4096,7168,512,32,dsv3  # trailing comment\n\n128,256,100,4,small\n");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0], (GroupedWgradCase{4096, 7168, 512, 32, "dsv3", 3}));
  EXPECT_EQ(cases[1].line, 5);
  // Columns in any order, tag optional.
  const auto reordered = parse("groups,tokens_per_group,n,m\n8,64,2048,768\n");
  ASSERT_EQ(reordered.size(), 1u);
  EXPECT_EQ(reordered[0].m, 768);
  EXPECT_EQ(reordered[0].groups, 8);
  expect_invalid([] { parse("m,n,k\n64,64,64\n"); }, "suite.csv line 1");
  expect_invalid([] { parse("m,n,tokens_per_group,groups\n64,64,64,0\n"); },
                 "suite.csv line 2 column groups");
  expect_invalid([] { parse("m,n,tokens_per_group,groups\n64,64,x,2\n"); },
                 "suite.csv line 2 column tokens_per_group");
  expect_invalid([] { parse("m,n,tokens_per_group,groups\n64,64,2\n"); }, "suite.csv line 2");
  // The header says which --wgrad suite a file is.
  EXPECT_TRUE(is_grouped_wgrad_suite(kMoeSuite));
  EXPECT_FALSE(is_grouped_wgrad_suite(kDenseSuite));
  expect_invalid([] { is_grouped_wgrad_suite("/nonexistent/wgrad.csv"); }, "--wgrad");
}

TEST(WgradGroupedCli, DrawnRunsAndTheSuitesRows) {
  const GroupedWgradItem item = make_grouped_wgrad_item(make_case(4096, 7168, 512, 32, 7), 3,
                                                        DType::bf16, 2026);
  ASSERT_EQ(item.group_tokens.size(), 32u);
  int64_t end = 0;
  for (std::size_t g = 0; g < item.group_tokens.size(); ++g) {
    EXPECT_GE(item.group_tokens[g], 359);   // ceil(0.7 x 512)
    EXPECT_LE(item.group_tokens[g], 665);   // floor(1.3 x 512)
    EXPECT_EQ(item.group_ends[g], end += item.group_tokens[g]);
  }
  const GemmProblem& p = item.problem;
  EXPECT_EQ(p.grouping, Grouping::k_contiguous);
  EXPECT_EQ(p.k, end);
  EXPECT_EQ(p.num_groups, 32);
  EXPECT_EQ(p.expected_group_k(), 512);
  EXPECT_EQ(p.layout, Layout::tn);
  EXPECT_EQ(p.d_type, DType::fp32);
  EXPECT_TRUE(p.reads_c);
  EXPECT_DOUBLE_EQ(item.flops(), 2.0 * 4096 * 7168 * double(end));
  EXPECT_DOUBLE_EQ(item.d_bytes(), 32.0 * 4096 * 7168 * 4);
  EXPECT_DOUBLE_EQ(item.bytes(), double(end) * (4096 + 7168) * 2 + 2 * item.d_bytes());
  // The draws depend on the seed and the row's index, nothing else.
  EXPECT_EQ(make_grouped_wgrad_item(make_case(4096, 7168, 512, 32, 99), 3, DType::fp16, 2026)
                .group_tokens,
            item.group_tokens);
  EXPECT_NE(make_grouped_wgrad_item(make_case(4096, 7168, 512, 32, 7), 4, DType::bf16, 2026)
                .group_tokens,
            item.group_tokens);
  // The problem's rules, named with the file and line.
  EXPECT_NE(expect_invalid([] { make_grouped_wgrad_items({make_case(4000, 64, 64, 2, 9)}, "s.csv",
                                                         DType::bf16, 1); },
                           "s.csv line 9 (m)")
                .find("multiple of 64"),
            std::string::npos);
  expect_invalid([] { make_grouped_wgrad_item(make_case(64, 64, 64, 2, 1), 0, DType::e4m3, 1); },
                 "dtype");
  // The suite itself: 12-16 rows, m a multiple of 64, every dW under 4 GB (the whole suite runs
  // in about two minutes on one H200).
  const auto items = make_grouped_wgrad_items(load_grouped_wgrad_suite(kMoeSuite), kMoeSuite,
                                              DType::bf16, 2026);
  EXPECT_GE(items.size(), 12u);
  EXPECT_LE(items.size(), 16u);
  for (const GroupedWgradItem& row : items) {
    EXPECT_EQ(row.problem.m % 64, 0) << row.source.tag;
    EXPECT_LE(row.d_bytes(), 4.0 * (1 << 30)) << row.source.tag;
    EXPECT_GE(row.problem.num_groups, 8) << row.source.tag;
    EXPECT_LE(row.problem.num_groups, 32) << row.source.tag;
  }
}

TEST(WgradGroupedCli, BenchPlansWithoutAGpuAndRefusesBadArguments) {
  const auto planned = run_cli("bench --wgrad " + kMoeSuite + " --device h200");
  EXPECT_EQ(planned.exit_code, 0) << planned.out;
  for (const char* tag : {"dsv3-gateup-E32-T512", "qwen3-30b-a3b-down-E32-T64",
                          "mixtral-8x7b-gateup-E8-T2048"})
    EXPECT_NE(planned.out.find(tag), std::string::npos) << tag << "\n" << planned.out;
  EXPECT_NE(planned.out.find("predicted_us"), std::string::npos) << planned.out;
  EXPECT_NE(planned.out.find("experts"), std::string::npos) << planned.out;
  const auto json = run_cli("bench --wgrad " + kMoeSuite + " --device h200 --json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"measured\": false"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"group_tokens\""), std::string::npos) << json.out;
  // The dense suite still plans as before.
  const auto dense = run_cli("bench --wgrad " + kDenseSuite + " --device h200");
  EXPECT_EQ(dense.exit_code, 0) << dense.out;
  EXPECT_NE(dense.out.find("llama3-70b-gateup-T8192"), std::string::npos) << dense.out;
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {" --dtype fp8", "--dtype = fp8"},
           {" --out-dtype bf16", "--out-dtype = bf16"},
           {" --layout nn", "--layout = nn"},
           {" --autotune 4", "--autotune = 4"},
           {" --bias bf16", "the fused epilogue"},
           {" --m 64", "--m = 64"},
           {" --plot out.svg", "--plot = out.svg"},
           {" --iters 0", "--iters = 0"},
           {" --config nonsense", "--config"}}) {
    const auto run = run_cli("bench --wgrad " + kMoeSuite + args + " --device h200");
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.out;
    EXPECT_NE(run.out.find(says), std::string::npos) << args << "\n" << run.out;
  }
  // A grouped row the problem's rules refuse is named with its file and line.
  const SuiteFile bad("m,n,tokens_per_group,groups\n4000,64,64,2\n");
  const auto refused = run_cli("bench --wgrad " + bad.path() + " --device h200");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.out.find("line 2 (m)"), std::string::npos) << refused.out;
}

TEST(WgradGroupedCli, ReportColumns) {
  GroupedWgradRow row;
  row.item = make_grouped_wgrad_item(make_case(128, 256, 100, 4, 3), 0, DType::bf16, 2026);
  row.config = "64x128x64 s4 c1 p g8";
  row.ours = summarize({10.0, 12.0, 11.0});
  row.tflops = row.item.flops() / row.ours.median_us * 1e-6;
  row.loop.time = summarize({22.0, 22.0, 22.0});
  row.loop.ratio = 2.0;
  row.loop.diff_to_ours = 1e-9;
  row.diff = 2e-8;
  row.worst_group = 1;
  row.diff_limit = 1e-5;
  row.checked_rows = 128;
  row.same_bytes_copy = summarize({5.5, 5.5, 5.5});
  const std::string table = format_grouped_wgrad_table({row});
  EXPECT_NE(table.find("11.00"), std::string::npos) << table;
  EXPECT_NE(table.find("22.00"), std::string::npos) << table;
  EXPECT_NE(table.find("2.000"), std::string::npos) << table;
  EXPECT_NE(table.find("50%"), std::string::npos) << table;   // 5.5 us of 11 us
  EXPECT_NE(table.find("64x128x64 s4 c1 p g8"), std::string::npos) << table;
  const std::string summary = format_grouped_wgrad_summary({row}, true);
  EXPECT_NE(summary.find("cuBLASLt loop (its time / ours; > 1: autogemm faster): 2.000 over 1 row"),
            std::string::npos)
      << summary;
  // The CSV line has the header's columns (the quoted fields hold no commas here).
  const auto columns = [](const std::string& line) {
    return std::count(line.begin(), line.end(), ',') + 1;
  };
  EXPECT_EQ(columns(grouped_wgrad_csv_line(row)), columns(grouped_wgrad_csv_header()));
  // A failed row makes the summary say so.
  GroupedWgradRow failed = row;
  failed.failure = "wrong result: expert 1";
  EXPECT_NE(format_grouped_wgrad_summary({row, failed}, true).find("1 of 2 rows FAILED: line 3"),
            std::string::npos);
  EXPECT_EQ(grouped_wgrad_failed_rows({row, failed}), 1u);
  EXPECT_DOUBLE_EQ(grouped_wgrad_geomean_loop_ratio({row, failed}), 2.0);
}

// ---- on a GPU ------------------------------------------------------------------------------

// Two small rows (every dW row within the reference's budget): each expert checked against
// float64, the loop run, agreeing with ours over every entry, and both timed.
TEST(WgradGroupedCliGpu, SmallRowsThroughTheBench) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  const auto items = make_grouped_wgrad_items(
      {make_case(128, 256, 100, 4, 1), make_case(256, 520, 300, 3, 2)}, "test", DType::bf16, 7);
  std::size_t progress_calls = 0;
  const auto rows = run_grouped_wgrad_bench(
      items, autogemm::testing::bench_options_for(gpu, 1, 3),
      [&](std::size_t, std::size_t, const GroupedWgradItem*) { ++progress_calls; });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(progress_calls, 3u);
  for (const GroupedWgradRow& r : rows) {
    SCOPED_TRACE(r.item.source.line);
    EXPECT_EQ(r.failure, "");
    EXPECT_FALSE(r.config.empty());
    EXPECT_LT(r.diff, 1e-5);
    EXPECT_GE(r.worst_group, 0);
    EXPECT_EQ(r.unwritten, 0);
    EXPECT_EQ(r.checked_rows, r.item.problem.m);   // small: every row of every expert
    EXPECT_EQ(r.ours.samples, 3);
    EXPECT_NEAR(r.tflops, r.item.flops() / r.ours.median_us * 1e-6, 1e-9);
    ASSERT_TRUE(r.loop.time.has_value()) << r.loop.unavailable;
    EXPECT_LT(r.loop.diff_to_ours, 1e-5);
    EXPECT_EQ(r.loop.note, "");   // timed as one CUDA graph
    EXPECT_NEAR(r.loop.ratio, r.loop.time->median_us / r.ours.median_us, 1e-12);
    ASSERT_TRUE(r.same_bytes_copy.has_value());
    EXPECT_GT(same_bytes_share(r), 0);
  }
}

// A row whose call fails (grouped_weight_gradient has no cuBLASLt form) is FAILED and the suite
// goes on.
TEST(WgradGroupedCliGpu, FailedCallsFailTheirRows) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  bench::BenchOptions options = autogemm::testing::bench_options_for(gpu, 1, 3);
  options.config = GemmConfig::parse("cuBLASLt");
  const auto rows = run_grouped_wgrad_bench(
      make_grouped_wgrad_items({make_case(128, 256, 100, 4, 1), make_case(64, 64, 50, 2, 2)},
                               "test", DType::bf16, 7),
      options);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(grouped_wgrad_failed_rows(rows), 2u);
  for (const GroupedWgradRow& r : rows) EXPECT_NE(r.failure, "");
}

TEST(WgradGroupedCliGpu, TheCommand) {
  AUTOGEMM_REQUIRE_GPU();
  const SuiteFile suite("m,n,tokens_per_group,groups,tag\n128,256,100,4,tiny\n");
  const auto run = run_cli("bench --wgrad " + suite.path() + " --warmup 1 --iters 3");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("tiny"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("geomean ratio against the per-expert cuBLASLt loop"), std::string::npos)
      << run.out;
  const auto json = run_cli("bench --wgrad " + suite.path() + " --warmup 1 --iters 3 --json");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"geomean_loop_ratio\""), std::string::npos) << json.out;
}
