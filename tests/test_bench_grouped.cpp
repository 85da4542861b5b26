// `autogemm bench --grouped` on the host: the grouped suite's format and its bad lines, the drawn
// groups (reproducible per row, in range), the contiguous padding and masked max_m arithmetic,
// FP8 rows (their problem, the cuBLASLt loop's rows, the grouped-batched baseline's n/a), the
// dense twin's problem, which rows the float64 reference checks, the bitwise poison count, the
// report (table, CSV, JSON, summary; the dense column), and the command without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/quantize.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_baselines.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/grouped_dense.hpp"
#include "bench/grouped_checks.hpp"
#include "bench/grouped_report.hpp"
#include "bench/grouped_suite.hpp"
#include "cli_test_util.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

std::vector<GroupedCase> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_grouped_suite(in, "g.csv");
}

// The InvalidArgument `text` raises (its argument, value and rule), or a test failure.
InvalidArgument parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const InvalidArgument& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return InvalidArgument("", "", "");
}

std::string suite_path() {
  return std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/grouped-moe.csv";
}

GroupedCase make_case(Grouping kind, int64_t groups, int64_t m, int64_t n, int64_t k, int line) {
  GroupedCase c;
  c.kind = kind;
  c.groups = groups;
  c.m_per_group = m;
  c.n = n;
  c.k = k;
  c.tag = kind == Grouping::masked ? "moe-decode" : "moe-prefill";
  c.line = line;
  return c;
}

TimingStats one_time(double us) { return summarize({us}); }

}  // namespace

// ---- the suite file -----------------------------------------------------------------------------

TEST(BenchGrouped, ParsesCommentsHeaderInAnyOrderAndOptionalTag) {
  const auto cases = parse(
      "# grouped suite\n"
      "kind,groups,m_per_group,n,k,tag\n"
      "contiguous,4,8192,4096,7168,moe-prefill\n"
      "\n"
      "  masked , 32 , 32 , 4096 , 7168 , moe-decode   # trailing comment\n");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].kind, Grouping::contiguous);
  EXPECT_EQ(cases[0].groups, 4);
  EXPECT_EQ(cases[0].m_per_group, 8192);
  EXPECT_EQ(cases[0].n, 4096);
  EXPECT_EQ(cases[0].k, 7168);
  EXPECT_EQ(cases[0].tag, "moe-prefill");
  EXPECT_EQ(cases[0].line, 3);
  EXPECT_EQ(cases[1].kind, Grouping::masked);
  EXPECT_EQ(cases[1].groups, 32);
  EXPECT_EQ(cases[1].tag, "moe-decode");
  EXPECT_EQ(cases[1].line, 5);

  const auto reordered = parse("K,N,M_PER_GROUP,GROUPS,KIND\n7,5,3,2,masked\n");
  ASSERT_EQ(reordered.size(), 1u);
  EXPECT_EQ(reordered[0], (GroupedCase{Grouping::masked, 2, 3, 5, 7, "", 2}));   // no tag
}

TEST(BenchGrouped, TheShippedSuiteHasItsTwelveRows) {
  const auto cases = load_grouped_suite(suite_path());
  ASSERT_EQ(cases.size(), 12u);
  EXPECT_EQ(std::count_if(cases.begin(), cases.end(),
                          [](const GroupedCase& c) { return c.kind == Grouping::masked; }),
            6);
  EXPECT_EQ(cases.front().groups, 4);
  EXPECT_EQ(cases.front().m_per_group, 8192);
  EXPECT_EQ(cases.back().kind, Grouping::masked);
  EXPECT_EQ(cases.back().groups, 32);
  EXPECT_EQ(cases.back().m_per_group, 32);
}

TEST(BenchGrouped, BadLinesNameTheLineColumnValueAndRule) {
  const std::string header = "kind,groups,m_per_group,n,k,tag\ncontiguous,4,8192,4096,7168,x\n";
  InvalidArgument e = parse_error(header + "dense,4,8192,4096,7168,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column kind");
  EXPECT_EQ(e.value(), "dense");
  EXPECT_NE(e.rule().find("contiguous or masked"), std::string::npos) << e.what();

  e = parse_error(header + "masked,0,64,4096,7168,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column groups");
  EXPECT_EQ(e.value(), "0");
  e = parse_error(header + "masked,4,6.5,4096,7168,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column m_per_group");
  e = parse_error(header + "masked,4,64,-1,7168,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column n");
  // Past the problem's size rule (< 2^31): named where it stands in the file.
  e = parse_error(header + "masked,4,64,4096,3000000000,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column k");
  EXPECT_NE(e.rule().find("2^31"), std::string::npos) << e.what();
  e = parse_error(header + "masked,4,3000000000,4096,7168,x\n");
  EXPECT_EQ(e.argument(), "g.csv line 3 column m_per_group");

  e = parse_error(header + "masked,4,64,4096\n");
  EXPECT_EQ(e.argument(), "g.csv line 3");
  EXPECT_NE(e.rule().find("4 fields; the header has 6"), std::string::npos) << e.what();
  e = parse_error("kind,groups,n,k\nmasked,4,4096,7168\n");   // no m_per_group column
  EXPECT_EQ(e.argument(), "g.csv line 1");
  EXPECT_NE(e.rule().find("m_per_group"), std::string::npos) << e.what();
}

