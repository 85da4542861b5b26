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
#include <string_view>
#include <tuple>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "jit/log.hpp"
#include "cuda/cuda_check.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/rules.hpp"
#include "runtime/autotune.hpp"
#include "runtime/call_spec.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/epilogue_operands.hpp"
#include "runtime/weight_operands.hpp"
#include "runtime/launch.hpp"
#include "runtime/tensor_maps.hpp"
#include "runtime/tuning_file.hpp"
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

// The last field: the epilogue's token and the weight-only format (each selects the kernel).
using PlanKey = std::tuple<int, int64_t, int64_t, int64_t, DType, DType, DType, Layout, int64_t,
                           int64_t, int64_t, int64_t, Scaling, bool, Grouping, int64_t, int64_t,
                           std::string, int>;

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

using SpecPtr = std::shared_ptr<const KernelSpec>;

PlanKey plan_key(int device, const GemmProblem& p) {
  return {device,          p.m,           p.n,      p.k,       p.a_type,      p.b_type,
          p.d_type,        p.layout,      p.lda_or_packed(),   p.ldb_or_packed(),
          p.ldc_or_packed(), p.ldd_or_packed(), p.scaling, p.reads_c, p.grouping, p.num_groups,
          p.expected_m,
          p.epilogue.token() +
              (p.weight_format ? "|weights=" + std::string(to_string(*p.weight_format)) : ""),
          p.signal_bands};
}

// GemmOptions::autotune_graph's default, AUTOGEMM_AUTOTUNE_GRAPH, read once like AUTOGEMM_AUTOTUNE.
bool autotune_graph_default() {
  static const bool graph = [] {
    const char* v = std::getenv("AUTOGEMM_AUTOTUNE_GRAPH");
    const std::string_view value = v ? v : "";
    if (!value.empty() && value != "0" && value != "1")
      log(2, "AUTOGEMM_AUTOTUNE_GRAPH = {}: expected 0 or 1; timing plain launches", value);
    return value == "1";
  }();
  return graph;
}

// The entry for a planned problem: a loaded tuning file's (which wins: a deployment ships it so
// that every process makes its choices, whatever it asks to time), else the tuning record's,
// unless it was tuned over fewer candidates than this call asks to time or before cuBLASLt was a
// candidate (then it is tuned again and the entry replaced). `origin` says which.
std::optional<runtime::TuningEntry> recorded_entry(const Plan& plan,
                                                   std::size_t candidates_wanted,
                                                   std::string* origin) {
  if (std::optional<runtime::TuningEntry> entry = runtime::file_entry(plan.device, plan.problem)) {
    *origin = "tuning file";
    return entry;
  }
  const std::shared_ptr<runtime::TuningRecord> record = runtime::process_tuning_record();
  if (!record) return std::nullopt;
  std::optional<runtime::TuningEntry> entry = record->lookup(plan.device, plan.problem);
  if (!entry) return std::nullopt;
  *origin = "tuning record";
  if (candidates_wanted == 0) return entry;
  if (std::size_t(entry->candidates) < candidates_wanted || entry->vendor_algorithms < 0) {
    log(3, "tuning record: {}x{}x{} was tuned over {} candidates{}; this call asks for {} and "
        "cuBLASLt's", plan.problem.m, plan.problem.n, plan.problem.k, entry->candidates,
        entry->vendor_algorithms < 0 ? " without cuBLASLt's" : "", candidates_wanted);
    return std::nullopt;
  }
  return entry;
}

// The spec of the problem's recorded entry, or null when there is none usable: none recorded
// (a grouped problem, whose key the record lacks, never is), the rules refuse it, or its cuBLASLt
// algorithm does not check out for this call (logged; the caller plans, and tunes when asked).
SpecPtr recorded_spec(const Plan& plan, const GemmOperands& o, std::size_t candidates_wanted) {
  if (plan.spec.vendor || plan.problem.grouping != Grouping::none) return nullptr;
  std::string origin;
  const std::optional<runtime::TuningEntry> entry =
      recorded_entry(plan, candidates_wanted, &origin);
  if (!entry) return nullptr;
  std::optional<KernelSpec> spec =
      runtime::spec_from_entry(*entry, plan.problem, plan.device, plan.path_reason, origin);
  if (!spec) return nullptr;
  if (spec->vendor_algo && !runtime::cublaslt_algorithm_usable(plan.problem, o, *spec->vendor_algo))
    return nullptr;
  log(3, "{} {}x{}x{}: {} ({} candidates, {:.2f} us, {})", origin, plan.problem.m,
      plan.problem.n, plan.problem.k, spec->text, entry->candidates, entry->time_us, entry->date);
  return std::make_shared<const KernelSpec>(std::move(*spec));
}

