// autogemm::gemm(): checks the call, picks the path (our sm90 kernel from the plan, or cuBLASLt
// where ours cannot serve) and launches it.
#include "autogemm/gemm.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <tuple>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "jit/log.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/cuda_check.hpp"
#include "runtime/kernel_source.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_maps.hpp"

namespace autogemm {

namespace {

// Profiles each device once per process (the planner's input).
const GpuInfo& device_info(int device) {
  static std::mutex mutex;
  static std::map<int, GpuInfo> infos;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = infos.find(device); it != infos.end()) return it->second;
  GpuProfile profile = profile_gpus();
  for (const GpuInfo& g : profile.gpus) infos.emplace(g.ordinal, g);
  if (auto it = infos.find(device); it != infos.end()) return it->second;
  throw NoDevice(profile.gpus.empty() ? profile.unavailable_reason
                                      : fmt::format("no CUDA device {}", device));
}

using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, DType, DType, DType, Layout, int64_t,
                           int64_t, int64_t, int64_t, Scaling, bool>;

// Plans each distinct problem once per process.
GemmConfig planned_config(int device, const GemmProblem& p, std::string* reason) {
  static std::mutex mutex;
  static std::map<PlanKey, std::pair<GemmConfig, std::string>> plans;
  const PlanKey key{device, p.m, p.n, p.k, p.a_type, p.b_type, p.d_type, p.layout,
                    p.lda_or_packed(), p.ldb_or_packed(), p.ldc_or_packed(), p.ldd_or_packed(),
                    p.scaling, p.reads_c};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = plans.find(key); it != plans.end()) {
      *reason = it->second.second;
      return it->second.first;
    }
  }
  Plan plan = plan_gemm(p, device_info(device));
  log(3, "plan {}x{}x{} {} {}: {} ({:.1f} us predicted; {})", p.m, p.n, p.k, to_string(p.a_type),
      to_string(p.layout), plan.best().config.describe(), plan.best().prediction.time_us,
      plan.path_reason);
  std::lock_guard<std::mutex> lock(mutex);
  plans.emplace(key, std::make_pair(plan.best().config, plan.path_reason));
  *reason = plan.path_reason;
  return plan.best().config;
}

void check_operands(const GemmProblem& p, const GemmOperands& o) {
  auto null = [](const char* name) {
    throw InvalidArgument(name, "nullptr", "must point to device memory");
  };
  if (!o.a) null("a");
  if (!o.b) null("b");
  if (!o.d) null("d");
  if (p.reads_c && !o.c)
    throw InvalidArgument("c", "nullptr", "must point to C when beta != 0");
  if (p.scaling != Scaling::none && (!o.scale_a || !o.scale_b))
    throw InvalidArgument(!o.scale_a ? "scale_a" : "scale_b", "nullptr",
                          "FP8 inputs need their scales");
}

}  // namespace

GemmReport gemm(const GemmProblem& problem_in, const GemmOperands& operands, cudaStream_t stream,
                const GemmOptions& options) {
  GemmProblem problem = problem_in;
  problem.reads_c = operands.beta != 0.0f;
  validate(problem);
  check_operands(problem, operands);

  int device = options.device;
  if (device < 0) cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  const GpuInfo& gpu = device_info(device);

  GemmReport report;
  std::string why_not_ours;
  if (options.config) {
    report.config = *options.config;
    // A forced configuration must be one the kernel can run; the planner's preferences (e.g.
    // cluster tiles dividing the tile count) do not apply: the kernel is correct without them.
    report.config.smem_bytes = gemm_smem_bytes(problem, report.config);
    if (report.config.smem_bytes > gpu.smem_per_block_optin_bytes)
      throw InvalidArgument("options.config", report.config.describe(),
                            fmt::format("needs {} B of shared memory; {} allows {} B per block",
                                        report.config.smem_bytes, gpu.name,
                                        gpu.smem_per_block_optin_bytes));
    if (gpu.cc.major != 9 || gpu.cc.minor != 0)
      throw InvalidArgument("options.config", report.config.describe(),
                            fmt::format("our kernels need sm_90a; {} is sm_{}", gpu.name, gpu.cc.as_int()));
    runtime::gemm_kernel_source(problem, report.config);   // throws for shapes the kernel rejects
    report.reason = "configuration given by the caller";
    if (d_rows_end_mid_chunk(problem) && report.config.split_k == 1 &&
        report.config.store_path == StorePath::tma) {
      // TMA would write past N up to the next 16-byte boundary: store D with plain stores.
      report.config.store_path = StorePath::threads;
      report.config.smem_bytes = gemm_smem_bytes(problem, report.config);
      report.reason += fmt::format("; D stored by threads (n = {} {} ends rows mid 16-byte chunk)",
                                   problem.n, to_string(problem.d_type));
    }
  } else {
    report.config = planned_config(device, problem, &report.reason);
  }
  if (report.config.instruction != Instruction::wgmma) why_not_ours = report.reason;
  if (why_not_ours.empty() && report.config.load_path == LoadPath::tma)
    why_not_ours = runtime::tma_pointer_incompatibility(problem, operands);

  if (why_not_ours.empty()) {
    runtime::launch_gemm(problem, report.config, operands, stream);
    return report;
  }
  if (!options.allow_vendor_fallback)
    throw InvalidArgument("options.allow_vendor_fallback", "false",
                          fmt::format("our kernel cannot serve this call: {}", why_not_ours));
  log(3, "gemm {}x{}x{}: cuBLASLt ({})", problem.m, problem.n, problem.k, why_not_ours);
  (void)gpu;
  runtime::cublaslt_gemm(problem, operands, stream);
  report.used_vendor = true;
  report.config = GemmConfig{};
  report.config.instruction = Instruction::vendor;
  report.reason = "cuBLASLt: " + why_not_ours;
  return report;
}

}  // namespace autogemm
