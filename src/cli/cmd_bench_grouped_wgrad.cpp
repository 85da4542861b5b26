// `autogemm bench --wgrad FILE` on a grouped (mixture-of-experts) suite: our
// grouped_weight_gradient() against a per-expert cuBLASLt loop on the same inputs, row by row
// (bench/grouped_wgrad_bench.hpp), bf16 or fp16 inputs into fp32 dW; without a GPU, each row's
// plan instead. A row that fails is shown as FAILED, the suite goes on, and the exit code is then
// 1, as for `bench --suite`. This file reads options; the measuring and formatting live in
// src/bench (grouped_wgrad_bench.hpp, grouped_wgrad_report.hpp).
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_wgrad_bench.hpp"
#include "bench/grouped_wgrad_report.hpp"
#include "bench/grouped_wgrad_suite.hpp"
#include "bench/progress.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/commands.hpp"

namespace autogemm::cli {

namespace {

void refuse_options_not_taken(const GroupedWgradBenchCliOptions& o) {
  for (const auto& [name, value] : o.not_taken) {
    if (name == "--suite" || name == "--m" || name == "--n" || name == "--k")
      throw InvalidArgument(name, value,
                            fmt::format("--wgrad {} takes its rows from the file: no --suite or "
                                        "--m/--n/--k",
                                        o.suite));
    if (name == "--out-dtype")
      throw InvalidArgument(name, value,
                            "a weight gradient accumulates into fp32 (a 16-bit dW would round "
                            "every micro-batch's sum)");
    if (name == "--layout")
      throw InvalidArgument(name, value, "--wgrad sets it: dY and X are token-major (tn)");
    if (name == "--autotune")
      throw InvalidArgument(name, value,
                            "grouped weight gradients are not autotuned (the experts' tokens live "
                            "on the device); --config forces a configuration");
    throw InvalidArgument(name, value,
                          "a grouped --wgrad suite does not take this option (it takes --dtype, "
                          "--seed, --warmup, --iters, --csv, --json, --device, --config, "
                          "--no-baseline, --l2-warm)");
  }
}

DType input_type(const std::string& dtype) {
  const std::optional<DType> t = parse_dtype(dtype);
  if (t == DType::bf16 || t == DType::fp16) return *t;
  throw InvalidArgument("--dtype", dtype,
                        "experts' weight gradients run on bf16 or fp16 (their FP8 form is not "
                        "built; a dense --wgrad suite takes --dtype fp8)");
}

void print_results(const GroupedWgradBenchCliOptions& o, const Target& target, DType in,
                   const std::vector<bench::GroupedWgradRow>& rows) {
  if (o.json) {
    std::cout << bench::grouped_wgrad_rows_to_json(rows) << "\n";
    return;
  }
  fmt::print("device {} (GPU {}); {} dY and X, fp32 dW accumulated; {} warm-up + {} timed calls "
             "each, median; {}; each expert's tokens drawn uniformly in [0.7, 1.3] x "
             "tokens_per_group (seed {})\n\n{}",
             target.device.name, target.device.ordinal, to_string(in), o.warmup, o.iters,
             o.l2_warm ? "L2 NOT flushed (--l2-warm: a diagnostic)"
                       : "L2 flushed before every timed call",
             o.seed, bench::format_grouped_wgrad_table(rows));
  if (const std::string summary = bench::format_grouped_wgrad_summary(rows, !o.no_baseline);
      !summary.empty())
    fmt::print("\n{}", summary);
}

std::string csv_text(const std::vector<bench::GroupedWgradRow>& rows) {
  std::string text = bench::grouped_wgrad_csv_header() + "\n";
  for (const bench::GroupedWgradRow& row : rows) text += bench::grouped_wgrad_csv_line(row) + "\n";
  return text;
}

}  // namespace

void run_grouped_wgrad_bench(const GroupedWgradBenchCliOptions& o) {
  refuse_options_not_taken(o);
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  const DType in = input_type(o.dtype);
  // The rows first (a bad line is reported before any device query), then the output file.
  const std::vector<bench::GroupedWgradItem> items = bench::make_grouped_wgrad_items(
      bench::load_grouped_wgrad_suite(o.suite), o.suite, in, o.seed);
  if (!o.csv.empty()) check_writable("--csv", o.csv);
  const Target target = choose_target(o.device);
  std::vector<GemmProblem> problems;
  for (const bench::GroupedWgradItem& item : items) problems.push_back(item.problem);
  const std::optional<GemmConfig> config = checked_config(o.config, problems, target.device);

  if (!target.measure) {
    const auto plans = bench::plan_grouped_wgrad_items(items, target.device, config);
    if (o.json) {
      fmt::print(stderr, "{}\n", target.plan_note);
      std::cout << bench::grouped_wgrad_plans_json(items, plans, target.device.preset,
                                                   target.plan_note)
                << "\n";
    } else {
      fmt::print("{}\n\n{}", target.plan_note, bench::format_grouped_wgrad_plans(items, plans));
    }
    if (!o.csv.empty())
      fmt::print(stderr, "autogemm: note: --csv {} not written: nothing was measured\n", o.csv);
    return;
  }

  bench::BenchOptions options = measure_options(o, target);
  options.config = config;
  std::vector<bench::GroupedWgradRow> rows;
  {
    // A line on stderr once the run takes longer than 2 s, when stderr is a terminal.
    bench::ProgressReporter progress(std::cerr, bench::stderr_is_terminal());
    rows = bench::run_grouped_wgrad_bench(
        items, options,
        [&progress](std::size_t done, std::size_t total, const bench::GroupedWgradItem* item) {
          const bench::BenchItem shown{item ? item->problem : GemmProblem{},
                                       item ? item->source.tag : std::string()};
          progress.update(done, total, item ? &shown : nullptr);
        });
  }
  // Printed before the file is written: a file that fails now does not lose the results.
  print_results(o, target, in, rows);
  if (!o.csv.empty()) write_file("--csv", o.csv, csv_text(rows));
  if (const std::size_t failed = bench::grouped_wgrad_failed_rows(rows); failed > 0) {
    fmt::print(stderr, "autogemm: {} of {} row{} FAILED (the table says why)\n", failed,
               rows.size(), rows.size() == 1 ? "" : "s");
    throw CLI::RuntimeError(1);
  }
}

}  // namespace autogemm::cli
