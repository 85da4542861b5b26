// autogemm::gemm(): checks the call, picks the path (our sm90 kernel from the plan, or cuBLASLt
// where ours cannot serve) and launches it.
#include "autogemm/gemm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "jit/log.hpp"
#include "cuda/cuda_check.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/rules.hpp"
#include "runtime/call_spec.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/epilogue_operands.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_maps.hpp"
#include "runtime/tuning_record.hpp"

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
                           int64_t, int64_t, int64_t, Scaling, bool, Grouping, int64_t, int64_t,
                           std::string>;

struct PlannedSpec {
  std::shared_ptr<const KernelSpec> spec;
  bool tuned = false;
  // Where the planner preferred cuBLASLt to copying A's or B's rows into padded rows for our
  // kernel (plan/operand_copy.hpp): that kernel's spec, for callers who forbid cuBLASLt.
  std::shared_ptr<const KernelSpec> ours_instead;
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
           x.cluster_m == y.cluster_m && x.cluster_n == y.cluster_n &&
           x.multicast == y.multicast && x.promotion_buffers == y.promotion_buffers &&
           x.ordered_issue == y.ordered_issue && x.swap_ab == y.swap_ab;
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

using SpecPtr = std::shared_ptr<const KernelSpec>;

struct Timed {
  SpecPtr spec;
  double us = 0;   // per launch
};

// Times each spec on the call's buffers (one warm-up, three timed launches between events on
// `stream`) and returns the fastest. Blocks on the stream; first call only.
Timed fastest(const GemmOperands& o, cudaStream_t stream, const std::vector<SpecPtr>& specs) {
  cudaEvent_t start, stop;
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  SpecPtr best = specs.front();
  float best_ms = -1;
  for (const SpecPtr& spec : specs) {
    runtime::prepare(*spec);
    runtime::launch(*spec, o, stream);
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < 3; ++i) runtime::launch(*spec, o, stream);
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize (autotune)");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    const GemmProblem& p = spec->problem;
    log(4, "autotune {}x{}x{}: {} {:.2f} us", p.m, p.n, p.k, spec->text, ms * 1000 / 3);
    if (best_ms < 0 || ms < best_ms) {
      best_ms = ms;
      best = spec;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return {best, double(best_ms) * 1000 / 3};
}

PlanKey plan_key(int device, const GemmProblem& p) {
  return {device,          p.m,           p.n,      p.k,       p.a_type,      p.b_type,
          p.d_type,        p.layout,      p.lda_or_packed(),   p.ldb_or_packed(),
          p.ldc_or_packed(), p.ldd_or_packed(), p.scaling, p.reads_c, p.grouping, p.num_groups,
          p.expected_m,    p.epilogue.token()};
}

// The tuning record's spec for a planned problem, or null when the record is off, has no
// usable entry, or has one from fewer candidates than this call asks to time (then it is tuned
// again and the entry replaced).
SpecPtr recorded_spec(const Plan& plan, std::size_t candidates_wanted) {
  const std::shared_ptr<runtime::TuningRecord> record = runtime::process_tuning_record();
  // The record's key has no grouping: grouped problems are planned, never recorded.
  if (!record || plan.spec.vendor || plan.problem.grouping != Grouping::none) return nullptr;
  const std::optional<runtime::TuningEntry> entry = record->lookup(plan.device, plan.problem);
  if (!entry) return nullptr;
  if (std::size_t(entry->candidates) < candidates_wanted) {
    log(3, "tuning record: {}x{}x{} was tuned over {} candidates; this call asks for {}",
        plan.problem.m, plan.problem.n, plan.problem.k, entry->candidates, candidates_wanted);
    return nullptr;
  }
  std::optional<KernelSpec> spec =
      runtime::spec_from_entry(*entry, plan.problem, plan.device, plan.path_reason);
  if (!spec) return nullptr;
  log(3, "tuning record {}x{}x{}: {} ({} candidates, {:.2f} us, {})", plan.problem.m,
      plan.problem.n, plan.problem.k, spec->text, entry->candidates, entry->time_us, entry->date);
  return std::make_shared<const KernelSpec>(std::move(*spec));
}

// Plans each distinct problem once per process: from the tuning record when it holds the
// problem, else the planner's choice, autotuned when asked (the winner then goes into the
// record).
PlannedSpec planned_spec(int device, const GemmProblem& p, const GemmOperands& o,
                         cudaStream_t stream, int autotune) {
  static std::mutex mutex;
  static std::map<PlanKey, PlannedSpec> plans;
  const PlanKey key = plan_key(device, p);
  const bool want_tuning = autotune > 1 && !(p.reads_c && o.c == o.d);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = plans.find(key); it != plans.end() && (it->second.tuned || !want_tuning))
      return it->second;
  }
  const Plan plan = plan_gemm(p, device_info(device));
  PlannedSpec planned{std::make_shared<const KernelSpec>(plan.spec), false, nullptr};
  if (plan.spec.vendor)
    for (const Candidate& c : plan.candidates)
      if (c.config.instruction != Instruction::vendor) {
        planned.ours_instead = std::make_shared<const KernelSpec>(plan::make_spec(
            p, c.config, plan.device,
            plan.path_reason + "; but options.allow_vendor_fallback = false: " +
                c.config.describe() + " on the copied rows"));
        break;
      }
  log(3, "plan {}x{}x{} {} {}: {} ({:.1f} us predicted; {})", p.m, p.n, p.k, to_string(p.a_type),
      to_string(p.layout), plan.spec.text, plan.best().prediction.time_us, plan.path_reason);
  const bool tune =
      want_tuning && !plan.spec.vendor && plan::operand_violation(plan.spec, o).empty();
  const std::vector<GemmConfig> candidates =
      tune ? distinct_candidates(plan, autotune) : std::vector<GemmConfig>{};
  if (SpecPtr recorded = recorded_spec(plan, candidates.size())) {
    planned = {std::move(recorded), true, nullptr};
  } else if (tune) {
    std::vector<SpecPtr> specs;
    for (const GemmConfig& c : candidates)
      specs.push_back(std::make_shared<const KernelSpec>(
          plan::make_spec(p, c, plan.device, plan.path_reason)));
    const Timed winner = fastest(o, stream, specs);
    planned.tuned = true;
    auto tuned = std::make_shared<KernelSpec>(*winner.spec);
    tuned->reason += fmt::format("; autotuned over {} candidates", specs.size());
    planned.spec = std::move(tuned);
    log(3, "autotuned {}x{}x{}: {} ({:.2f} us)", p.m, p.n, p.k, planned.spec->text, winner.us);
    if (const auto record = runtime::process_tuning_record())
      record->store(plan.device, p, winner.spec->config, winner.us, int(specs.size()));
  }
  std::lock_guard<std::mutex> lock(mutex);
  plans[key] = planned;
  return planned;
}

