// `autogemm bench`: our gemm() against cuBLASLt on the same inputs, per shape, with the
// geometric-mean speed ratio; without a GPU, the plan for a preset instead; with --replot, the
// picture of an earlier run's CSV. A row that fails (our call throws, or its D is wrong) is
// shown as FAILED and the suite goes on; the exit code is then 1. cuBLASLt declining a call
// (runtime::CublasLtRefusal) is no failure: the baseline, or a row whose own call gemm() sends
// to cuBLASLt, is shown as n/a with the reason. The measuring and formatting live in src/bench
// (bench_runner.hpp, bench_report.hpp, plot_svg.hpp, progress.hpp); this file reads options.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "bench/copy_bandwidth.hpp"
#include "bench/grouped_wgrad_suite.hpp"
#include "bench/plot_svg.hpp"
#include "bench/progress.hpp"
#include "bench/suite.hpp"
#include "bench/grouped_weights_bench.hpp"
#include "bench/weights_bench.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_bench_multi.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/commands.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli/row_problem.hpp"
#include "cli/size_list.hpp"

namespace autogemm::cli {

namespace {

struct BenchCliOptions {
  std::string m, n, k, suite;
  std::string dtype = "bf16";
  std::string layout = "nt";
  std::string out_dtype;  // empty: bf16 (fp16 for fp16 inputs)
  std::string device;
  int warmup = 5;
  int iters = 30;
  std::string csv;
  std::string plot;     // --plot FILE.svg
  std::string replot;   // --replot CSV: draw that file instead of measuring
  double copy_gbps = 0; // --copy-gbps, with --replot
  bool json = false;
  bool no_baseline = false;
  bool l2_warm = false;
  uint64_t seed = 2026;
  std::string config;
  int autotune = -1;
  std::string grouped;  // --grouped FILE: the grouped suite instead (cmd_bench_grouped.cpp)
  bool accumulate = false;   // --accumulate: D += A B (beta = 1, C = D)
  std::string wgrad;         // --wgrad FILE: = --suite FILE --layout tn --out-dtype fp32 --accumulate
  std::string weights;       // --weights FORMAT: weight-only B (bench/weights_bench.hpp)
  // The fused epilogue every row runs (timed against our plain GEMM, the unfused sequence and
  // cuBLASLt's own fused epilogue: bench/epilogue_case.hpp).
  EpilogueOptions epilogue;
};

// --wgrad FILE: the weight gradient dW (+)= dY^T X of each row (m = out features, n = in
// features, k = tokens), as training stores dY and X (token-major: layout tn), into fp32.
BenchCliOptions with_wgrad(BenchCliOptions o) {
  if (o.wgrad.empty()) return o;
  if (!o.suite.empty() || !o.m.empty())
    throw InvalidArgument("--wgrad", o.wgrad, "takes its rows from the file: no --suite or --m");
  check_wgrad_types(o.dtype, o.out_dtype);
  o.suite = o.wgrad;
  o.layout = "tn";
  o.out_dtype = "fp32";
  o.accumulate = true;
  return o;
}

std::vector<bench::BenchItem> items_from(const BenchCliOptions& o) {
  const bool sizes = !o.m.empty() || !o.n.empty() || !o.k.empty();
  if (sizes && !o.suite.empty())
    throw InvalidArgument("--suite", o.suite, "give either --suite or --m/--n/--k, not both");
  if (!sizes && o.suite.empty())
    throw InvalidArgument("--m/--n/--k", "missing",
                          "give the sizes (--m 4096 --n 4096 --k 4096, lists and ranges allowed) "
                          "or a suite file (--suite suites/gemm-public.csv)");
  std::vector<GemmShape> shapes;
  std::vector<std::string> tags;
  if (sizes) {
    for (const auto& [name, value] : {std::pair{"--m", &o.m}, {"--n", &o.n}, {"--k", &o.k}})
      if (value->empty())
        throw InvalidArgument(name, "missing", "--m, --n and --k go together");
    shapes = shape_product(parse_size_list("--m", o.m), parse_size_list("--n", o.n),
                           parse_size_list("--k", o.k));
    tags.resize(shapes.size());
  } else {
    for (const bench::BenchCase& c : bench::load_suite(o.suite)) {
      shapes.push_back(GemmShape{c.m, c.n, c.k});
      tags.push_back(c.tag);
    }
  }
  std::vector<bench::BenchItem> items;
  items.reserve(shapes.size());
  const Epilogue epilogue = o.epilogue.epilogue();
  if (epilogue.gated)
    throw InvalidArgument("--gated", "true",
                          "bench compares D = M x N with cuBLASLt, which has no gated epilogue; "
                          "bench/mlp_block.py times gated layers and the FP8 MLP block");
  const RowOptions row{o.dtype, o.layout, o.out_dtype, o.accumulate, !o.wgrad.empty()};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    GemmProblem p = row_problem(shapes[i].m, shapes[i].n, shapes[i].k, row);
    p.epilogue = epilogue;
    if (o.accumulate && !epilogue.empty())
      throw InvalidArgument("--accumulate", "true",
                            "accumulating rows (D += A B) are timed as plain GEMMs: no fused "
                            "epilogue");
    validate(p);
    items.push_back(bench::BenchItem{p, tags[i]});
  }
  return items;
}

bool is_ordinal(const std::string& spec) {
  if (spec.empty()) return false;
  for (unsigned char c : spec)
    if (!std::isdigit(c)) return false;
  return true;
}

}  // namespace

