// `autogemm ladder`: runs the ten configurations of the technique ladder on one problem, checks
// each against the float64 reference, and prints time, TFLOP/s and the gain over the previous
// step.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cuda/cuda_check.hpp"
#include "ladder/ladder.hpp"
#include "runtime/launch.hpp"

namespace autogemm::cli {

namespace {

struct LadderOptions {
  int64_t m = 8192, n = 8192, k = 8192;
  std::string dtype = "bf16";
  int iters = 10;
  int warmup = 2;
  double budget_ms = 2000;   // per step: slow steps run fewer iterations
  std::string csv;
};

void run_ladder(const LadderOptions& opt) {
  // Arguments first: a bad size is the user's to fix whether or not there is a GPU.
  const GemmProblem p = make_problem(opt.m, opt.n, opt.k, opt.dtype, "nt", 0, 0, 0);
  if (opt.iters < 1) throw InvalidArgument("--iters", std::to_string(opt.iters), "must be >= 1");
  if (opt.warmup < 0)
    throw InvalidArgument("--warmup", std::to_string(opt.warmup), "must be >= 0");
  if (!(opt.budget_ms > 0))
    throw InvalidArgument("--budget-ms", fmt::format("{}", opt.budget_ms), "must be > 0");
  GpuProfile profile = profile_gpus();
  if (profile.gpus.empty())
    throw NoDevice(fmt::format("autogemm ladder runs kernels: {}", profile.unavailable_reason));
  const size_t a_elems = size_t(p.m) * p.k, b_elems = size_t(p.n) * p.k;
  const size_t d_elems = size_t(p.m) * p.n;
  bench::DeviceBuffer a(a_elems * dtype_bytes(p.a_type)), b(b_elems * dtype_bytes(p.b_type));
  bench::DeviceBuffer d(d_elems * dtype_bytes(p.d_type)), ref(d_elems * sizeof(double));
  bench::fill_random(a.get(), a_elems, p.a_type, 1);
  bench::fill_random(b.get(), b_elems, p.b_type, 2);
  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  bench::reference_gemm(p, ops, static_cast<double*>(ref.get()), nullptr);
  std::vector<double> want(d_elems);
  cuda_check(cudaMemcpy(want.data(), ref.get(), d_elems * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  bench::L2Flusher flusher;

  fmt::print("ladder on {} for M={} N={} K={} {} (layout nt); median of up to {} timed calls\n",
             profile.gpus.front().name, p.m, p.n, p.k, opt.dtype, opt.iters);
  fmt::print("{:>4}  {:<28} {:<58} {:>10} {:>9} {:>7} {:>9}\n", "step", "technique", "config",
             "time ms", "TFLOP/s", "gain", "diff");
  std::ofstream csv;
  if (!opt.csv.empty()) {
    csv.open(opt.csv);
    if (!csv) throw InvalidArgument("--csv", opt.csv, "cannot be opened for writing");
    csv << "step,name,config,time_us,tflops,gain,diff,compile_ms\n";
  }
  double previous_us = 0;
  for (const auto& step : ladder::ladder_steps()) {
    const KernelSpec spec = ladder::step_spec(p, step, profile.gpus.front());
    const std::string text = ladder::describe(step, spec);
    const auto run = [&](cudaStream_t s) { runtime::launch(spec, ops, s); };
    const double compile_ms = runtime::prepare(spec);
    bench::fill_poison(d.get(), d_elems, p.d_type);
    run(nullptr);
    cuda_check(cudaDeviceSynchronize(), "ladder step");
    const auto got = bench::download_as_double(d.get(), d_elems, p.d_type);
    const auto check = bench::check_result(got, p.n, want, p.m, p.n, 1.0 / 64, 1.0 / 64, 256, 9);
    // One untimed call told us roughly how long a call takes; keep slow steps within budget.
    const auto probe = bench::time_calls(run, 0, 1, nullptr, &flusher);
    const int iters = std::clamp(int(opt.budget_ms * 1000 / std::max(probe[0], 1.0)), 1, opt.iters);
    const auto stats = bench::summarize(
        bench::time_calls(run, iters > 2 ? opt.warmup : 0, iters, nullptr, &flusher));
    const double tflops = p.flops() / (stats.median_us * 1e-6) / 1e12;
    const double gain = previous_us > 0 ? previous_us / stats.median_us : 1.0;
    const bool ok = check.diff < 1e-5 && check.unwritten == 0 && check.spot_failures == 0;
    fmt::print("{:>4}  {:<28} {:<58} {:>10.3f} {:>9.1f} {:>6.2f}x {:>9.2e}{}\n", step.number,
               step.name, text, stats.median_us / 1000, tflops, gain, check.diff,
               ok ? "" : "  WRONG");
    if (csv)
      csv << fmt::format("{},\"{}\",\"{}\",{:.2f},{:.2f},{:.3f},{:.3e},{:.1f}\n", step.number,
                         step.name, text, stats.median_us, tflops, gain,
                         check.diff, compile_ms);
    if (!ok)
      throw Error(fmt::format("ladder step {} ({}) is wrong: diff {:.3e}, {} unwritten, {} bad "
                              "samples ({})",
                              step.number, step.name, check.diff, check.unwritten,
                              check.spot_failures, check.first_failure));
    previous_us = stats.median_us;
  }
}

}  // namespace

void add_ladder_command(CLI::App& app) {
  auto opt = std::make_shared<LadderOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ladder", "Run the ten-step technique ladder (single tile ... two consumers), check each "
                "step against a float64 reference and time it");
  cmd->add_option("--m", opt->m, "rows of A and D")->capture_default_str();
  cmd->add_option("--n", opt->n, "columns of D")->capture_default_str();
  cmd->add_option("--k", opt->k, "inner dimension")->capture_default_str();
  cmd->add_option("--dtype", opt->dtype, "bf16 or fp16")->capture_default_str();
  cmd->add_option("--iters", opt->iters, "timed calls per step (fewer for slow steps)")
      ->capture_default_str();
  cmd->add_option("--warmup", opt->warmup, "untimed calls before timing")->capture_default_str();
  cmd->add_option("--budget-ms", opt->budget_ms, "timing budget per step")->capture_default_str();
  cmd->add_option("--csv", opt->csv, "also write the table as CSV to this file");
  cmd->callback([opt] { run_ladder(*opt); });
}

}  // namespace autogemm::cli