// Plans each distinct problem once per process: from a tuning file or the tuning record when
// either holds the problem, else the planner's choice, autotuned when asked (the winner then
// goes into the record). Where cuBLASLt is the recorded or tuned winner, `ours_instead` is our
// best, for callers who forbid cuBLASLt.
PlannedSpec planned_spec(int device, const GemmProblem& p, const GemmOperands& o,
                         cudaStream_t stream, int autotune, bool graph) {
  static std::mutex mutex;
  static std::map<PlanKey, PlannedSpec> plans;
  const PlanKey key = plan_key(device, p);
  // Row-band signals: a timed candidate would raise flags nobody waits for, and cuBLASLt has none.
  const bool want_tuning = autotune > 1 && !(p.reads_c && o.c == o.d) && p.signal_bands == 0;
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
      tune ? runtime::distinct_candidates(plan, autotune) : std::vector<GemmConfig>{};
  if (SpecPtr recorded = recorded_spec(plan, o, candidates.size())) {
    const SpecPtr ours = recorded->vendor ? planned.spec : nullptr;
    planned = {std::move(recorded), true, ours};
  } else if (tune) {
    runtime::AutotuneResult tuned = runtime::autotune(plan, candidates, o, stream, graph);
    planned.tuned = true;
    planned.spec = tuned.spec;
    if (tuned.spec->vendor) planned.ours_instead = tuned.ours_best;
    if (const auto record = runtime::process_tuning_record())
      record->store(plan.device, p, std::move(tuned.entry));
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
  runtime::check_weight_operands(p, o);
  runtime::check_epilogue_operands(p, o);
  if (p.signal_bands == 0) {
    if (o.band_ends || o.band_counters || o.band_flags || o.c_band_flags)
      throw InvalidArgument(o.band_ends       ? "band_ends"
                            : o.band_counters ? "band_counters"
                            : o.band_flags    ? "band_flags"
                                              : "c_band_flags",
                            "a pointer", "row-band signals are read with problem.signal_bands > 0 only");
    return;
  }
  if (o.c_band_flags && !p.reads_c)
    throw InvalidArgument("c_band_flags", "a pointer",
                          "C's band flags gate the loads of C, and beta = 0 reads none");
  if (!o.band_ends || !o.band_counters || !o.band_flags)
    throw InvalidArgument(!o.band_ends ? "band_ends" : !o.band_counters ? "band_counters" : "band_flags",
                          "nullptr", fmt::format("signal_bands = {} needs the bands' ends, counters "
                                                 "and flags", p.signal_bands));
  for (int b = 0; b < p.signal_bands; ++b) {
    const int64_t begin = b > 0 ? o.band_ends[b - 1] : 0;
    if (o.band_ends[b] <= begin || o.band_ends[b] > p.m)
      throw InvalidArgument(fmt::format("band_ends[{}]", b), std::to_string(o.band_ends[b]),
                            fmt::format("bands end in ascending order inside M = {} rows", p.m));
  }
  if (o.band_ends[p.signal_bands - 1] != p.m)
    throw InvalidArgument(fmt::format("band_ends[{}]", p.signal_bands - 1),
                          std::to_string(o.band_ends[p.signal_bands - 1]),
                          fmt::format("the last band ends at M = {}", p.m));
}

// Row-band signals: only our kernels signal, and each band is whole cluster tiles of rows (the
// scheduler walks the bands in cluster rows and counts whole tiles: sm90/band_signal.cuh).
void check_band_signals(const GemmProblem& p, const KernelSpec& spec, const GemmOperands& o,
                        const std::string& why_not_ours) {
  if (p.signal_bands == 0) return;
  if (spec.vendor || !why_not_ours.empty())
    throw InvalidArgument("problem.signal_bands", std::to_string(p.signal_bands),
                          fmt::format("only autogemm's kernels signal row bands, and this call "
                                      "would run cuBLASLt: {}", spec.vendor ? spec.reason : why_not_ours));
  const int64_t rows = plan::signal_band_rows(spec.config);
  for (int b = 0; b < p.signal_bands; ++b)
    if (o.band_ends[b] % rows != 0)
      throw InvalidArgument(fmt::format("band_ends[{}]", b), std::to_string(o.band_ends[b]),
                            fmt::format("each band is whole cluster tiles of {} rows ({}: "
                                        "block_m {} x cluster_m {})", rows,
                                        spec.config.describe(), spec.config.block_m,
                                        spec.config.cluster_m));
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
  const bool graph =
      options.autotune_graph >= 0 ? options.autotune_graph > 0 : autotune_graph_default();
  const PlannedSpec planned = planned_spec(device, problem, operands, stream, autotune, graph);
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
  check_band_signals(problem, spec, operands, why_not_ours);
  if (why_not_ours.empty()) {
    runtime::launch(spec, operands, stream);
    return report;
  }
  if (!options.allow_vendor_fallback)
    throw InvalidArgument("options.allow_vendor_fallback", "false",
                          fmt::format("our kernel cannot serve this call: {}", why_not_ours));
  // A fused call goes to cuBLASLt only with an epilogue cuBLASLt has (autotuning's winner, or
  // operands our kernel cannot take); the rule is cuBLASLt's own (runtime/cublaslt.hpp).
  if (const std::string why = runtime::cublaslt_epilogue_unavailable(problem.epilogue,
                                                                      operands.beta);
      !why.empty())
    throw InvalidArgument("epilogue", problem.epilogue.describe(),
                          fmt::format("autogemm's kernels cannot serve this call ({}), and {}",
                                      why_not_ours, why));
  log(3, "gemm {}x{}x{}: cuBLASLt ({})", problem.m, problem.n, problem.k, why_not_ours);
  runtime::CublasLtOptions lt;
  lt.algo = spec.vendor_algo;   // autotuning's winner; none: the heuristic's first
  runtime::cublaslt_gemm(problem, operands, stream, lt);
  report.used_vendor = true;
  report.config = GemmConfig{};
  report.config.instruction = Instruction::vendor;
  report.reason = "cuBLASLt: " + why_not_ours;
  return report;
}

}  // namespace autogemm
