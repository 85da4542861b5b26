// `autogemm bench`: our gemm() against cuBLASLt on the same inputs, per shape, with the
// geometric-mean speed ratio; without a GPU, the plan for a preset instead. The measuring and
// formatting live in src/bench (bench_runner.hpp, bench_report.hpp); this file reads options.
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "bench/copy_bandwidth.hpp"
#include "bench/suite.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
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
  bool json = false;
  bool no_baseline = false;
  bool l2_warm = false;
  uint64_t seed = 2026;
  std::string config;
  int autotune = -1;
};

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
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    GemmProblem p = make_problem(shapes[i].m, shapes[i].n, shapes[i].k, o.dtype, o.layout, 0, 0, 0);
    if (!o.out_dtype.empty()) {
      const auto out = parse_dtype(o.out_dtype);
      if (!out) throw InvalidArgument("--out-dtype", o.out_dtype, "expected bf16, fp16 or fp32");
      p.d_type = *out;
      validate(p);
    }
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

// Either a GPU to measure, or a preset to plan for and the line that says why.
struct Target {
  bool measure = false;
  GpuInfo device;
  std::string plan_note;
};

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

void write_csv(const std::string& path, const std::vector<bench::BenchRow>& rows) {
  std::ofstream file(path);
  if (!file) throw InvalidArgument("--csv", path, "cannot be opened for writing");
  file << bench::csv_header() << "\n";
  for (const bench::BenchRow& row : rows) file << bench::csv_line(row) << "\n";
  if (!file.flush()) throw InvalidArgument("--csv", path, "could not be written completely");
}

void run(const BenchCliOptions& o) {
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  // Problems first: a bad size or dtype is reported before any device query.
  const std::vector<bench::BenchItem> items = items_from(o);
  const Target target = choose_target(o.device);

  if (!target.measure) {
    const auto rows = bench::plan_items(items, target.device);
    if (o.json) {
      fmt::print(stderr, "{}\n", target.plan_note);
      std::cout << bench::plan_rows_to_json(rows, target.device.preset, target.plan_note) << "\n";
    } else {
      fmt::print("{}\n\n{}", target.plan_note, bench::format_plan_table(rows));
    }
    if (!o.csv.empty())
      fmt::print(stderr, "autogemm: note: --csv {} not written: nothing was measured\n", o.csv);
    return;
  }

  bench::BenchOptions options;
  options.device = target.device.ordinal;
  options.warmup = o.warmup;
  options.iters = o.iters;
  options.baseline = !o.no_baseline;
  options.flush_l2 = !o.l2_warm;
  options.seed = o.seed;
  if (!o.config.empty()) options.config = GemmConfig::parse(o.config);
  options.autotune = o.autotune;
  // The copy bandwidth is what the memory-bound rows (M <= 128) are judged against. It is
  // measured on every GPU run, not only when such a row exists: it costs tens of milliseconds,
  // gives --json a stable copy_gbps field and puts every row's GB/s in context. Measured first,
  // so a failure stops the run before the cases are timed (on the legacy default stream:
  // nothing else runs yet).
  const bench::CopyBandwidth copy = bench::measure_copy_bandwidth(options.device, nullptr);
  bench::ProgressBar bar(stderr);
  const auto rows = bench::run_bench(
      items, options, target.device,
      [&bar](std::size_t done, std::size_t total, const bench::BenchItem* item) {
        bar.update(done, total, item);
      });

  if (!o.csv.empty()) write_csv(o.csv, rows);
  if (o.json) {
    std::cout << bench::rows_to_json(rows, &copy) << "\n";
    return;
  }
  fmt::print("device {} (GPU {}); {} warm-up + {} timed calls each, median; {}\n\n{}",
             target.device.name, target.device.ordinal, o.warmup, o.iters,
             o.l2_warm ? "L2 NOT flushed (--l2-warm: inputs that fit stay in L2; a diagnostic)"
                       : "L2 flushed before every timed call",
             bench::format_table(rows));
  fmt::print("\n{}\n", bench::format_copy_bandwidth_line(copy, rows));
  if (const std::string table = bench::format_same_bytes_table(rows); !table.empty())
    fmt::print("\n{}", table);
  if (options.baseline)
    fmt::print("\ngeomean ratio (cuBLASLt time / ours; > 1: autogemm faster): {:.3f} over {} "
               "case{}\n",
               bench::geomean_ratio(rows), rows.size(), rows.size() == 1 ? "" : "s");
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
                  "shape suite file: '#' comments, header m,n,k[,tag] (e.g. suites/gemm-public.csv)");
  cmd->add_option("--dtype", o->dtype, "input type: bf16, fp16 or fp8 (e4m3, block-scaled)")
      ->capture_default_str();
  cmd->add_option("--layout", o->layout,
                  "storage of A and B: nt (both K-major), nn, tn, tt (first letter A)")
      ->capture_default_str();
  cmd->add_option("--out-dtype", o->out_dtype, "type of D: bf16, fp16 or fp32 (default: bf16, "
                                               "fp16 for fp16 inputs)");
  cmd->add_option("--device", o->device,
                  "GPU index to measure, or a preset name to show its plan; default: GPU 0, "
                  "else the plan for h100-sxm");
  cmd->add_option("--warmup", o->warmup, "untimed calls before timing")->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed calls (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--csv", o->csv, "also write the rows to this CSV file");
  cmd->add_flag("--json", o->json,
                "print JSON (rows, geometric-mean ratio, copy bandwidth) instead of a table");
  cmd->add_flag("--no-baseline", o->no_baseline, "time autogemm only (no cuBLASLt, no diff)");
  cmd->add_flag("--l2-warm", o->l2_warm,
                "do not flush the L2 before each timed call (diagnostic: shows whether a row is "
                "limited by DRAM; reported figures use the default flush)");
  cmd->add_option("--seed", o->seed, "random input seed")->capture_default_str();
  cmd->add_option("--autotune", o->autotune,
                  "time this many of the planner's best distinct configurations on the first "
                  "call of each case and keep the fastest (warm-up calls absorb it; default: "
                  "$AUTOGEMM_AUTOTUNE, else 0)");
  cmd->add_option("--config", o->config,
                  "force our configuration for every case, as `autogemm plan` prints it "
                  "(e.g. \"128x256x64 s3 c2 p g8\"), or cuBLASLt to time the vendor "
                  "path of gemm() (with --no-baseline: cuBLASLt alone)");
  cmd->callback([o] { run(*o); });
}

}  // namespace autogemm::cli