// choose_target, check_writable and write_file serve cmd_bench_grouped.cpp too (cmd_bench.hpp).
Target choose_target(const std::string& spec) {
  const GpuProfile profile = profile_gpus();
  Target t;
  if (profile.gpus.empty()) {
    const std::string preset = spec.empty() || is_ordinal(spec) ? kFallbackPreset : spec;
    t.device = device_preset(preset);  // InvalidArgument lists the presets for a bad name
    t.plan_note = fmt::format("no GPU: {}; showing the plan for {} instead of measuring",
                              profile.unavailable_reason.empty() ? "no CUDA device found"
                                                                 : profile.unavailable_reason,
                              preset);
    return t;
  }
  if (!spec.empty() && !is_ordinal(spec)) {
    t.device = device_preset(spec);
    t.plan_note = fmt::format("{} is a device preset, not a GPU; showing the plan for {} "
                              "instead of measuring (--device 0 measures GPU 0)", spec, spec);
    return t;
  }
  t.measure = true;
  t.device = spec.empty() ? profile.gpus.front() : resolve_device(spec);
  return t;
}

std::optional<GemmConfig> checked_config(const std::string& config,
                                         const std::vector<GemmProblem>& problems,
                                         const GpuInfo& device) {
  if (config.empty()) return std::nullopt;
  for (const GemmProblem& p : problems) {
    try {
      config_spec(p, config, device);
    } catch (const InvalidArgument& e) {
      if (e.argument() != "--config" || problems.size() == 1) throw;
      throw InvalidArgument("--config", e.value(),
                            fmt::format("the row M={} N={} K={}: {}", p.m, p.n, p.k, e.rule()));
    }
  }
  return GemmConfig::parse(config);
}

// Throws unless `path` can be written, before anything is measured, so a bad directory or a
// missing permission does not cost a whole suite's run: an existing file is opened for writing
// without truncating it, a missing one is created and removed again.
void check_writable(const char* option, const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  bool created = false;
  if (fd < 0 && errno == ENOENT) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    created = fd >= 0;
  }
  if (fd < 0)
    throw InvalidArgument(option, path, fmt::format("cannot be written: {}", std::strerror(errno)));
  ::close(fd);
  if (created) ::unlink(path.c_str());
}

