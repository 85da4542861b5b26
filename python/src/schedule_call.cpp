// autogemm._core.schedule: each call (a, b, out) checked as gemm() checks it (prepare_gemm),
// placed on the GPU its arrays are on (OperandHome::device; the scheduler copies them to
// another GPU when that finishes sooner, and D back), then run_gemm_schedule. Returns when all
// are done, with the run's report as a dict.
#include "schedule_call.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/multi_gpu.hpp"
#include "gemm_call.hpp"

namespace autogemm::python {
namespace {

using namespace nb::literals;

nb::dict schedule(nb::list calls, const std::vector<int>& devices, const std::string& strategy,
                  std::optional<bool> migrate) {
  const std::optional<ScheduleStrategy> s = parse_schedule_strategy(strategy);
  if (!s) throw InvalidArgument("strategy", strategy, "expected load, rr or priority");
  if (devices.empty()) throw InvalidArgument("devices", "[]", "at least one CUDA device");
  std::vector<PreparedGemm> prepared(calls.size());
  std::vector<ScheduledGemm> gemms;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    nb::tuple call = nb::cast<nb::tuple>(calls[i]);
    GemmRequest r;
    r.a = call[0];
    r.b = call[1];
    r.out = call[2];
    r.c = r.a_scales = r.b_scales = nb::none();
    r.alloc = nb::none();
    try {
      prepare_gemm(r, prepared[i]);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("calls[{}].{}", i, e.argument()), e.value(), e.rule());
    }
    const auto at = std::find(devices.begin(), devices.end(), prepared[i].device);
    if (at == devices.end())
      throw InvalidArgument(fmt::format("calls[{}]", i), fmt::format("arrays on cuda:{}", prepared[i].device),
                            fmt::format("must be on one of devices {}", devices));
    ScheduledGemm g;
    g.problem = prepared[i].problem;
    g.placement = {OperandHome::device, int(at - devices.begin())};
    g.operands = {prepared[i].operands};
    gemms.push_back(std::move(g));
  }
  ScheduleOptions options;
  options.strategy = *s;
  options.devices = devices;
  options.migrate = migrate;
  ScheduleResult result;
  {
    nb::gil_scoped_release release;
    result = run_gemm_schedule(gemms, options);
  }
  nb::list gpu, idle, busy;
  for (const ScheduledRun& run : result.runs) gpu.append(devices[std::size_t(run.gpu)]);
  for (const GpuActivity& a : result.gpus) {
    idle.append(a.idle_us);
    busy.append(a.busy_us);
  }
  nb::dict out;
  out["gpu"] = gpu;
  out["busy_us"] = busy;
  out["idle_us"] = idle;
  out["makespan_us"] = result.makespan_us;
  out["ideal_us"] = result.ideal_us;
  out["bound_us"] = result.bound_us;
  out["migrations"] = result.migrations;
  out["host_us_per_gemm"] = result.host_us_per_gemm;
  return out;
}

}  // namespace

void register_schedule(nb::module_& m) {
  using namespace nb::literals;
  m.def("schedule", &schedule, "calls"_a, "devices"_a, "strategy"_a, "migrate"_a.none(),
        "Runs (a, b, out) GEMMs (layout nt) over the devices; returns the report when all are "
        "done.");
}

}  // namespace autogemm::python