// A configuration the caller forces, made into a spec by the same function as the planner's
// (and so refused with the same rules), once per problem and configuration.
SpecPtr forced_spec(int device, const GemmProblem& p, const GemmConfig& config) {
  static std::mutex mutex;
  static std::map<std::pair<PlanKey, std::string>, SpecPtr> specs;
  const std::pair<PlanKey, std::string> key{plan_key(device, p), config.describe()};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = specs.find(key); it != specs.end()) return it->second;
  }
  std::shared_ptr<const KernelSpec> spec;
  try {
    spec = std::make_shared<const KernelSpec>(
        plan::make_spec(p, config, device_info(device), "configuration given by the caller"));
  } catch (const InvalidArgument& e) {
    if (e.argument() != "config") throw;
    throw InvalidArgument("options.config", e.value(), e.rule());   // the caller's name for it
  }
  std::lock_guard<std::mutex> lock(mutex);
  return specs.emplace(key, std::move(spec)).first->second;
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
  runtime::check_epilogue_operands(p.epilogue, o);
}

}  // namespace

namespace runtime {

int call_device(const GemmOptions& options) {
  int device = options.device;
  if (device < 0) cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

std::shared_ptr<const KernelSpec> call_spec(int device, const GemmProblem& problem,
                                            const GemmOperands& operands, cudaStream_t stream,
                                            const GemmOptions& options) {
  if (options.config) {
    // What `autogemm plan` prints for a vendor plan ("cuBLASLt") can be given back.
    if (options.config->instruction == Instruction::vendor && !options.allow_vendor_fallback)
      throw InvalidArgument("options.config", "cuBLASLt",
                            "forces the vendor path, which options.allow_vendor_fallback = "
                            "false forbids");
    return forced_spec(device, problem, *options.config);
  }
  const int autotune = options.autotune >= 0 ? options.autotune : autotune_default();
  const PlannedSpec planned = planned_spec(device, problem, operands, stream, autotune);
  // Forbidding cuBLASLt where the planner only preferred it: our kernel on copied rows.
  if (!options.allow_vendor_fallback && planned.ours_instead) return planned.ours_instead;
  return planned.spec;
}

CallPlan plan_call(const GemmProblem& problem_in, const GemmOperands& operands, cudaStream_t stream,
                   const GemmOptions& options) {
  CallPlan c;
  c.problem = problem_in;
  c.problem.reads_c = operands.beta != 0.0f;
  if (c.problem.grouping != Grouping::none)
    throw InvalidArgument("problem.grouping", std::string(to_string(c.problem.grouping)),
                          "gemm() computes one GEMM: call grouped_gemm() (autogemm/grouped.hpp)");
  validate(c.problem);
  check_operands(c.problem, operands);
  c.spec = call_spec(call_device(options), c.problem, operands, stream, options);
  c.why_not_ours = c.spec->vendor ? c.spec->reason : plan::operand_violation(*c.spec, operands);
  return c;
}

}  // namespace runtime

GemmReport gemm(const GemmProblem& problem_in, const GemmOperands& operands, cudaStream_t stream,
                const GemmOptions& options) {
  const runtime::CallPlan call = runtime::plan_call(problem_in, operands, stream, options);
  const GemmProblem& problem = call.problem;
  const KernelSpec& spec = *call.spec;
  GemmReport report;
  report.config = spec.config;
  report.reason = spec.reason;
  const std::string& why_not_ours = call.why_not_ours;
  if (why_not_ours.empty()) {
    runtime::launch(spec, operands, stream);
    return report;
  }
  if (!options.allow_vendor_fallback)
    throw InvalidArgument("options.allow_vendor_fallback", "false",
                          fmt::format("our kernel cannot serve this call: {}", why_not_ours));
  if (!problem.epilogue.empty())
    throw InvalidArgument("epilogue", problem.epilogue.describe(),
                          fmt::format("only autogemm's kernels fuse it, and they cannot serve "
                                      "this call: {}",
                                      why_not_ours));
  log(3, "gemm {}x{}x{}: cuBLASLt ({})", problem.m, problem.n, problem.k, why_not_ours);
  runtime::cublaslt_gemm(problem, operands, stream);
  report.used_vendor = true;
  report.config = GemmConfig{};
  report.config.instruction = Instruction::vendor;
  report.reason = "cuBLASLt: " + why_not_ours;
  return report;
}

}  // namespace autogemm