void write_file(const char* option, const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  if (!file)
    throw InvalidArgument(option, path, fmt::format("cannot be written: {}", std::strerror(errno)));
  file << text;
  if (!file.flush()) throw InvalidArgument(option, path, "could not be written completely");
}

namespace {

std::string csv_text(const std::vector<bench::BenchRow>& rows) {
  std::string text = bench::csv_header() + "\n";
  for (const bench::BenchRow& row : rows) text += bench::csv_line(row) + "\n";
  return text;
}

std::string plot_subtitle(const std::vector<bench::BenchRow>& rows) {
  std::size_t with_baseline = 0;
  for (const bench::BenchRow& r : rows) with_baseline += r.baseline && r.failure.empty() ? 1 : 0;
  if (with_baseline == 0) return fmt::format("{} rows, none with a cuBLASLt baseline", rows.size());
  return fmt::format("{} rows; geometric-mean ratio {:.3f} over the {} with a cuBLASLt baseline",
                     rows.size(), bench::geomean_ratio(rows), with_baseline);
}

// --replot CSV --plot FILE.svg: an earlier run's rows drawn again, without a GPU.
void replot(const BenchCliOptions& o) {
  if (!o.m.empty() || !o.n.empty() || !o.k.empty())
    throw InvalidArgument("--replot", o.replot,
                          "draws the rows of that CSV; give no --m/--n/--k with it");
  if (o.plot.empty())
    throw InvalidArgument("--plot", "missing", "--replot CSV draws into --plot FILE.svg");
  if (o.copy_gbps < 0)
    throw InvalidArgument("--copy-gbps", fmt::format("{}", o.copy_gbps), "must be > 0");
  check_writable("--plot", o.plot);
  std::ifstream in(o.replot);
  if (!in)
    throw InvalidArgument("--replot", o.replot,
                          fmt::format("cannot be read: {}", std::strerror(errno)));
  std::vector<bench::BenchRow> rows = bench::rows_from_csv(in, "--replot", o.replot);
  // The CSV has no tags: --suite gives them, matched by shape.
  if (!o.suite.empty()) {
    const std::vector<bench::BenchCase> cases = bench::load_suite(o.suite);
    for (bench::BenchRow& row : rows)
      for (const bench::BenchCase& c : cases)
        if (row.tag.empty() && c.m == row.problem.m && c.n == row.problem.n &&
            c.k == row.problem.k)
          row.tag = c.tag;
  }
  bench::PlotOptions options;
  options.title = fmt::format("autogemm against cuBLASLt: {}",
                              std::filesystem::path(o.replot).filename().string());
  options.subtitle = plot_subtitle(rows);
  options.copy_gbps = o.copy_gbps;
  write_file("--plot", o.plot, bench::plot_svg(bench::plot_rows(rows, o.copy_gbps), options));
  fmt::print("{} rows of {} drawn into {}\n", rows.size(), o.replot, o.plot);
}

void print_results(const BenchCliOptions& o, const Target& target,
                   const bench::BenchOptions& options, const bench::CopyBandwidth& copy,
                   const std::vector<bench::BenchRow>& rows) {
  if (o.json) {
    std::cout << bench::rows_to_json(rows, &copy) << "\n";
    return;
  }
  fmt::print("device {} (GPU {}); {} warm-up + {} timed calls each, median; {}\n\n{}",
             target.device.name, target.device.ordinal, o.warmup, o.iters,
             o.l2_warm ? "L2 NOT flushed (--l2-warm: inputs that fit stay in L2; a diagnostic)"
                       : "L2 flushed before every timed call",
             bench::format_table(rows));
  const std::vector<bench::BenchRow> timed = bench::timed_rows(rows);
  fmt::print("\n{}\n", bench::format_copy_bandwidth_line(copy, timed));
  if (const std::string table = bench::format_same_bytes_table(timed); !table.empty())
    fmt::print("\n{}", table);
  if (const std::string summary = bench::format_summary(rows, options.baseline); !summary.empty())
    fmt::print("\n{}", summary);
}

// --grouped FILE: the options the grouped suite shares with `bench`, and those it refuses.
GroupedBenchCliOptions grouped_options(const BenchCliOptions& o) {
  GroupedBenchCliOptions g{o.grouped, o.dtype, o.out_dtype, o.device, o.warmup, o.iters, o.seed,
                           o.csv, o.json, o.no_baseline, o.l2_warm, o.config, {}};
  for (const auto& [name, value] : {std::pair<const char*, std::string>{"--suite", o.suite},
                                    {"--m", o.m}, {"--n", o.n}, {"--k", o.k},
                                    {"--plot", o.plot}, {"--replot", o.replot}})
    if (!value.empty()) g.not_taken.emplace_back(name, value);
  if (o.layout != "nt") g.not_taken.emplace_back("--layout", o.layout);
  if (o.autotune != -1) g.not_taken.emplace_back("--autotune", std::to_string(o.autotune));
  if (o.copy_gbps != 0) g.not_taken.emplace_back("--copy-gbps", fmt::format("{}", o.copy_gbps));
  if (const Epilogue e = o.epilogue.epilogue(); !e.empty())
    g.not_taken.emplace_back("the fused epilogue", e.describe());
  return g;
}

WeightFormat weight_format_option(const BenchCliOptions& o) {
  const std::optional<WeightFormat> format = parse_weight_format(o.weights);
  if (!format)
    throw InvalidArgument("--weights", o.weights, "expected int4-g128, int4-g128-zp, int8 or mxfp4");
  return *format;
}

// --weights rows measure on a GPU: the measuring options (--config among them), once --csv is
// known writable, or the rule naming what is missing; `plan_line` is the `autogemm plan`
// command that shows the plans instead.
bench::BenchOptions weights_measure_options(const BenchCliOptions& o, const std::string& plan_line,
                                            std::string& device_name) {
  if (!o.csv.empty()) check_writable("--csv", o.csv);
  const Target target = choose_target(o.device);
  if (!target.measure)
    throw InvalidArgument("--weights", o.weights,
                          fmt::format("measures on a GPU, and none is here ({}); `{}` shows the "
                                      "plans",
                                      target.plan_note, plan_line));
  bench::BenchOptions options = measure_options(o, target);
  if (!o.config.empty()) options.config = GemmConfig::parse(o.config);
  device_name = target.device.name;
  return options;
}

// --weights FORMAT: each row's weight packed in FORMAT, timed against our BF16 kernel, cuBLASLt
// BF16 and a read of the packed bytes (bench/weights_bench.hpp). Needs a GPU.
void run_weights(const BenchCliOptions& o) {
  const WeightFormat format = weight_format_option(o);
  for (const auto& [name, value, allowed] :
       {std::tuple<const char*, std::string, bool>{"--dtype", o.dtype, o.dtype == "bf16"},
        {"--layout", o.layout, o.layout == "nt"},
        {"--out-dtype", o.out_dtype, o.out_dtype.empty() || o.out_dtype == "bf16"}})
    if (!allowed)
      throw InvalidArgument(name, value,
                            fmt::format("--weights {} rows are bf16 activations and output, "
                                        "layout nt: leave it out",
                                        o.weights));
  for (const auto& [name, value] :
       {std::pair<const char*, bool>{"--accumulate", o.accumulate}, {"--json", o.json},
        {"--plot", !o.plot.empty()}, {"--replot", !o.replot.empty()},
        {"the fused epilogue", !o.epilogue.epilogue().empty()}})
    if (value)
      throw InvalidArgument(name, "given", "--weights rows are plain GEMMs reported as a table "
                                           "(and --csv)");
  std::vector<bench::BenchCase> cases;
  for (const bench::BenchItem& item : items_from(o))
    cases.push_back({item.problem.m, item.problem.n, item.problem.k, item.tag});
  std::string device;
  bench::BenchOptions options =
      weights_measure_options(o, fmt::format("autogemm plan --weights {}", o.weights), device);
  options.autotune = o.autotune;
  const auto rows = bench::run_weights_bench(cases, format, options);
  fmt::print("{}", bench::format_weights_table(rows, device));
  if (!o.csv.empty()) write_file("--csv", o.csv, bench::weights_rows_to_csv(rows));
  const auto failed = std::count_if(rows.begin(), rows.end(),
                                    [](const bench::WeightsRow& r) { return !r.failure.empty(); });
  if (failed > 0) throw CLI::RuntimeError(1);
}

// --grouped FILE --weights FORMAT: the suite's masked rows as MoE decode steps with every
// expert's weight packed, against our BF16 grouped GEMM and a read of the packed bytes
// (bench/grouped_weights_bench.hpp). Needs a GPU.
void run_grouped_weights(const BenchCliOptions& o) {
  const WeightFormat format = weight_format_option(o);
  for (const auto& [name, value, allowed] :
       {std::tuple<const char*, std::string, bool>{"--dtype", o.dtype, o.dtype == "bf16"},
        {"--out-dtype", o.out_dtype, o.out_dtype.empty() || o.out_dtype == "bf16"},
        {"--layout", o.layout, o.layout == "nt"}, {"--json", o.json ? "given" : "", !o.json},
        {"--autotune", std::to_string(o.autotune), o.autotune == -1},
        {"the fused epilogue", o.epilogue.epilogue().describe(), o.epilogue.epilogue().empty()}})
    if (!allowed)
      throw InvalidArgument(name, value,
                            fmt::format("--grouped with --weights {}: bf16 activations and "
                                        "output, a table (and --csv); leave it out",
                                        o.weights));
  const std::vector<bench::GroupedCase> cases = bench::load_grouped_suite(o.grouped);
  std::string device;
  const bench::BenchOptions options = weights_measure_options(
      o, fmt::format("autogemm plan --grouped masked --weights {} ...", o.weights), device);
  const auto rows = bench::run_grouped_weights_bench(cases, format, options);
  fmt::print("{}", bench::format_grouped_weights_table(rows, device));
  if (!o.csv.empty()) write_file("--csv", o.csv, bench::grouped_weights_rows_to_csv(rows));
  const auto failed = std::count_if(rows.begin(), rows.end(), [](const bench::GroupedWeightsRow& r) {
    return !r.failure.empty();
  });
  if (failed > 0) throw CLI::RuntimeError(1);
}

// --wgrad FILE of a grouped suite: the options the grouped weight-gradient bench shares with
// `bench`, and those it refuses (--layout tn, --out-dtype fp32 and --accumulate are what it runs).
GroupedWgradBenchCliOptions grouped_wgrad_options(const BenchCliOptions& o) {
  GroupedWgradBenchCliOptions g{o.wgrad, o.dtype, "",          o.device,  o.warmup, o.iters,
                                o.seed,  o.csv,   o.json,      o.no_baseline, o.l2_warm, o.config,
                                {}};
  for (const auto& [name, value] :
       {std::pair<const char*, std::string>{"--suite", o.suite}, {"--m", o.m}, {"--n", o.n},
        {"--k", o.k}, {"--grouped", o.grouped}, {"--weights", o.weights}, {"--plot", o.plot},
        {"--replot", o.replot}})
    if (!value.empty()) g.not_taken.emplace_back(name, value);
  if (o.layout != "nt" && o.layout != "tn") g.not_taken.emplace_back("--layout", o.layout);
  if (!o.out_dtype.empty() && o.out_dtype != "fp32")
    g.not_taken.emplace_back("--out-dtype", o.out_dtype);
  if (o.autotune != -1) g.not_taken.emplace_back("--autotune", std::to_string(o.autotune));
  if (o.copy_gbps != 0) g.not_taken.emplace_back("--copy-gbps", fmt::format("{}", o.copy_gbps));
  if (const Epilogue e = o.epilogue.epilogue(); !e.empty())
    g.not_taken.emplace_back("the fused epilogue", e.describe());
  return g;
}

void run(const BenchCliOptions& o) {
  if (!o.grouped.empty() && !o.weights.empty()) return run_grouped_weights(o);
  if (!o.grouped.empty()) return run_grouped_bench(grouped_options(o));
  if (!o.weights.empty()) return run_weights(o);
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  if (!o.replot.empty()) return replot(o);
  if (o.copy_gbps != 0)
    throw InvalidArgument("--copy-gbps", fmt::format("{}", o.copy_gbps),
                          "goes with --replot (a measuring run measures the copy bandwidth)");
  // Problems first: a bad size or dtype is reported before any device query.
  const std::vector<bench::BenchItem> items = items_from(o);
  // Then the output files (--json prints to stdout): before the device query and the run, so
  // that a path that cannot be written costs nothing.
  if (!o.csv.empty()) check_writable("--csv", o.csv);
  if (!o.plot.empty()) {
    if (o.plot == o.csv)
      throw InvalidArgument("--plot", o.plot, "is the --csv file too; give two files");
    check_writable("--plot", o.plot);
  }
  const Target target = choose_target(o.device);
  std::vector<GemmProblem> problems;
  for (const bench::BenchItem& item : items) problems.push_back(item.problem);
  // Without a GPU, a row the configuration cannot serve is refused up front, naming it (nothing
  // would be measured); on a GPU the text is checked here and such a row fails on its own,
  // the others still measured (exit 1, as every failed row).
  const std::optional<GemmConfig> config =
      target.measure ? (o.config.empty() ? std::nullopt : std::optional(GemmConfig::parse(o.config)))
                     : checked_config(o.config, problems, target.device);

  if (!target.measure) {
    const auto rows = bench::plan_items(items, target.device, config);
    if (o.json) {
      fmt::print(stderr, "{}\n", target.plan_note);
      std::cout << bench::plan_rows_to_json(rows, target.device.preset, target.plan_note) << "\n";
    } else {
      fmt::print("{}\n\n{}", target.plan_note, bench::format_plan_table(rows));
    }
    for (const auto& [option, path] : {std::pair{"--csv", &o.csv}, {"--plot", &o.plot}})
      if (!path->empty())
        fmt::print(stderr, "autogemm: note: {} {} not written: nothing was measured\n", option,
                   *path);
    return;
  }

  bench::BenchOptions options = measure_options(o, target);
  options.config = config;
  options.autotune = o.autotune;
  // The copy bandwidth is what the memory-bound rows (is_memory_bound) are judged against. It is
  // measured on every GPU run, not only when such a row exists: it costs tens of milliseconds,
  // gives --json a stable copy_gbps field and puts every row's GB/s in context. Measured first,
  // so a failure stops the run before the cases are timed (on the legacy default stream:
  // nothing else runs yet).
  const bench::CopyBandwidth copy = bench::measure_copy_bandwidth(options.device, nullptr);
  std::vector<bench::BenchRow> rows;
  {
    // A line on stderr once the run takes longer than 2 s, when stderr is a terminal.
    bench::ProgressReporter progress(std::cerr, bench::stderr_is_terminal());
    rows = bench::run_bench(
        items, options, target.device,
        [&progress](std::size_t done, std::size_t total, const bench::BenchItem* item) {
          progress.update(done, total, item);
        });
  }
  // The results are printed before the files are written: a file that fails now (a full disk)
  // does not lose them.
  print_results(o, target, options, copy, rows);
  if (!o.csv.empty()) write_file("--csv", o.csv, csv_text(rows));
  if (!o.plot.empty()) {
    bench::PlotOptions plot;
    plot.title = fmt::format("autogemm against cuBLASLt on {}, {} {}", target.device.name,
                             o.dtype, o.layout);
    plot.subtitle = plot_subtitle(rows);
    plot.copy_gbps = copy.gbps;
    write_file("--plot", o.plot,
               bench::plot_svg(bench::plot_rows(bench::timed_rows(rows), copy.gbps), plot));
  }
  // Every row ran (a failed row does not stop the suite); the exit code says whether one failed.
  if (const std::size_t failed = bench::failed_rows(rows); failed > 0) {
    fmt::print(stderr, "autogemm: {} of {} row{} FAILED (the table says why)\n", failed,
               rows.size(), rows.size() == 1 ? "" : "s");
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchCliOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Time autogemm against cuBLASLt on the same inputs (plans a preset without a GPU)");
  cmd->add_option("--m", o->m, "rows of A and D: a size, a list 64,128 or a range start:end:step");
  cmd->add_option("--n", o->n, "columns of B and D (list/range like --m)");
  cmd->add_option("--k", o->k, "inner dimension (list/range like --m)");
  cmd->add_option("--suite", o->suite,
                  "shape suite file: '#' comments, header m,n,k[,tag] "
                  "(e.g. bench/suites/gemm-public.csv)");
  cmd->add_option("--grouped", o->grouped,
                  "grouped (MoE) suite file instead: header kind,groups,m_per_group,n,k[,tag] "
                  "(bench/suites/grouped-moe.csv); grouped_gemm() against a per-group cuBLASLt "
                  "loop, cublasGemmGroupedBatchedEx (not for fp8) and our dense kernel on one "
                  "GEMM of the same valid rows; --dtype bf16, fp16 or fp8 (block-scaled, "
                  "checked against the unquantised inputs)");
  cmd->add_option("--dtype", o->dtype, "input type: bf16, fp16 or fp8 (e4m3, block-scaled)")
      ->capture_default_str();
  cmd->add_option("--layout", o->layout,
                  "storage of A and B: nt (both K-major), nn, tn, tt (first letter A)")
      ->capture_default_str();
  cmd->add_option("--out-dtype", o->out_dtype, "type of D: bf16, fp16 or fp32 (default: bf16, "
                                               "fp16 for fp16 inputs)");
  cmd->add_option("--device", o->device,
                  "GPU index to measure, or a preset name to show its plan; default: GPU 0, "
                  "else the plan for h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--warmup", o->warmup, "untimed calls before timing")->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed calls (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "also write the rows to this CSV file");
  cmd->add_option("--plot", o->plot,
                  "also draw the rows into this SVG file: the ratio to cuBLASLt per row and, "
                  "for memory-bound rows (M <= 128, or M <= 256 with B 90% of the bytes), the share of the copy bandwidth");
  cmd->add_option("--replot", o->replot,
                  "draw the rows of a CSV written by --csv into --plot FILE.svg instead of "
                  "measuring (no GPU needed; --suite adds the suite's tags by shape)");
  cmd->add_option("--copy-gbps", o->copy_gbps,
                  "with --replot: the run's device copy bandwidth in GB/s, for the memory-bound "
                  "panel (the CSV does not record it)");
  cmd->add_flag("--json", o->json,
                "print JSON (rows, geometric-mean ratio, copy bandwidth) instead of a table");
  cmd->add_flag("--no-baseline", o->no_baseline,
                "time autogemm only (no cuBLASLt, no diff; rows whose baseline cuBLASLt refuses "
                "are checked against the float64 reference without this)");
  cmd->add_flag("--l2-warm", o->l2_warm,
                "do not flush the L2 before each timed call (diagnostic: shows whether a row is "
                "limited by DRAM; reported figures use the default flush)");
  cmd->add_option("--seed", o->seed, "random input seed")
      ->check(seed_check())
      ->capture_default_str();
  cmd->add_option("--autotune", o->autotune,
                  "time this many (0..64) of the planner's best distinct configurations on the "
                  "first call of each case and keep the fastest (warm-up calls absorb it; "
                  "default: $AUTOGEMM_AUTOTUNE, else 0)")
      ->check([](const std::string& v) -> std::string {
        // The same range as AUTOGEMM_AUTOTUNE (runtime/gemm.cpp); -1 stays the "unset" default.
        int n = 0;
        try {
          n = std::stoi(v);
        } catch (...) {
          return "not a count";
        }
        return n < 0 || n > 64 ? "must be a count of candidates in 0..64" : "";
      });
  cmd->add_option("--config", o->config,
                  "force our configuration for every case, as `autogemm plan` prints it "
                  "(e.g. \"128x256x64 s3 c2 p g8\"), or cuBLASLt to time the vendor "
                  "path of gemm() (with --no-baseline: cuBLASLt alone)");
  o->epilogue.add_to(*cmd);
  cmd->add_flag("--accumulate", o->accumulate,
                "D += A B in place (beta = 1, C is D), as gradients accumulate over micro-batches; "
                "cuBLASLt the same way; checked from the same random starting D");
  cmd->add_option("--wgrad", o->wgrad,
                  "weight-gradient suite (header m,n,k[,tag]: m = out features, n = in features, "
                  "k = tokens; bench/suites/wgrad-dense.csv): dW [m, n] += dY^T X with dY [k, m] "
                  "and X [k, n] token-major, fp32 dW, i.e. --suite FILE --layout tn --out-dtype "
                  "fp32 --accumulate; --dtype bf16 or fp16. The same rows forward-shaped: "
                  "--suite FILE --out-dtype fp32 --accumulate. A header "
                  "m,n,tokens_per_group,groups[,tag] makes it a mixture-of-experts suite "
                  "(bench/suites/wgrad-moe.csv): each expert's tokens drawn in 0.7-1.3 x "
                  "tokens_per_group, dW [groups, m, n] += per expert in one "
                  "grouped_weight_gradient() call, timed against a per-expert cuBLASLt loop "
                  "captured in one CUDA graph");
  cmd->add_option("--weights", o->weights,
                  "weight-only rows: B packed as int4-g128, int4-g128-zp, int8 (per channel) or "
                  "mxfp4 (autogemm/weights.hpp), bf16 activations; each row timed against our "
                  "BF16 kernel, cuBLASLt BF16 and a read of the packed bytes, and checked "
                  "against float64 of the dequantised weight (--suite or --m/--n/--k)");
  // --gpus N: the suite scheduled over several GPUs instead (cmd_bench_multi.cpp).
  auto multi = add_multi_bench_options(*cmd);
  cmd->callback([o, multi, cmd] {
    check_gpus_option(*cmd);
    if (wants_multi_bench(*cmd)) {
      if (const Epilogue e = o->epilogue.epilogue(); !e.empty())
        throw InvalidArgument("epilogue", e.describe(),
                              "the suite over several GPUs (--gpus) runs plain GEMMs; bench a "
                              "fused epilogue on one GPU");
      if (o->accumulate || !o->wgrad.empty())
        throw InvalidArgument(o->accumulate ? "--accumulate" : "--wgrad",
                              o->accumulate ? "true" : o->wgrad,
                              "the suite over several GPUs (--gpus) runs D = A B; bench "
                              "accumulating rows on one GPU");
      return run_multi_bench(*cmd, *multi);
    }
    // A --wgrad suite whose header names a groups column holds experts' gradients.
    if (!o->wgrad.empty() && bench::is_grouped_wgrad_suite(o->wgrad))
      return run_grouped_wgrad_bench(grouped_wgrad_options(*o));
    run(with_wgrad(*o));
  });
}

}  // namespace autogemm::cli
