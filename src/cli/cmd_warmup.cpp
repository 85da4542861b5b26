// `autogemm warmup --suite FILE`: plans every shape of a suite and compiles its kernel into the
// disk cache, so later runs load instead of compiling. Works without a GPU (for a preset).
#include <fmt/format.h>

#include <chrono>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "bench/suite.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "jit/jit.hpp"
#include "codegen/kernel_source.hpp"
#include "runtime/launch.hpp"

namespace autogemm::cli {

namespace {

struct WarmupOptions {
  std::string suite;
  std::string dtype = "bf16";
  std::string layout = "nt";
  std::string device;
};

// warmup's only job is filling the disk cache: without a writable one it would compile into
// memory and exit as if it had worked. The variable that chose the cache is the argument.
void require_writable_disk_cache() {
  const jit::DiskCacheStatus cache = jit::disk_cache_status();
  if (!cache.writable)
    throw InvalidArgument(cache.variable, cache.value,
                          fmt::format("{}; warmup fills the kernel disk cache, so it needs "
                                      "a writable one (docs/env-vars.md)", cache.why));
}

void run_warmup(const WarmupOptions& opt) {
  // Arguments first (the suite, the cache), then the device.
  const std::vector<bench::BenchCase> cases = bench::load_suite(opt.suite);
  require_writable_disk_cache();
  const int failed_before = jit::disk_cache_status().failed_writes;
  const GpuInfo gpu = resolve_cli_device(opt.device);
  const bool on_gpu = gpu.ordinal >= 0;
  fmt::print("warming the kernel cache ({}) for {}\n", jit::cache_directory(),
             on_gpu ? gpu.name : gpu.preset);
  fmt::print("{:>6} {:>6} {:>6}  {:<44} {:>12} {:>9}\n", "m", "n", "k", "config", "compile ms",
             on_gpu ? "load ms" : "");
  double total_ms = 0;
  for (const auto& c : cases) {
    const GemmProblem p = make_problem(c.m, c.n, c.k, opt.dtype, opt.layout, 0, 0, 0);
    const Plan plan = plan_gemm(p, gpu);
    if (plan.spec.vendor) {
      fmt::print("{:>6} {:>6} {:>6}  {:<44} {}\n", c.m, c.n, c.k, "cuBLASLt", plan.path_reason);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    bool from_disk = true;
    for (const KernelLaunch& kernel : plan.spec.kernels)
      from_disk =
          jit::get_or_compile(codegen::gemm_kernel_source(kernel, false))->from_disk_cache &&
          from_disk;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    total_ms += ms;
    const std::string how = from_disk ? "(disk cache)" : "";
    if (on_gpu) {
      const double load_ms = runtime::prepare(plan.spec);
      fmt::print("{:>6} {:>6} {:>6}  {:<44} {:>9.1f} {:<3} {:>8.2f}\n", c.m, c.n, c.k,
                 plan.spec.text, ms, how.empty() ? "" : "hit", load_ms);
    } else {
      fmt::print("{:>6} {:>6} {:>6}  {:<44} {:>9.1f} {}\n", c.m, c.n, c.k, plan.spec.text, ms, how);
    }
  }
  fmt::print("total {:.0f} ms\n", total_ms);
  // Each entry that could not be written was logged and kept in memory only: the cache is
  // not warm for those, so the command did not do its job.
  if (const int failed = jit::disk_cache_status().failed_writes - failed_before; failed > 0)
    throw Error(fmt::format("{} kernel{} could not be written to the disk cache {} (the "
                            "warnings above say why)", failed, failed == 1 ? "" : "s",
                            jit::cache_directory()));
}

}  // namespace

void add_warmup_command(CLI::App& app) {
  auto opt = std::make_shared<WarmupOptions>();
  CLI::App* cmd = app.add_subcommand(
      "warmup", "Plan and precompile the kernels of a shape suite into the disk cache");
  cmd->add_option("--suite", opt->suite, "shape suite (CSV: m,n,k[,tag])")->required();
  cmd->add_option("--dtype", opt->dtype, "input type: bf16, fp16 or fp8 (e4m3, block-scaled)")
      ->capture_default_str();
  cmd->add_option("--layout", opt->layout, "nt, nn, tn or tt")->capture_default_str();
  cmd->add_option("--device", opt->device, "GPU ordinal or preset (default: GPU 0, else h100-sxm)")
      ->check(device_name_check());
  cmd->callback([opt] { run_warmup(*opt); });
}

}  // namespace autogemm::cli