TEST(BenchGrouped, LoadingNamesTheGroupedOption) {
  const std::string path = ::testing::TempDir() + "autogemm_grouped_suite_test.csv";
  std::remove(path.c_str());
  try {
    load_grouped_suite(path);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--grouped");
    EXPECT_EQ(e.value(), path);
    EXPECT_NE(e.rule().find("No such file"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path);
    f << "# only a header\nkind,groups,m_per_group,n,k\n";
  }
  try {
    load_grouped_suite(path);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.rule().find("no rows"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// ---- the drawn groups ---------------------------------------------------------------------------

TEST(BenchGrouped, DrawsAreReproduciblePerRowAndInRange) {
  const auto a = draw_group_rows(32, 512, 2026, 4);
  EXPECT_EQ(a, draw_group_rows(32, 512, 2026, 4));            // the same row again
  EXPECT_NE(a, draw_group_rows(32, 512, 2026, 5));            // another row of the suite
  EXPECT_NE(a, draw_group_rows(32, 512, 2027, 4));            // another seed
  // Pinned: the generator and the mapping are fixed by the C++ standard, so these figures (and
  // every published result drawn from them) come back on any platform.
  EXPECT_EQ(draw_group_rows(4, 8192, 2026, 0), (std::vector<int64_t>{9377, 7569, 8387, 6153}));

  for (const int64_t m : {int64_t(1), int64_t(2), int64_t(32), int64_t(64), int64_t(8192)}) {
    const int64_t lo = std::max<int64_t>(1, (7 * m + 9) / 10), hi = std::max(lo, 13 * m / 10);
    const auto rows = draw_group_rows(4000, m, 7, 1);
    const auto [min, max] = std::minmax_element(rows.begin(), rows.end());
    EXPECT_GE(*min, lo) << "m " << m;
    EXPECT_LE(*max, hi) << "m " << m;
    if (hi - lo >= 10) {   // 4000 draws reach both ends of a range and centre on m
      EXPECT_LE(*min, lo + (hi - lo) / 20) << "m " << m;
      EXPECT_GE(*max, hi - (hi - lo) / 20) << "m " << m;
      const double mean = std::accumulate(rows.begin(), rows.end(), 0.0) / double(rows.size());
      EXPECT_NEAR(mean, double(m), 0.02 * double(m)) << "m " << m;
    }
  }
  EXPECT_EQ(draw_group_rows(3, 1, 1, 1), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(draw_group_rows(0, 64, 1, 1), InvalidArgument);
  EXPECT_THROW(draw_group_rows(4, 0, 1, 1), InvalidArgument);
}

TEST(BenchGrouped, ContiguousRunsArePaddedTo128Rows) {
  const std::vector<int64_t> rows = {100, 128, 129, 1};
  auto starts = [](const std::vector<int64_t>& group_rows) {
    GemmProblem p;
    p.grouping = Grouping::contiguous;
    p.num_groups = int64_t(group_rows.size());
    p.m = contiguous_rows(group_rows);
    return check_contiguous_groups(p, group_rows);
  };
  EXPECT_EQ(contiguous_rows(rows), 128 + 128 + 256 + 128);
  EXPECT_EQ(starts(rows), (std::vector<int64_t>{0, 128, 256, 512}));
  // An empty group has an empty run; the next starts where it would have.
  EXPECT_EQ(starts(std::vector<int64_t>{0, 5, 0}), (std::vector<int64_t>{0, 0, 128}));
  EXPECT_EQ(contiguous_rows(std::vector<int64_t>{0, 5, 0}), 128);
  EXPECT_EQ(kGroupedRowAlignment, 128);
}

TEST(BenchGrouped, MaskedMaxMIsTheLargestGroupRoundedTo64) {
  EXPECT_EQ(masked_max_m(std::vector<int64_t>{23, 41}), 64);
  EXPECT_EQ(masked_max_m(std::vector<int64_t>{64}), 64);
  EXPECT_EQ(masked_max_m(std::vector<int64_t>{65, 1}), 128);
  EXPECT_EQ(masked_max_m(std::vector<int64_t>{1300, 700}), 1344);
  EXPECT_EQ(kMaskedMaxMAlignment, 64);
}

TEST(BenchGrouped, AnItemIsTheGroupedProblemOfItsDraws) {
  const GroupedItem c =
      make_grouped_item(make_case(Grouping::contiguous, 8, 4096, 4096, 7168, 5), 2, DType::bf16,
                        DType::bf16, 2026);
  EXPECT_EQ(c.group_rows, draw_group_rows(8, 4096, 2026, 2));
  EXPECT_EQ(c.problem.grouping, Grouping::contiguous);
  EXPECT_EQ(c.problem.num_groups, 8);
  EXPECT_EQ(c.problem.m, contiguous_rows(c.group_rows));
  EXPECT_EQ(c.problem.m % 128, 0);
  EXPECT_EQ(c.problem.expected_m, 4096);
  EXPECT_EQ(c.row_starts, check_contiguous_groups(c.problem, c.group_rows));
  const int64_t valid = std::accumulate(c.group_rows.begin(), c.group_rows.end(), int64_t(0));
  EXPECT_EQ(c.valid_rows(), valid);
  EXPECT_DOUBLE_EQ(c.useful_flops(), 2.0 * double(valid) * 4096 * 7168);
  EXPECT_DOUBLE_EQ(c.bytes(), 2.0 * (double(valid) * 7168 + 8.0 * 4096 * 7168 +
                                     double(valid) * 4096));

  const GroupedItem m =
      make_grouped_item(make_case(Grouping::masked, 16, 64, 7168, 2048, 9), 3, DType::bf16,
                        DType::fp32, 2026);
  EXPECT_EQ(m.problem.grouping, Grouping::masked);
  EXPECT_EQ(m.problem.m, masked_max_m(m.group_rows));
  EXPECT_EQ(m.problem.stored_rows(), 16 * m.problem.m);
  EXPECT_EQ(m.problem.d_type, DType::fp32);
  for (std::size_t g = 0; g < m.row_starts.size(); ++g)
    EXPECT_EQ(m.row_starts[g], int64_t(g) * m.problem.m);
  EXPECT_DOUBLE_EQ(m.bytes(), double(m.valid_rows()) * 2048 * 2 + 16.0 * 7168 * 2048 * 2 +
                                  double(m.valid_rows()) * 7168 * 4);
  // The inputs differ from row to row.
  EXPECT_NE(c.input_seed, m.input_seed);
}

// A row the grouped problem's rules refuse names the file and line it came from.
TEST(BenchGrouped, ARowTheProblemRulesRefuseNamesItsLine) {
  const std::vector<GroupedCase> cases = {
      make_case(Grouping::masked, 4, 64, 4096, 7168, 7),
      make_case(Grouping::masked, 400000, 64, 8192, 128, 8)};   // groups x N past 2^31
  try {
    make_grouped_items(cases, "g.csv", DType::bf16, DType::bf16, 1);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument().rfind("g.csv line 8 (", 0), 0u) << e.what();
  }
  // The bench makes FP8 inputs by quantising to e4m3 only.
  try {
    make_grouped_item(cases[0], 0, DType::e5m2, DType::bf16, 1);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "dtype");
    EXPECT_EQ(e.value(), "e5m2");
    EXPECT_NE(e.rule().find("e4m3"), std::string::npos) << e.what();
  }
}

// ---- FP8 rows and the dense twin ---------------------------------------------------------------

TEST(BenchGrouped, AnFp8ItemIsBlockScaledE4m3WithItsScalesInItsBytes) {
  for (DType out : {DType::bf16, DType::fp16, DType::fp32}) {   // every D grouped_gemm takes
    const GroupedItem m = make_grouped_item(make_case(Grouping::masked, 16, 64, 7168, 2048, 9), 3,
                                            DType::e4m3, out, 2026);
    EXPECT_TRUE(block_scaled_fp8(m.problem));
    EXPECT_EQ(m.problem.a_type, DType::e4m3);
    EXPECT_EQ(m.problem.b_type, DType::e4m3);
    EXPECT_EQ(m.problem.scaling, Scaling::block_1x128_128x128);
    EXPECT_EQ(m.problem.d_type, out);
    // The same draws as the 16-bit row of the same index and seed.
    EXPECT_EQ(m.group_rows, draw_group_rows(16, 64, 2026, 3));
    const double valid = double(m.valid_rows());
    // A, B, D, then the scales: 16 k-blocks per row of A, 56 x 16 blocks per group of B.
    EXPECT_DOUBLE_EQ(m.bytes(), valid * 2048 + 16.0 * 7168 * 2048 +
                                    valid * 7168 * dtype_bytes(out) +
                                    4.0 * (valid * 16 + 16.0 * 56 * 16));
  }
  const GroupedItem bf16 = make_grouped_item(make_case(Grouping::masked, 16, 64, 7168, 2048, 9),
                                             3, DType::bf16, DType::bf16, 2026);
  EXPECT_FALSE(block_scaled_fp8(bf16.problem));
}

TEST(BenchGrouped, TheDenseTwinIsOneGemmOfTheValidRows) {
  for (DType in : {DType::bf16, DType::e4m3}) {
    const GroupedItem item = make_grouped_item(
        make_case(Grouping::contiguous, 8, 4096, 4096, 7168, 9), 2, in, DType::bf16, 2026);
    const GemmProblem twin = dense_twin_problem(item);
    EXPECT_EQ(twin.grouping, Grouping::none);
    EXPECT_EQ(twin.num_groups, 1);
    EXPECT_EQ(twin.m, item.valid_rows());
    EXPECT_LT(twin.m, item.problem.m);   // the padding is not computed
    EXPECT_EQ(twin.n, 4096);
    EXPECT_EQ(twin.k, 7168);
    EXPECT_EQ(twin.a_type, in);
    EXPECT_EQ(twin.d_type, DType::bf16);
    EXPECT_EQ(twin.scaling, item.problem.scaling);
    EXPECT_EQ(twin.layout, Layout::nt);
    EXPECT_DOUBLE_EQ(twin.flops(), item.useful_flops());
  }
  // Masked: every group's valid rows, not max_m of each.
  const GroupedItem masked = make_grouped_item(make_case(Grouping::masked, 32, 32, 4096, 7168, 4),
                                               1, DType::e4m3, DType::bf16, 2026);
  EXPECT_EQ(dense_twin_problem(masked).m, masked.valid_rows());
}

TEST(BenchGrouped, TheFp8LoopRoundsEachGroupsMUpToAMultipleOf4WithinItsStoredRows) {
  GroupedItem item = make_grouped_item(make_case(Grouping::contiguous, 4, 100, 256, 256, 3), 0,
                                       DType::e4m3, DType::bf16, 1);
  item.group_rows = {0, 1, 127, 128};   // the loop reads only the rows (and the layout's rule)
  EXPECT_EQ(cublaslt_loop_rows(item), (std::vector<int64_t>{0, 4, 128, 128}));
  GroupedItem masked = make_grouped_item(make_case(Grouping::masked, 4, 40, 256, 256, 3), 0,
                                         DType::e4m3, DType::bf16, 1);
  ASSERT_EQ(masked.problem.m % 64, 0);
  masked.group_rows = {masked.problem.m - 1, 5, 8, 0};
  EXPECT_EQ(cublaslt_loop_rows(masked), (std::vector<int64_t>{masked.problem.m, 8, 8, 0}));
  // 16-bit rows: each group's own M.
  GroupedItem bf16 = make_grouped_item(make_case(Grouping::contiguous, 4, 100, 256, 256, 3), 0,
                                       DType::bf16, DType::bf16, 1);
  EXPECT_EQ(cublaslt_loop_rows(bf16), bf16.group_rows);
}

TEST(BenchGrouped, GroupedBatchedIsNaForFp8Only) {
  const GroupedCase c = make_case(Grouping::masked, 4, 40, 256, 256, 3);
  EXPECT_EQ(
      grouped_batched_unavailable(make_grouped_item(c, 0, DType::bf16, DType::fp32, 1).problem),
      "");
  const std::string why =
      grouped_batched_unavailable(make_grouped_item(c, 0, DType::e4m3, DType::bf16, 1).problem);
  EXPECT_NE(why.find("cublasGemmGroupedBatchedEx takes no block-scaled FP8"), std::string::npos)
      << why;
}

// ---- what the checks cover ----------------------------------------------------------------------

TEST(BenchGrouped, TheReferenceChecksWholeGroupsOrBothEdges) {
  EXPECT_EQ(reference_ranges(100, 200), (std::vector<RowRange>{{0, 100}}));
  EXPECT_EQ(reference_ranges(1000, 64), (std::vector<RowRange>{{0, 32}, {968, 32}}));
  EXPECT_EQ(reference_ranges(65, 64), (std::vector<RowRange>{{0, 32}, {33, 32}}));
  EXPECT_EQ(reference_ranges(1000, 73), (std::vector<RowRange>{{0, 37}, {964, 36}}));
  EXPECT_TRUE(reference_ranges(0, 64).empty());
  EXPECT_THROW(reference_ranges(10, 1), InvalidArgument);
  // 2^36 multiply-adds per suite row, split over its groups; at least 64 rows a group.
  EXPECT_EQ(reference_rows_per_group(4, 4096, 7168), 585);
  EXPECT_EQ(reference_rows_per_group(32, 7168, 2048), 146);
  EXPECT_EQ(reference_rows_per_group(1, 64, 64), int64_t(kReferenceCheckMaxFmas / (64.0 * 64)));
  EXPECT_EQ(reference_rows_per_group(1024, 16384, 16384), kReferenceMinRowsPerGroup);
}

TEST(BenchGrouped, PoisonIsComparedBitForBit) {
  const std::vector<unsigned char> poison = {0xFF, 0xFF};   // a bf16 NaN, as fill_poison writes
  std::vector<unsigned char> bytes(8, 0xFF);
  EXPECT_EQ(count_not_poison(bytes, poison).changed, 0);
  EXPECT_EQ(count_not_poison(bytes, poison).first, -1);
  bytes[5] = 0x7F;   // element 2: 0x7FFF, another NaN: still a write
  bytes[6] = 0x00;   // element 3
  const PoisonCount count = count_not_poison(bytes, poison);
  EXPECT_EQ(count.changed, 2);
  EXPECT_EQ(count.first, 2);
  EXPECT_THROW(count_not_poison(std::vector<unsigned char>(3, 0xFF), poison), InvalidArgument);
  EXPECT_EQ(count_non_finite(std::vector<double>{1.0, std::nan(""), INFINITY, -2.0}), 2);
}

TEST(BenchGrouped, TheWorstGroupKeepsTheFirstNaN) {
  WorstGroup worst;
  take_worse(worst, 1e-7, 0);
  take_worse(worst, 3e-7, 1);
  take_worse(worst, 2e-7, 2);
  EXPECT_EQ(worst.group, 1);
  EXPECT_DOUBLE_EQ(worst.diff, 3e-7);
  take_worse(worst, std::nan(""), 3);
  take_worse(worst, std::nan(""), 4);
  take_worse(worst, 1.0, 5);
  EXPECT_EQ(worst.group, 3);
  EXPECT_TRUE(std::isnan(worst.diff));
}

// ---- the report ---------------------------------------------------------------------------------

namespace {

// Three rows as run_grouped_case returns them: a contiguous row with both baselines, a masked row
// cuBLAS's grouped-batched call declined (with its own-bytes copy), and a row whose call threw.
std::vector<GroupedRow> report_rows() {
  GroupedRow a;
  a.item = make_grouped_item(make_case(Grouping::contiguous, 4, 256, 512, 256, 7), 0, DType::bf16,
                             DType::bf16, 1);
  a.config = "128x128x64 s4 c2 p g8";
  a.ours = one_time(100.0);
  a.tflops = a.item.useful_flops() / 100.0 * 1e-6;
  a.gbps = a.item.bytes() / 100.0 * 1e-3;
  a.loop.time = one_time(150.0);
  a.loop.ratio = 1.5;
  a.loop.diff_to_ours = 1e-6;
  a.batched.time = one_time(120.0);
  a.batched.ratio = 1.2;
  a.batched.diff_to_ours = 1e-6;
  a.diff = 2e-6;
  a.worst_group = 3;
  a.diff_limit = 1e-5;
  a.checked_rows = 1000;
  a.dense.time = one_time(110.0);
  a.dense.tflops = a.item.useful_flops() / 110.0 * 1e-6;
  a.dense.ratio = 1.1;
  a.dense.config = "128x256x64 s4 c2 p g8";

  GroupedRow b = a;
  b.item = make_grouped_item(make_case(Grouping::masked, 2, 64, 512, 256, 8), 1, DType::bf16,
                             DType::bf16, 1);
  b.loop.time = one_time(200.0);
  b.loop.ratio = 2.0;
  b.batched = GroupedBaseline{};
  b.batched.diff_to_ours = std::nan("");
  b.batched.unavailable = "cublasGemmGroupedBatchedEx(...): CUBLAS_STATUS_NOT_SUPPORTED";
  b.same_bytes_copy = one_time(85.0);
  b.worst_group = 0;
  b.dense = GroupedDense{};
  b.dense.unavailable = "gemm() of 100 x 512 x 256: no kernel";

  GroupedRow c;
  c.item = make_grouped_item(make_case(Grouping::masked, 16, 64, 512, 256, 9), 2, DType::bf16,
                             DType::bf16, 1);
  c.diff = std::nan("");
  c.loop.diff_to_ours = c.batched.diff_to_ours = std::nan("");
  c.diff_limit = 1e-5;
  c.failure = "problem = grouped ...: no autogemm kernel serves it, \"quoted\"";
  return {a, b, c};
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted && ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      fields.back() += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

}  // namespace

TEST(BenchGrouped, TheTableShowsBaselinesNaFailuresAndCopyShare) {
  const std::vector<GroupedRow> rows = report_rows();
  const std::string table = format_grouped_table(rows);
  std::istringstream lines(table);
  std::string header, first, second, third;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  for (const char* column : {"kind", "groups", "valid_m", "ours_us", "TFLOP/s", "GB/s", "loop_us",
                             "batched_us", "dense_us", "g/dense", "diff", "copy", "config"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_NE(first.find("contiguous"), std::string::npos) << first;
  EXPECT_NE(first.find("100.00"), std::string::npos) << first;
  EXPECT_NE(first.find("1.500"), std::string::npos) << first;
  EXPECT_NE(first.find("1.200"), std::string::npos) << first;
  EXPECT_NE(first.find("2.00e-06"), std::string::npos) << first;
  EXPECT_NE(first.find("110.00"), std::string::npos) << first;   // the dense twin
  EXPECT_NE(first.find("1.100"), std::string::npos) << first;
  EXPECT_NE(first.find(std::to_string(rows[0].item.valid_rows())), std::string::npos) << first;
  EXPECT_NE(second.find("n/a"), std::string::npos) << second;
  EXPECT_NE(second.find("85%"), std::string::npos) << second;
  EXPECT_NE(second.find("no cublasGemmGroupedBatchedEx baseline: "), std::string::npos) << second;
  EXPECT_NE(second.find("(no dense twin: gemm() of 100 x 512 x 256: no kernel)"),
            std::string::npos)
      << second;
  EXPECT_NE(third.find("FAILED"), std::string::npos) << third;
  EXPECT_NE(third.find("no autogemm kernel serves it"), std::string::npos) << third;
}

TEST(BenchGrouped, TheSummaryHasBothGeomeansTheMissingBaselinesAndFailures) {
  const std::vector<GroupedRow> rows = report_rows();
  EXPECT_NEAR(geomean_loop_ratio(rows), std::sqrt(1.5 * 2.0), 1e-12);   // the failed row is out
  EXPECT_NEAR(geomean_batched_ratio(rows), 1.2, 1e-12);
  EXPECT_EQ(grouped_rows_without_baseline(rows), 1u);
  EXPECT_EQ(grouped_failed_rows(rows), 1u);
  const std::string summary = format_grouped_summary(rows, true);
  EXPECT_NE(summary.find("the per-group cuBLASLt loop (its time / ours; > 1: autogemm faster): "
                         "1.732 over 2 rows"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("cublasGemmGroupedBatchedEx (its time / ours; > 1: autogemm faster): "
                         "1.200 over 1 row with it"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1 of 3 rows had no cublasGemmGroupedBatchedEx baseline (n/a)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("given every group's M on the host"), std::string::npos) << summary;
  EXPECT_NE(summary.find("lowest 85% (line 8)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 of 3 rows FAILED: line 9"), std::string::npos) << summary;
  // The dense twin: contiguous rows only (the masked one had none anyway), and its n/a.
  EXPECT_NEAR(geomean_dense_ratio_contiguous(rows), 1.1, 1e-12);
  ASSERT_NE(lowest_dense_ratio_contiguous(rows), nullptr);
  EXPECT_EQ(lowest_dense_ratio_contiguous(rows)->item.source.line, 7);
  EXPECT_NE(summary.find("contiguous rows: geomean 1.100 over 1 row, lowest 1.100 (line 7)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("1 of 3 rows had no dense twin (n/a)"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("FP8 rows"), std::string::npos) << summary;   // none here
  // Without baselines (--no-baseline) no ratio is claimed; the dense twin still runs.
  EXPECT_EQ(format_grouped_summary(rows, false).find("geomean ratio"), std::string::npos);
  EXPECT_NE(format_grouped_summary(rows, false).find("geomean 1.100"), std::string::npos);
}

// An FP8 contiguous row: the grouped-batched baseline n/a (the summary says why), the loop timed,
// the dense twin's ratio in the contiguous geomean and the lowest.
TEST(BenchGrouped, Fp8RowsSayTheBatchedBaselineIsNaAndJoinTheDenseFigures) {
  std::vector<GroupedRow> rows = report_rows();
  GroupedRow d = rows[0];
  d.item = make_grouped_item(make_case(Grouping::contiguous, 4, 256, 512, 256, 10), 3,
                             DType::e4m3, DType::bf16, 1);
  d.diff = 3e-4;
  d.diff_limit = 1e-3;
  d.batched = GroupedBaseline{};
  d.batched.diff_to_ours = std::nan("");
  d.batched.unavailable = grouped_batched_unavailable(d.item.problem);
  d.dense.time = one_time(90.0);
  d.dense.ratio = 0.9;
  rows.push_back(d);
  EXPECT_NEAR(geomean_dense_ratio_contiguous(rows), std::sqrt(1.1 * 0.9), 1e-12);
  EXPECT_EQ(lowest_dense_ratio_contiguous(rows)->item.source.line, 10);
  EXPECT_EQ(grouped_rows_without_baseline(rows), 2u);
  const std::string summary = format_grouped_summary(rows, true);
  EXPECT_NE(summary.find("2 of 4 rows had no cublasGemmGroupedBatchedEx baseline (n/a)"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("cublasGemmGroupedBatchedEx takes no block-scaled FP8, so it is n/a on "
                         "every FP8 row"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("rounded up to a multiple of 4"), std::string::npos) << summary;
  EXPECT_NE(summary.find("over 2 rows, lowest 0.900 (line 10)"), std::string::npos) << summary;

  const std::string table = format_grouped_table(rows);
  const std::string fp8_line = table.substr(table.find("\ncontiguous", table.find("FAILED")) + 1);
  EXPECT_NE(fp8_line.find("n/a"), std::string::npos) << fp8_line;
  EXPECT_NE(fp8_line.find("0.900"), std::string::npos) << fp8_line;
  EXPECT_NE(fp8_line.find("takes no block-scaled FP8"), std::string::npos) << fp8_line;
  const auto fields = csv_fields(grouped_csv_line(d));
  EXPECT_EQ(fields[8], "fp8");    // dtype, as --dtype spells it
  EXPECT_EQ(fields[9], "bf16");
  EXPECT_EQ(fields[17], "");      // batched: n/a
  EXPECT_EQ(fields[21], "0.9000");
  const nlohmann::json j = nlohmann::json::parse(grouped_rows_to_json(rows));
  EXPECT_EQ(j["rows"][3]["dtype"], "fp8");
  EXPECT_EQ(j["rows"][3]["diff_limit"], 1e-3);
  EXPECT_EQ(j["lowest_dense_ratio_contiguous"]["line"], 10);
  EXPECT_NEAR(j["geomean_dense_ratio_contiguous"].get<double>(), std::sqrt(1.1 * 0.9), 1e-12);
}

TEST(BenchGrouped, CsvHasAFixedHeaderAndOneFieldPerColumn) {
  EXPECT_EQ(grouped_csv_header(),
            "line,kind,groups,m_per_group,valid_m,m,n,k,dtype,out_dtype,tag,config,time_us,"
            "tflops,gbps,loop_time_us,loop_ratio,batched_time_us,batched_ratio,dense_time_us,"
            "dense_tflops,dense_ratio,diff,worst_group,checked_rows,same_bytes_share,group_rows,"
            "loop_unavailable,batched_unavailable,dense_config,dense_unavailable,failure");
  const std::size_t columns = csv_fields(grouped_csv_header()).size();
  const std::vector<GroupedRow> rows = report_rows();
  const auto a = csv_fields(grouped_csv_line(rows[0]));
  const auto b = csv_fields(grouped_csv_line(rows[1]));
  const auto c = csv_fields(grouped_csv_line(rows[2]));
  ASSERT_EQ(a.size(), columns);
  ASSERT_EQ(b.size(), columns);
  ASSERT_EQ(c.size(), columns);
  EXPECT_EQ(a[0], "7");
  EXPECT_EQ(a[1], "contiguous");
  EXPECT_EQ(a[11], "128x128x64 s4 c2 p g8");
  EXPECT_EQ(a[12], "100.000");
  EXPECT_EQ(a[8], "bf16");
  EXPECT_EQ(a[16], "1.5000");
  EXPECT_EQ(a[19], "110.000");   // the dense twin
  EXPECT_EQ(a[20], fmt::format("{:.2f}", rows[0].dense.tflops));
  EXPECT_EQ(a[21], "1.1000");
  EXPECT_EQ(a[23], "3");
  EXPECT_EQ(a[25], "");   // contiguous: no copy share
  std::string group_rows;
  for (int64_t r : rows[0].item.group_rows)
    group_rows += (group_rows.empty() ? "" : ";") + std::to_string(r);
  EXPECT_EQ(a[26], group_rows);
  EXPECT_EQ(a[29], "128x256x64 s4 c2 p g8");
  EXPECT_EQ(a[30], "");
  EXPECT_EQ(b[17], "");   // batched n/a: no time, no ratio
  EXPECT_EQ(b[18], "");
  EXPECT_EQ(b[19], "");   // no dense twin: no time, no rate, no ratio
  EXPECT_EQ(b[20], "");
  EXPECT_EQ(b[21], "");
  EXPECT_EQ(b[25], "0.8500");
  EXPECT_NE(b[28].find("NOT_SUPPORTED"), std::string::npos);
  EXPECT_EQ(b[30], rows[1].dense.unavailable);
  EXPECT_EQ(c[12], "");   // our call threw: nothing timed
  EXPECT_EQ(c[22], "");   // nothing compared
  EXPECT_EQ(c[31], rows[2].failure);   // quotes inside survive
}

TEST(BenchGrouped, JsonHoldsEveryRowAndTheSummary) {
  const std::vector<GroupedRow> rows = report_rows();
  const nlohmann::json j = nlohmann::json::parse(grouped_rows_to_json(rows));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_NEAR(j["geomean_loop_ratio"].get<double>(), std::sqrt(3.0), 1e-12);
  EXPECT_EQ(j["failed_rows"], 1);
  EXPECT_EQ(j["rows_without_baseline"], 1);
  const nlohmann::json& a = j["rows"][0];
  EXPECT_EQ(a["kind"], "contiguous");
  EXPECT_EQ(a["group_rows"].get<std::vector<int64_t>>(), rows[0].item.group_rows);
  EXPECT_EQ(a["loop"]["ratio"], 1.5);
  EXPECT_EQ(a["ours"]["median_us"], 100.0);
  EXPECT_EQ(a["dense"]["time_us"], 110.0);
  EXPECT_EQ(a["dense"]["ratio"], 1.1);
  EXPECT_EQ(a["dense"]["config"], "128x256x64 s4 c2 p g8");
  EXPECT_FALSE(a.contains("poison_changed"));   // contiguous rows have no masked rows
  const nlohmann::json& b = j["rows"][1];
  EXPECT_EQ(b["poison_changed"], 0);
  EXPECT_FALSE(b["batched"].contains("time_us"));
  EXPECT_NE(b["batched"]["unavailable"].get<std::string>().find("NOT_SUPPORTED"),
            std::string::npos);
  EXPECT_NEAR(b["same_bytes_share"].get<double>(), 0.85, 1e-12);
  EXPECT_FALSE(b["dense"].contains("time_us"));
  EXPECT_EQ(b["dense"]["unavailable"], rows[1].dense.unavailable);
  EXPECT_NEAR(j["geomean_dense_ratio_contiguous"].get<double>(), 1.1, 1e-12);
  EXPECT_EQ(j["lowest_dense_ratio_contiguous"]["line"], 7);
  EXPECT_FALSE(j["rows"][2].contains("time_us"));
  EXPECT_FALSE(j["rows"][2].contains("diff"));
  EXPECT_EQ(j["rows"][2]["failure"], rows[2].failure);
}

// ---- the command without a GPU ------------------------------------------------------------------

TEST(BenchGroupedCli, APresetShowsEachRowsDrawnGroups) {
  const auto run = autogemm::testing::run_cli("bench --grouped " + suite_path() +
                                              " --device h100-sxm");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("each row's drawn groups"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("M per group"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("moe-prefill-many"), std::string::npos) << run.out;
  // The first row's groups, as the draw gives them.
  const auto first = make_grouped_items(load_grouped_suite(suite_path()), suite_path(),
                                        DType::bf16, DType::bf16, 2026)
                         .front();
  std::string groups;
  for (int64_t r : first.group_rows) groups += (groups.empty() ? "" : " ") + std::to_string(r);
  EXPECT_NE(run.out.find(groups), std::string::npos) << run.out;

  const auto json = autogemm::testing::run_cli("bench --grouped " + suite_path() +
                                               " --device h100-sxm --json --seed 7");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const nlohmann::json j = nlohmann::json::parse(json.out.substr(json.out.find('{')));
  EXPECT_EQ(j["measured"], false);
  ASSERT_EQ(j["rows"].size(), 12u);
  EXPECT_EQ(j["rows"][6]["group_rows"].get<std::vector<int64_t>>(),
            draw_group_rows(1, 1024, 7, 6));
}

TEST(BenchGroupedCli, OptionsItDoesNotTakeAreRefused) {
  const std::string base = "bench --grouped " + suite_path() + " --device h100-sxm ";
  auto run = autogemm::testing::run_cli(base + "--suite bench/suites/gemm-public.csv");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--suite = bench/suites/gemm-public.csv: give either --grouped FILE or "
                         "--suite/--m/--n/--k, not both"),
            std::string::npos)
      << run.out;
  run = autogemm::testing::run_cli(base + "--layout tn");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--layout = tn"), std::string::npos) << run.out;
  run = autogemm::testing::run_cli(base + "--dtype e5m2");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--dtype = e5m2: --grouped measures bf16, fp16 or fp8 inputs"),
            std::string::npos)
      << run.out;
  run = autogemm::testing::run_cli(base + "--out-dtype e4m3");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--out-dtype = e4m3"), std::string::npos) << run.out;
}

// --dtype fp8: bf16 D by default, fp16 and fp32 as grouped_gemm() takes them; without a GPU the
// drawn groups (the same draws as bf16), with the types named.
TEST(BenchGroupedCli, Fp8IsAcceptedWithEveryOutputTypeTheLibraryTakes) {
  const std::string base = "bench --grouped " + suite_path() + " --device h100-sxm --dtype fp8";
  auto run = autogemm::testing::run_cli(base);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("fp8 (block-scaled e4m3) inputs, bf16 D"), std::string::npos) << run.out;
  const auto first = make_grouped_items(load_grouped_suite(suite_path()), suite_path(),
                                        DType::e4m3, DType::bf16, 2026)
                         .front();
  std::string groups;
  for (int64_t r : first.group_rows) groups += (groups.empty() ? "" : " ") + std::to_string(r);
  EXPECT_NE(run.out.find(groups), std::string::npos) << run.out;
  for (const char* out : {"fp16", "fp32", "bf16"}) {
    run = autogemm::testing::run_cli(base + " --out-dtype " + out);
    EXPECT_EQ(run.exit_code, 0) << out << ": " << run.out;
    EXPECT_NE(run.out.find(std::string("inputs, ") + out + " D"), std::string::npos) << run.out;
  }
  run = autogemm::testing::run_cli("bench --grouped " + suite_path() +
                                   " --device h100-sxm --dtype e4m3 --json");
  EXPECT_EQ(run.exit_code, 0) << run.out;
}

TEST(BenchGroupedCli, ABadLineStopsTheRunNamingLineAndColumn) {
  const std::string path = ::testing::TempDir() + "autogemm_grouped_bad.csv";
  {
    std::ofstream f(path);
    f << "kind,groups,m_per_group,n,k,tag\ncontiguous,4,512,4096,7168,a\nsparse,4,64,4096,7168,b\n";
  }
  const auto run = autogemm::testing::run_cli("bench --grouped " + path + " --device h100-sxm");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find(path + " line 3 column kind = sparse: must be contiguous or masked"),
            std::string::npos)
      << run.out;
  std::remove(path.c_str());
}
