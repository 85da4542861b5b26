#pragma once
// The `autogemm bench` command lives in three files: cmd_bench.cpp (the command, its options, the
// GEMM suite), cmd_bench_grouped.cpp (--grouped FILE: the grouped suite) and
// cmd_bench_grouped_wgrad.cpp (--wgrad FILE of a grouped weight-gradient suite). What they share.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "bench/bench_runner.hpp"

namespace autogemm::cli {

// ---- defined in cmd_bench.cpp -------------------------------------------------------------------

// Either a GPU to measure, or a preset to plan for and the line that says why.
struct Target {
  bool measure = false;
  GpuInfo device;
  std::string plan_note;
};

// --device: "" (GPU 0, or the fallback preset without a GPU), an ordinal, or a preset name.
Target choose_target(const std::string& spec);

// Throws InvalidArgument(option, path, why) unless `path` can be written, before anything is
// measured; leaves no file behind.
void check_writable(const char* option, const std::string& path);
void write_file(const char* option, const std::string& path, const std::string& text);

// --config for every problem of a suite on `device`, or nothing when `config` is empty: checked
// by compile's rules (config_spec) for each problem before anything is planned or measured,
// with or without a GPU. Throws InvalidArgument naming --config, the problem it cannot run and
// the rule.
std::optional<GemmConfig> checked_config(const std::string& config,
                                         const std::vector<GemmProblem>& problems,
                                         const GpuInfo& device);

// The measuring options both suites take from the command line (--warmup, --iters,
// --no-baseline, --l2-warm, --seed) on `target`'s GPU; the caller adds its --config.
template <class CliOptions>
bench::BenchOptions measure_options(const CliOptions& o, const Target& target) {
  bench::BenchOptions options;
  options.device = target.device.ordinal;
  options.warmup = o.warmup;
  options.iters = o.iters;
  options.baseline = !o.no_baseline;
  options.flush_l2 = !o.l2_warm;
  options.seed = o.seed;
  return options;
}

// ---- defined in cmd_bench_grouped.cpp ----------------------------------------------------------

// `bench --grouped FILE` and the options of `bench` it takes.
struct GroupedBenchCliOptions {
  std::string suite;       // --grouped FILE
  std::string dtype = "bf16";
  std::string out_dtype;   // empty: the input type
  std::string device;
  int warmup = 5;
  int iters = 30;
  uint64_t seed = 2026;
  std::string csv;
  bool json = false;
  bool no_baseline = false;
  bool l2_warm = false;
  std::string config;
  // Options of `bench` given on the command line that --grouped does not take: name and value.
  // Each is refused (InvalidArgument naming it) before anything runs.
  std::vector<std::pair<std::string, std::string>> not_taken;
};

// Measures the grouped suite (or, without a GPU, shows each row's drawn groups); throws
// CLI::RuntimeError(1) when a row FAILED, InvalidArgument for bad options or a bad suite file.
void run_grouped_bench(const GroupedBenchCliOptions& options);

// ---- defined in cmd_bench_grouped_wgrad.cpp ----------------------------------------------------

// `bench --wgrad FILE` where FILE is a grouped weight-gradient suite (its header names a groups
// column: bench/grouped_wgrad_suite.hpp): the options of `bench` it takes are --grouped's
// (`suite` is the --wgrad FILE; `out_dtype` stays empty: dW is fp32), and those it does not in
// `not_taken`.
using GroupedWgradBenchCliOptions = GroupedBenchCliOptions;

// Measures the grouped weight-gradient suite (or, without a GPU, shows each row's plan); throws
// CLI::RuntimeError(1) when a row FAILED, InvalidArgument for bad options or a bad suite file.
void run_grouped_wgrad_bench(const GroupedWgradBenchCliOptions& options);

}  // namespace autogemm::cli
