// `autogemm bench --plot` / `--replot` on the host: the SVG picture of bench rows (one bar per
// row around a line at 1.0, n/a rows, escaping, the memory-bound panel), rows read back from a
// bench CSV, and the --replot command, which needs no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/plot_svg.hpp"
#include "bench/timing.hpp"
#include "cli_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using namespace autogemm::bench;
using autogemm::testing::CliRun;
using autogemm::testing::run_cli;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// Checks the document is well-formed in the ways a renderer cares about: every element closed
// in order, quoted attributes, no bare '&' or '<' in text. Returns the first problem, or "".
std::string xml_problem(const std::string& svg) {
  std::vector<std::string> open;
  std::size_t i = 0;
  while (i < svg.size()) {
    if (svg[i] == '&') {
      const std::size_t end = svg.find(';', i);
      const std::string entity = end == std::string::npos ? "" : svg.substr(i, end - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;")
        return "bare '&' at " + std::to_string(i);
      i = end + 1;
      continue;
    }
    if (svg[i] != '<') {
      if (svg[i] == '>') return "bare '>' at " + std::to_string(i);
      ++i;
      continue;
    }
    // A tag: find its end outside quoted attribute values.
    std::size_t j = i + 1;
    bool quoted = false;
    for (; j < svg.size() && (quoted || svg[j] != '>'); ++j) {
      if (svg[j] == '"') quoted = !quoted;
      if (!quoted && svg[j] == '<') return "'<' inside a tag at " + std::to_string(j);
    }
    if (j == svg.size()) return "unterminated tag at " + std::to_string(i);
    const std::string tag = svg.substr(i + 1, j - i - 1);
    i = j + 1;
    if (tag.front() == '?') continue;  // <?xml ...?>
    if (tag.front() == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (name.empty()) return "empty tag name";
    if (count(tag, "\"") % 2 != 0) return "odd quotes in <" + name + ">";
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return "<" + open.back() + "> not closed";
  return "";
}

PlotRow row(const std::string& label, std::optional<double> ratio, bool memory_bound = false,
            std::optional<double> share = std::nullopt) {
  return PlotRow{label, ratio, memory_bound, share};
}


BenchRow bench_row(int64_t m, const std::string& tag, double ours_us, double base_us,
                   double gbps) {
  BenchRow r;
  r.problem = autogemm::testing::problem(m, 7168, 2048);
  r.tag = tag;
  r.config = "64x64x64 s8 c1 ws p g8";
  r.ours = summarize({ours_us});
  r.gbps = gbps;
  if (base_us > 0) {
    r.baseline = summarize({base_us});
    r.ratio = base_us / ours_us;
  }
  return r;
}

std::string temp_path(const std::string& name) { return ::testing::TempDir() + name; }

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(BenchPlot, OneBarPerRowAroundTheLineAtOne) {
  const std::string svg = plot_svg({row("64 x 7168 x 2048 decode", 1.10),
                                    row("4096 x 4096 x 4096 square", 0.95),
                                    row("8192 x 8192 x 8192 square", 1.0)});
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg "), 1u);
  EXPECT_EQ(count(svg, "class=\"ratio-bar\""), 3u) << svg;
  EXPECT_EQ(count(svg, "class=\"one\""), 1u) << svg;   // the line at 1.0
  EXPECT_EQ(count(svg, "class=\"label\""), 3u) << svg;
  EXPECT_NE(svg.find(">64 x 7168 x 2048 decode</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">1.100</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">0.950</text>"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"na\""), 0u);
  // Faster and slower rows in different colours.
  EXPECT_NE(svg.find("#2e7d32"), std::string::npos);
  EXPECT_NE(svg.find("#c62828"), std::string::npos);
}

TEST(BenchPlot, RowsWithoutBaselineAreMarkedNa) {
  const std::string svg = plot_svg({row("64 x 64 x 64", 1.2), row("128 x 64 x 64", std::nullopt),
                                    row("256 x 64 x 64", std::nan(""))});
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(count(svg, "class=\"ratio-bar\""), 1u) << svg;
  EXPECT_EQ(count(svg, "class=\"na\""), 2u) << svg;
  EXPECT_EQ(count(svg, "class=\"label\""), 3u) << svg;
  EXPECT_NE(svg.find("n/a"), std::string::npos);
}

TEST(BenchPlot, LabelsAndTitlesAreEscaped) {
  PlotOptions options;
  options.title = "A&B <title>";
  options.subtitle = "\"quoted\" & 'single'";
  const std::string svg = plot_svg({row("64 x 64 x 64 a&b<c>", 1.0)}, options);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("64 x 64 x 64 a&amp;b&lt;c&gt;"), std::string::npos) << svg;
  EXPECT_NE(svg.find("A&amp;B &lt;title&gt;"), std::string::npos) << svg;
  EXPECT_NE(svg.find("&quot;quoted&quot; &amp; &apos;single&apos;"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("a&b"), std::string::npos);
  EXPECT_EQ(svg.find("<c>"), std::string::npos);
  EXPECT_EQ(xml_escape("1 & 2 < 3"), "1 &amp; 2 &lt; 3");
}

TEST(BenchPlot, MemoryBoundPanelOnlyWithMemoryBoundRows) {
  const std::string compute = plot_svg({row("4096 x 4096 x 4096", 1.0)});
  EXPECT_EQ(compute.find("id=\"memory-bound\""), std::string::npos) << compute;
  EXPECT_EQ(count(compute, "class=\"share-bar\""), 0u);

  const std::string svg = plot_svg({row("64 x 7168 x 2048", 1.05, true, 0.74),
                                    row("128 x 7168 x 2048", std::nullopt, true, 0.5),
                                    row("4096 x 4096 x 4096", 0.99)});
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("id=\"memory-bound\""), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "class=\"share-bar\""), 2u) << svg;
  EXPECT_NE(svg.find(">74%</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">100%</text>"), std::string::npos) << svg;  // the axis reaches 100%
  EXPECT_EQ(count(svg, "class=\"ratio-bar\""), 2u) << svg;
  EXPECT_EQ(count(svg, "class=\"label\""), 5u) << svg;  // 3 rows + 2 memory-bound ones

  // Memory-bound rows with no known copy bandwidth: no panel (nothing to draw).
  const std::string unknown = plot_svg({row("64 x 7168 x 2048", 1.05, true)});
  EXPECT_EQ(unknown.find("id=\"memory-bound\""), std::string::npos) << unknown;
}

TEST(BenchPlot, PlotRowsFromBenchRows) {
  const std::vector<BenchRow> rows = {bench_row(64, "decode", 10, 11, 2000),
                                      bench_row(4096, "prefill", 100, 0, 500)};
  std::vector<PlotRow> plot = plot_rows(rows, 4000);
  ASSERT_EQ(plot.size(), 2u);
  EXPECT_EQ(plot[0].label, "64 x 7168 x 2048 decode");
  ASSERT_TRUE(plot[0].ratio.has_value());
  EXPECT_NEAR(*plot[0].ratio, 1.1, 1e-12);
  EXPECT_TRUE(plot[0].memory_bound);
  ASSERT_TRUE(plot[0].copy_share.has_value());
  EXPECT_NEAR(*plot[0].copy_share, 0.5, 1e-12);
  EXPECT_EQ(plot[1].label, "4096 x 7168 x 2048 prefill");
  EXPECT_FALSE(plot[1].ratio.has_value());  // no baseline
  EXPECT_FALSE(plot[1].memory_bound);
  EXPECT_FALSE(plot[1].copy_share.has_value());

  plot = plot_rows(rows, 0);  // copy bandwidth unknown
  EXPECT_TRUE(plot[0].memory_bound);
  EXPECT_FALSE(plot[0].copy_share.has_value());
}

TEST(BenchPlot, CsvReadsBackWhatCsvLineWrote) {
  BenchRow with = bench_row(64, "decode", 12.5, 13.75, 2410.02);
  with.config = "64x64x64 s8 \"c1\", ws";  // quotes and a comma inside the quoted field
  with.tflops = 148.28;
  with.baseline_tflops = 135.61;
  with.diff = 2.5e-8;
  with.diff_ref = "cublaslt";
  BenchRow without = bench_row(4096, "prefill", 100, 0, 500);
  without.problem.a_type = without.problem.b_type = DType::e4m3;
  without.problem.layout = Layout::nt;
  std::stringstream csv;
  csv << "# a comment\n" << csv_header() << "\r\n" << csv_line(with) << "\n\n"
      << csv_line(without) << "\n";
  const std::vector<BenchRow> rows = rows_from_csv(csv, "--replot", "x.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].problem.m, 64);
  EXPECT_EQ(rows[0].problem.n, 7168);
  EXPECT_EQ(rows[0].problem.k, 2048);
  EXPECT_EQ(rows[0].problem.a_type, DType::bf16);
  EXPECT_EQ(rows[0].config, with.config);
  EXPECT_DOUBLE_EQ(rows[0].ours.median_us, 12.5);
  EXPECT_DOUBLE_EQ(rows[0].gbps, 2410.02);
  EXPECT_DOUBLE_EQ(rows[0].tflops, 148.28);
  ASSERT_TRUE(rows[0].baseline.has_value());
  EXPECT_DOUBLE_EQ(rows[0].baseline->median_us, 13.75);
  EXPECT_NEAR(rows[0].ratio, 1.1, 1e-4);
  EXPECT_NEAR(rows[0].diff, 2.5e-8, 1e-10);
  EXPECT_EQ(rows[0].diff_ref, "cublaslt");
  EXPECT_EQ(rows[0].tag, "");  // the CSV has no tag column
  EXPECT_EQ(dtype_label(rows[1].problem), "fp8");
  EXPECT_EQ(rows[1].problem.scaling, Scaling::block_1x128_128x128);
  EXPECT_FALSE(rows[1].baseline.has_value());
  EXPECT_TRUE(std::isnan(rows[1].diff));
  EXPECT_EQ(csv_line(rows[0]), csv_line(with));
}

TEST(BenchPlot, CsvErrorsNameTheFileAndLine) {
  std::stringstream missing_column("m,n,dtype,time_us\n64,64,bf16,1\n");
  try {
    rows_from_csv(missing_column, "--replot", "bad.csv");
    FAIL() << "accepted a header without k";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--replot = bad.csv: line 1"), std::string::npos)
        << e.what();
  }
  std::stringstream bad_size(csv_header() + "\n64,x,64,bf16,nt,\"c\",1,1,1,,,,,,\"\"\n");
  try {
    rows_from_csv(bad_size, "--replot", "bad.csv");
    FAIL() << "accepted n = x";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2: n \"x\""), std::string::npos) << e.what();
  }
  std::stringstream empty("# nothing\n");
  EXPECT_THROW(rows_from_csv(empty, "--replot", "bad.csv"), InvalidArgument);
}

TEST(BenchPlot, ReplotDrawsACsvWithoutAGpu) {
  const std::string csv = temp_path("autogemm_replot.csv");
  const std::string suite = temp_path("autogemm_replot_suite.csv");
  const std::string svg = temp_path("autogemm_replot.svg");
  {
    std::ofstream out(csv);
    out << csv_header() << "\n"
        << csv_line(bench_row(64, "", 10, 11, 2000)) << "\n"
        << csv_line(bench_row(4096, "", 100, 0, 500)) << "\n";
    std::ofstream tags(suite);
    tags << "m,n,k,tag\n64,7168,2048,decode\n4096,7168,2048,prefill\n";
  }
  std::remove(svg.c_str());
  const CliRun run = run_cli("bench --replot " + csv + " --suite " + suite + " --plot " + svg +
                             " --copy-gbps 4000");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("2 rows"), std::string::npos) << run.out;
  const std::string text = read_all(svg);
  EXPECT_EQ(xml_problem(text), "") << text;
  EXPECT_EQ(count(text, "class=\"ratio-bar\""), 1u) << text;
  EXPECT_EQ(count(text, "class=\"na\""), 1u) << text;
  EXPECT_NE(text.find("64 x 7168 x 2048 decode"), std::string::npos) << text;
  EXPECT_NE(text.find("4096 x 7168 x 2048 prefill"), std::string::npos) << text;
  EXPECT_NE(text.find("id=\"memory-bound\""), std::string::npos) << text;
  EXPECT_NE(text.find(">50%</text>"), std::string::npos) << text;  // 2000 of 4000 GB/s

  // --replot needs --plot, and draws no sizes of its own.
  CliRun bad = run_cli("bench --replot " + csv);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--plot"), std::string::npos) << bad.out;
  bad = run_cli("bench --replot " + csv + " --plot " + svg + " --m 64 --n 64 --k 64");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  bad = run_cli("bench --replot /no/such/file.csv --plot " + svg);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--replot = /no/such/file.csv: cannot be read"), std::string::npos)
      << bad.out;
  bad = run_cli("bench --replot " + csv + " --plot /no/such/dir/x.svg");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--plot = /no/such/dir/x.svg: cannot be written"), std::string::npos)
      << bad.out;
  std::remove(csv.c_str());
  std::remove(suite.c_str());
  std::remove(svg.c_str());
}

TEST(BenchPlot, TheDocsPictureIsTheReplotOfItsCsv) {
  // docs/perf/h200-bf16-public.svg is `autogemm bench --replot` of the CSV beside it; drawn
  // again, it must be the same file (regenerate it with the command in README.md).
  const std::string dir = std::string(AUTOGEMM_SOURCE_DIR) + "/";
  const std::string svg = temp_path("autogemm_docs_replot.svg");
  const CliRun run = run_cli("bench --replot " + dir + "docs/perf/h200-2026-11-24-bf16-public.csv"
                             " --suite " + dir + "bench/suites/gemm-public.csv --copy-gbps 4258"
                             " --plot " + svg);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const std::string drawn = read_all(svg);
  std::remove(svg.c_str());
  EXPECT_EQ(count(drawn, "class=\"ratio-bar\""), 20u);
  EXPECT_EQ(count(drawn, "class=\"share-bar\""), 12u);
  EXPECT_EQ(drawn, read_all(dir + "docs/perf/h200-bf16-public.svg"));
}

TEST(BenchPlot, ScheduleTimelineHasALanePerGpuABarPerGemmAndTheGaps) {
  using namespace autogemm::bench;
  TimelinePanel panel;
  panel.heading = "load: makespan 300 us & more";
  TimelineLane gpu0{"GPU 0", {{0, 100, false, "GEMM 0: 64 x 2112 x 7168"}, {130, 300, true, "GEMM 2 <x>"}}, {{100, 30}}};
  TimelineLane gpu1{"GPU 1", {{0, 290, false, "GEMM 1"}}, {}};
  panel.lanes = {gpu0, gpu1};
  const std::string svg = timeline_svg({panel, panel}, PlotOptions{"schedule", "", 0});
  auto count = [&](const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = svg.find(part); at != std::string::npos; at = svg.find(part, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"gemm\""), 6u);
  EXPECT_EQ(count("class=\"gap\""), 2u);
  EXPECT_EQ(count("fill=\"#ef6c00\""), 2u);   // the migrated GEMM, in both panels
  EXPECT_NE(svg.find("GEMM 2 &lt;x&gt;"), std::string::npos);
  EXPECT_NE(svg.find("makespan 300 us &amp; more"), std::string::npos);
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}
