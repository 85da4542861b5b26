// `autogemm bench --grouped FILE`: our grouped_gemm() against a per-group cuBLASLt loop,
// cublasGemmGroupedBatchedEx and our dense kernel on the same valid rows, row by row of a grouped
// suite (bench/grouped_bench.hpp), bf16, fp16 or block-scaled fp8 inputs; without a GPU, each
// row's drawn groups instead. A row that fails is shown as FAILED, the suite goes on,
// and the exit code is then 1, as for `bench --suite`. This file reads options; the measuring and
// formatting live in src/bench (grouped_bench.hpp, grouped_report.hpp).
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/grouped_report.hpp"
#include "bench/grouped_suite.hpp"
#include "bench/progress.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/commands.hpp"

namespace autogemm::cli {

namespace {

void refuse_options_not_taken(const GroupedBenchCliOptions& o) {
  for (const auto& [name, value] : o.not_taken) {
    if (name == "--suite" || name == "--m" || name == "--n" || name == "--k")
      throw InvalidArgument(name, value,
                            fmt::format("give either --grouped FILE or --suite/--m/--n/--k, not "
                                        "both (--grouped {})",
                                        o.suite));
    throw InvalidArgument(name, value,
                          "--grouped runs the grouped suite, which does not take this option "
                          "(it takes --dtype, --out-dtype, --seed, --warmup, --iters, --csv, "
                          "--json, --device, --config, --no-baseline, --l2-warm)");
  }
}

// bf16, fp16, or fp8: e4m3 with block scales (the bench quantises BF16 data to e4m3 only).
DType input_type(const std::string& dtype) {
  const std::optional<DType> t = parse_dtype(dtype);
  if (t == DType::bf16 || t == DType::fp16 || t == DType::e4m3) return *t;
  throw InvalidArgument("--dtype", dtype,
                        "--grouped measures bf16, fp16 or fp8 inputs (fp8: e4m3 quantised from "
                        "BF16 data with 1x128 scales for A and 128x128 for each group's B)");
}

// --out-dtype, or the input type's default: the input type, bf16 for fp8.
DType output_type(const std::string& out_dtype, DType in) {
  if (out_dtype.empty()) return in == DType::e4m3 ? DType::bf16 : in;
  const std::optional<DType> t = parse_dtype(out_dtype);
  if (t == DType::bf16 || t == DType::fp16 || t == DType::fp32) return *t;
  throw InvalidArgument("--out-dtype", out_dtype, "expected bf16, fp16 or fp32");
}

// "fp8 (block-scaled e4m3) inputs, bf16 D": the types every row runs with.
std::string types_text(DType in, DType out) {
  return fmt::format("{} inputs, {} D",
                     in == DType::e4m3 ? std::string("fp8 (block-scaled e4m3)")
                                       : std::string(to_string(in)),
                     to_string(out));
}

void print_results(const GroupedBenchCliOptions& o, const Target& target, DType in, DType out,
                   const std::vector<bench::GroupedRow>& rows) {
  if (o.json) {
    std::cout << bench::grouped_rows_to_json(rows) << "\n";
    return;
  }
  fmt::print("device {} (GPU {}); {}; {} warm-up + {} timed calls each, median; {}; each group's "
             "M drawn uniformly in [0.7, 1.3] x m_per_group (seed {})\n\n{}",
             target.device.name, target.device.ordinal, types_text(in, out), o.warmup, o.iters,
             o.l2_warm ? "L2 NOT flushed (--l2-warm: a diagnostic)"
                       : "L2 flushed before every timed call",
             o.seed, bench::format_grouped_table(rows));
  if (const std::string summary = bench::format_grouped_summary(rows, !o.no_baseline);
      !summary.empty())
    fmt::print("\n{}", summary);
}

std::string csv_text(const std::vector<bench::GroupedRow>& rows) {
  std::string text = bench::grouped_csv_header() + "\n";
  for (const bench::GroupedRow& row : rows) text += bench::grouped_csv_line(row) + "\n";
  return text;
}

}  // namespace

void run_grouped_bench(const GroupedBenchCliOptions& o) {
  refuse_options_not_taken(o);
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  const DType in = input_type(o.dtype);
  const DType out = output_type(o.out_dtype, in);
  // The rows first (a bad line is reported before any device query), then the output file.
  const std::vector<bench::GroupedItem> items =
      bench::make_grouped_items(bench::load_grouped_suite(o.suite), o.suite, in, out, o.seed);
  if (!o.csv.empty()) check_writable("--csv", o.csv);
  const Target target = choose_target(o.device);
  std::vector<GemmProblem> problems;
  for (const bench::GroupedItem& item : items) problems.push_back(item.problem);
  const std::optional<GemmConfig> config = checked_config(o.config, problems, target.device);

  if (!target.measure) {
    // choose_target's note says why nothing is measured, then what `bench` shows instead
    // ("; showing the plan for ..."): keep the why.
    const std::string note =
        target.plan_note.substr(0, target.plan_note.find("; showing")) +
        "; showing each row's drawn groups instead of measuring (--grouped: " +
        types_text(in, out) + ")";
    if (o.json) {
      fmt::print(stderr, "{}\n", note);
      std::cout << bench::grouped_draws_json(items, note) << "\n";
    } else {
      fmt::print("{}\n\n{}", note, bench::format_grouped_draws(items));
    }
    if (!o.csv.empty())
      fmt::print(stderr, "autogemm: note: --csv {} not written: nothing was measured\n", o.csv);
    return;
  }

  bench::BenchOptions options = measure_options(o, target);
  options.config = config;
  std::vector<bench::GroupedRow> rows;
  {
    // A line on stderr once the run takes longer than 2 s, when stderr is a terminal.
    bench::ProgressReporter progress(std::cerr, bench::stderr_is_terminal());
    rows = bench::run_grouped_bench(
        items, options,
        [&progress](std::size_t done, std::size_t total, const bench::GroupedItem* item) {
          const bench::BenchItem shown{item ? item->problem : GemmProblem{},
                                       item ? item->source.tag : std::string()};
          progress.update(done, total, item ? &shown : nullptr);
        });
  }
  // Printed before the file is written: a file that fails now does not lose the results.
  print_results(o, target, in, out, rows);
  if (!o.csv.empty()) write_file("--csv", o.csv, csv_text(rows));
  if (const std::size_t failed = bench::grouped_failed_rows(rows); failed > 0) {
    fmt::print(stderr, "autogemm: {} of {} row{} FAILED (the table says why)\n", failed,
               rows.size(), rows.size() == 1 ? "" : "s");
    throw CLI::RuntimeError(1);
  }
}

}  // namespace autogemm::cli
