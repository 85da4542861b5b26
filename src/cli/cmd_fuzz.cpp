// `autogemm fuzz [--cases N] [--seed S] [--dtype all] [--minutes T] [--only I] [--cpu]`: random
// calls through autogemm::gemm(), each checked element by element against a float64 reference
// (src/bench/fuzz.hpp says what is drawn). A failure prints a line that reruns it. The run ends
// with "N passed, N failed". `--cpu` needs no GPU: it plans every case, makes its spec (the
// planner's or the forced configuration's), checks it, and compiles up to --compile-limit of
// the distinct kernels with NVRTC.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <map>
#include <cstdio>
#include <optional>
#include <thread>

#include "autogemm/errors.hpp"
#include "bench/fuzz.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"

namespace autogemm::cli {

namespace {

struct FuzzCliOptions {
  int64_t cases = 1000;
  uint64_t seed = 1;
  std::string dtype = "all";
  double minutes = 0;
  int64_t only = -1;
  int families = 160;
  bool cpu = false;
  std::string device;
  int compile_threads = 0;
  int64_t compile_limit = 24;
};

std::vector<bench::FuzzInput> parse_inputs(const std::string& dtype) {
  using bench::FuzzInput;
  if (dtype == "all")
    return {FuzzInput::bf16, FuzzInput::fp16, FuzzInput::fp8_block, FuzzInput::fp8_tensor};
  if (dtype == "bf16") return {FuzzInput::bf16};
  if (dtype == "fp16") return {FuzzInput::fp16};
  if (dtype == "fp8") return {FuzzInput::fp8_block, FuzzInput::fp8_tensor};
  throw InvalidArgument("--dtype", dtype, "one of all, bf16, fp16, fp8");
}

// What was drawn: per input type, how many cases force a configuration, how many are decode
// sized (M <= 32), how many read C.
void print_draw(const std::vector<bench::FuzzCase>& cases) {
  std::map<std::string, std::array<int64_t, 4>> by_input;
  for (const auto& c : cases) {
    auto& row = by_input[std::string(to_string(c.input))];
    row[0] += 1;
    row[1] += c.config ? 1 : 0;
    row[2] += c.problem.m <= 32 ? 1 : 0;
    row[3] += c.problem.reads_c ? 1 : 0;
  }
  for (const auto& [input, row] : by_input)
    fmt::print("  {:<10} {:>6} cases: {} forced configurations, {} with M <= 32, {} with C\n",
               input, row[0], row[1], row[2], row[3]);
}

// Ends the run with the line test runners read, and the exit code: 0 when every case passed.
int finish(int64_t passed, int64_t failed, int64_t not_run, double seconds) {
  fmt::print("{:.1f} s\n{} passed, {} failed{}\n", seconds, passed, failed,
             not_run > 0 ? fmt::format(", {} skipped", not_run) : std::string());
  std::fflush(stdout);
  return failed > 0 ? 1 : 0;
}

int run_fuzz(const FuzzCliOptions& o) {
  bench::FuzzOptions options;
  options.cases = o.cases;
  options.seed = o.seed;
  options.inputs = parse_inputs(o.dtype);
  options.families = o.families;
  if (o.minutes < 0) throw InvalidArgument("--minutes", fmt::format("{}", o.minutes), "must be >= 0");
  if (o.compile_limit < 0)
    throw InvalidArgument("--compile-limit", std::to_string(o.compile_limit), "must be >= 0");
  if (o.cases < 1) throw InvalidArgument("--cases", std::to_string(o.cases), "must be >= 1");
  if (o.only >= o.cases)
    throw InvalidArgument("--only", std::to_string(o.only),
                          fmt::format("a case index in 0..{} (--cases {})", o.cases - 1, o.cases));
  const std::optional<int64_t> only = o.only >= 0 ? std::optional<int64_t>(o.only) : std::nullopt;
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const int threads = o.compile_threads > 0 ? o.compile_threads
                                            : int(std::max(1u, std::thread::hardware_concurrency()));

  if (o.cpu) {
    const GpuInfo device = resolve_device(o.device.empty() ? "h100-sxm" : o.device);
    const auto cases = bench::draw_fuzz_cases(options, device, only);
    print_draw(cases);
    int64_t passed = 0, failed = 0;
    for (const auto& c : cases) {
      const std::string why = bench::check_fuzz_case_on_cpu(c, device);
      if (why.empty()) {
        ++passed;
        continue;
      }
      ++failed;
      fmt::print("FAIL case {}: {}\n  {}\n", c.index, why, bench::fuzz_reproducer(c, options));
    }
    const int64_t compiled =
        bench::precompile_fuzz_kernels(cases, device, threads, o.compile_limit);
    fmt::print("{} cases planned and checked on {}; {} distinct kernels compiled with NVRTC\n",
               cases.size(), device.preset.empty() ? device.name : device.preset, compiled);
    return finish(passed, failed, 0, seconds());
  }

  const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty())
    throw NoDevice(fmt::format("autogemm fuzz runs kernels: {} (--cpu checks without a GPU)",
                               profile.unavailable_reason));
  const GpuInfo& device = profile.gpus.front();
  const auto cases = bench::draw_fuzz_cases(options, device, only);
  const int64_t kernels = bench::precompile_fuzz_kernels(cases, device, threads);
  fmt::print("fuzz: {} cases (seed {}) on {}; {} distinct kernels compiled in {:.1f} s\n",
             cases.size(), o.seed, device.name, kernels, seconds());
  print_draw(cases);
  std::fflush(stdout);
  bench::FuzzRunner runner(cases);
  int64_t passed = 0, failed = 0, done = 0;
  for (const auto& c : cases) {
    if (o.minutes > 0 && seconds() > o.minutes * 60) break;
    const bench::FuzzOutcome r = runner.run(c);
    ++done;
    if (r.passed) {
      ++passed;
    } else {
      ++failed;
      fmt::print("FAIL case {} {} {}x{}x{} {} [{}]: {}\n  {}\n", c.index, to_string(c.input),
                 c.problem.m, c.problem.n, c.problem.k, to_string(c.problem.layout), r.config,
                 !r.error.empty() ? r.error
                                  : fmt::format("diff {:.2e}, {} elements off, {} outside D "
                                                "changed; first {}",
                                                r.diff, r.bad, r.guard, r.first_bad),
                 bench::fuzz_reproducer(c, options));
      std::fflush(stdout);
      if (!bench::FuzzRunner::context_usable()) {
        fmt::print("the CUDA context is lost after case {}: stopping (rerun with --only to "
                   "see the next failure)\n",
                   c.index);
        break;
      }
    }
    if (done % 1000 == 0)
      std::fprintf(stderr, "fuzz: %lld of %zu cases, %lld failed, %.0f s\n", (long long)done,
                   cases.size(), (long long)failed, seconds());
  }
  return finish(passed, failed, int64_t(cases.size()) - done, seconds());
}

}  // namespace

