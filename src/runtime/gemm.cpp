// autogemm::gemm(): checks the call, picks the path (our sm90 kernel from the plan, or cuBLASLt
// where ours cannot serve) and launches it.
#include "autogemm/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>
#include <map>
#include <mutex>
#include <tuple>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "jit/log.hpp"
#include "plan/n_tail.hpp"
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

struct PlannedConfig {
  GemmConfig config;
  std::string reason;
  bool tuned = false;
};

int autotune_default() {
  static const int count = [] {
    const char* v = std::getenv("AUTOGEMM_AUTOTUNE");
    if (!v || !*v) return 0;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 0 || n > 64) {
      log(2, "AUTOGEMM_AUTOTUNE = {}: not a count in 0..64; autotuning off", v);
      return 0;
    }
    return int(n);
  }();
  return count;
}

// Up to `count` of the plan's candidates, best first, that differ in more than raster order or
// persistence (those rarely change the time; the tile, the k-block depth, consumers, split,
// cluster and FP8 promotion scheme do: one or two swizzle atoms of K per stage measured 4-9%
// apart on BF16 decode rows). A first pass takes at most two per tile shape, so cluster
// variants of one tile cannot crowd out the next tile: the model ties 256x128 oi and 128x128
// pb2 FP8 tiles, which measured 3-4% apart either way (behind at K = 512-2048, ahead above).
std::vector<GemmConfig> distinct_candidates(const Plan& plan, int count) {
  std::vector<GemmConfig> picked;
  auto same = [](const GemmConfig& x, const GemmConfig& y) {
    return x.block_m == y.block_m && x.block_n == y.block_n && x.block_k == y.block_k &&
           x.num_consumers == y.num_consumers && x.split_k == y.split_k &&
           x.tail_split == y.tail_split &&
           x.cluster_m == y.cluster_m && x.cluster_n == y.cluster_n &&
           x.multicast == y.multicast && x.promotion_buffers == y.promotion_buffers &&
           x.ordered_issue == y.ordered_issue;
  };
  for (int per_tile : {2, count}) {
    for (const Candidate& c : plan.candidates) {
      if (int(picked.size()) >= count) break;
      const GemmConfig& x = c.config;
      const auto same_tile = std::count_if(picked.begin(), picked.end(), [&](const GemmConfig& y) {
        return x.block_m == y.block_m && x.block_n == y.block_n;
      });
      const bool seen = std::any_of(picked.begin(), picked.end(),
                                    [&](const GemmConfig& y) { return same(x, y); });
      if (!seen && same_tile < per_tile) picked.push_back(x);
    }
  }
  return picked;
}

// Times each configuration on the call's buffers (one warm-up, three timed launches between
// events on `stream`) and returns the fastest. Blocks on the stream; first call only.
GemmConfig fastest(const GemmProblem& p, const GemmOperands& o, cudaStream_t stream,
                   const std::vector<GemmConfig>& configs) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  GemmConfig best = configs.front();
  float best_ms = -1;
  for (const GemmConfig& c : configs) {
    runtime::prepare_gemm_kernel(p, c);
    runtime::launch_gemm(p, c, o, stream);
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < 3; ++i) runtime::launch_gemm(p, c, o, stream);
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize (autotune)");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    log(4, "autotune {}x{}x{}: {} {:.2f} us", p.m, p.n, p.k, c.describe(), ms * 1000 / 3);
    if (best_ms < 0 || ms < best_ms) {
      best_ms = ms;
      best = c;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

// Plans each distinct problem once per process (and autotunes it once when asked).
GemmConfig planned_config(int device, const GemmProblem& p, const GemmOperands& o,
                          cudaStream_t stream, int autotune, std::string* reason) {
  static std::mutex mutex;
  static std::map<PlanKey, PlannedConfig> plans;
  const PlanKey key{device, p.m, p.n, p.k, p.a_type, p.b_type, p.d_type, p.layout,
                    p.lda_or_packed(), p.ldb_or_packed(), p.ldc_or_packed(), p.ldd_or_packed(),
                    p.scaling, p.reads_c};
  const bool want_tuning = autotune > 1 && !(p.reads_c && o.c == o.d);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = plans.find(key); it != plans.end() && (it->second.tuned || !want_tuning)) {
      *reason = it->second.reason;
      return it->second.config;
    }
  }
  Plan plan = plan_gemm(p, device_info(device));
  PlannedConfig planned{plan.best().config, plan.path_reason, false};
  log(3, "plan {}x{}x{} {} {}: {} ({:.1f} us predicted; {})", p.m, p.n, p.k, to_string(p.a_type),
      to_string(p.layout), plan.best().config.describe(), plan.best().prediction.time_us,
      plan.path_reason);
  if (want_tuning && planned.config.instruction == Instruction::wgmma &&
      runtime::tma_pointer_incompatibility(p, o).empty()) {
    const auto configs = distinct_candidates(plan, autotune);
    planned.config = fastest(p, o, stream, configs);
    planned.tuned = true;
    planned.reason += fmt::format("; autotuned over {} candidates", configs.size());
    log(3, "autotuned {}x{}x{}: {}", p.m, p.n, p.k, planned.config.describe());
  }
  std::lock_guard<std::mutex> lock(mutex);
  plans[key] = planned;
  *reason = planned.reason;
  return planned.config;
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
  if (options.config && options.config->instruction == Instruction::vendor) {
    // What `autogemm plan` prints for a vendor plan ("cuBLASLt") can be given back.
    if (!options.allow_vendor_fallback)
      throw InvalidArgument("options.config", "cuBLASLt",
                            "forces the vendor path, which options.allow_vendor_fallback = "
                            "false forbids");
    report.config = *options.config;
    report.reason = "configuration given by the caller";
  } else if (options.config) {
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
    runtime::check_kernel_config(problem, report.config);
    // The n-tail kernel's rules are on the whole call (the launcher splits it).
    if (auto why = plan::n_tail_violation(problem, report.config); !why.empty())
      throw InvalidArgument("options.config", report.config.describe(), why);
    report.reason = "configuration given by the caller";
    if (d_rows_end_mid_chunk(problem) && report.config.store_path == StorePath::tma) {
      // TMA would write past N up to the next 16-byte boundary: store D with plain stores.
      report.config.store_path = StorePath::threads;
      report.config.smem_bytes = gemm_smem_bytes(problem, report.config);
      report.reason += fmt::format("; D stored by threads (n = {} {} ends rows mid 16-byte chunk)",
                                   problem.n, to_string(problem.d_type));
    }
  } else {
    const int autotune = options.autotune >= 0 ? options.autotune : autotune_default();
    report.config = planned_config(device, problem, operands, stream, autotune, &report.reason);
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
  runtime::cublaslt_gemm(problem, operands, stream);
  report.used_vendor = true;
  report.config = GemmConfig{};
  report.config.instruction = Instruction::vendor;
  report.reason = "cuBLASLt: " + why_not_ours;
  return report;
}

}  // namespace autogemm