void add_fuzz_command(CLI::App& app) {
  auto o = std::make_shared<FuzzCliOptions>();
  auto* cmd = app.add_subcommand(
      "fuzz", "Random calls (shapes, layouts, leading dimensions, alpha/beta, types, forced "
              "configurations) checked element by element against a float64 reference");
  cmd->add_option("--cases", o->cases, "cases to draw")->capture_default_str();
  cmd->add_option("--seed", o->seed, "the draw's seed (case i depends on seed and i only)")
      ->check(seed_check())
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "inputs: all, bf16, fp16 or fp8 (block and per-tensor)")
      ->capture_default_str();
  cmd->add_option("--minutes", o->minutes, "stop after this long (0: run every case)");
  cmd->add_option("--only", o->only, "run only case I of the draw (a failure's reproducer)");
  cmd->add_option("--families", o->families,
                  "distinct (types, layout, N, K, configuration) the cases share kernels from")
      ->capture_default_str();
  // --device and --compile-limit only mean something with --cpu (the GPU run uses GPU 0 and
  // compiles every kernel): without it they are refused, not ignored.
  CLI::Option* cpu =
      cmd->add_flag("--cpu", o->cpu, "no GPU: plan, make and check every case's spec, compile some");
  cmd->add_option("--device", o->device, "preset to plan for with --cpu (default h100-sxm)")
      ->check(device_name_check())
      ->needs(cpu);
  cmd->add_option("--compile-threads", o->compile_threads, "NVRTC threads (default: every core)");
  cmd->add_option("--compile-limit", o->compile_limit,
                  "with --cpu: compile at most this many distinct kernels")
      ->capture_default_str()
      ->needs(cpu);
  cmd->callback([o] {
    const int code = run_fuzz(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace autogemm::cli
