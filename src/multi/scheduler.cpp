// The scheduler's strategies and its migration rule (scheduler.hpp, multi_gpu.hpp).
#include "multi/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autogemm/errors.hpp"

namespace autogemm {

std::string_view to_string(ScheduleStrategy strategy) {
  switch (strategy) {
    case ScheduleStrategy::round_robin: return "rr";
    case ScheduleStrategy::load_balanced: return "load";
    case ScheduleStrategy::priority: return "priority";
  }
  return "?";
}

std::optional<ScheduleStrategy> parse_schedule_strategy(std::string_view text) {
  if (text == "rr" || text == "round-robin") return ScheduleStrategy::round_robin;
  if (text == "load" || text == "load-balanced") return ScheduleStrategy::load_balanced;
  if (text == "priority") return ScheduleStrategy::priority;
  return std::nullopt;
}

namespace {

void check_inputs(const std::vector<double>& predicted_us, const std::vector<int>& priorities,
                  int gpus, const std::vector<double>& speed) {
  if (gpus < 1) throw InvalidArgument("gpus", std::to_string(gpus), "must be >= 1");
  if (!priorities.empty() && priorities.size() != predicted_us.size())
    throw InvalidArgument("priorities", fmt::format("{} entries", priorities.size()),
                          fmt::format("none, or one per GEMM ({})", predicted_us.size()));
  if (!speed.empty() && speed.size() != std::size_t(gpus))
    throw InvalidArgument("speed", fmt::format("{} entries", speed.size()),
                          fmt::format("none, or one per GPU ({})", gpus));
  for (std::size_t i = 0; i < predicted_us.size(); ++i)
    if (!std::isfinite(predicted_us[i]) || predicted_us[i] < 0)
      throw InvalidArgument(fmt::format("predicted_us[{}]", i), fmt::format("{}", predicted_us[i]),
                            "a predicted time is finite and >= 0");
  for (std::size_t g = 0; g < speed.size(); ++g)
    if (!std::isfinite(speed[g]) || speed[g] <= 0)
      throw InvalidArgument(fmt::format("speed[{}]", g), fmt::format("{}", speed[g]),
                            "a speed factor is finite and > 0 (1 = as predicted)");
}

}  // namespace

GemmAssignment assign_gemms(const std::vector<double>& predicted_us,
                            const std::vector<int>& priorities, int gpus,
                            ScheduleStrategy strategy, const std::vector<double>& speed_in) {
  check_inputs(predicted_us, priorities, gpus, speed_in);
  const std::vector<double> speed = speed_in.empty() ? std::vector<double>(std::size_t(gpus), 1.0) : speed_in;
  GemmAssignment a;
  a.queues.assign(std::size_t(gpus), {});
  a.predicted_busy_us.assign(std::size_t(gpus), 0.0);
  auto place = [&](std::size_t gemm, std::size_t gpu) {
    a.queues[gpu].push_back(int(gemm));
    a.predicted_busy_us[gpu] += predicted_us[gemm] * speed[gpu];
  };
  std::vector<std::size_t> order(predicted_us.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  if (strategy == ScheduleStrategy::round_robin) {
    for (std::size_t i : order) place(i, i % std::size_t(gpus));
  } else {
    // Load-balanced: longest first (LPT, within 4/3 of the best makespan: Graham 1969).
    // Priority: higher first. Either way each goes to the GPU that would finish it first.
    if (strategy == ScheduleStrategy::load_balanced)
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return predicted_us[x] > predicted_us[y]; });
    else if (!priorities.empty())
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t x, std::size_t y) { return priorities[x] > priorities[y]; });
    for (std::size_t i : order) {
      std::size_t best = 0;
      for (std::size_t g = 1; g < std::size_t(gpus); ++g)
        if (a.predicted_busy_us[g] + predicted_us[i] * speed[g] <
            a.predicted_busy_us[best] + predicted_us[i] * speed[best])
          best = g;
      place(i, best);
    }
  }
  a.predicted_makespan_us = *std::max_element(a.predicted_busy_us.begin(), a.predicted_busy_us.end());
  // The ideal: all work spread so every GPU ends at once, each at its own speed.
  double rate = 0;
  for (double s : speed) rate += 1.0 / s;
  a.ideal_us = std::accumulate(predicted_us.begin(), predicted_us.end(), 0.0) / rate;
  const double longest = predicted_us.empty() ? 0 : *std::max_element(predicted_us.begin(), predicted_us.end());
  a.lower_bound_us = std::max(a.ideal_us, longest * *std::min_element(speed.begin(), speed.end()));
  return a;
}

namespace multi {

double projected_finish_us(const DeviceOutlook& o) {
  return o.speed * (o.in_flight_us + std::accumulate(o.queued_us.begin(), o.queued_us.end(), 0.0));
}

std::optional<Migration> choose_migration(const std::vector<DeviceOutlook>& outlooks, int idle) {
  if (idle < 0 || std::size_t(idle) >= outlooks.size())
    throw InvalidArgument("idle", std::to_string(idle),
                          fmt::format("a GPU index below {}", outlooks.size()));
  int donor = -1;
  double latest = 0;
  for (std::size_t d = 0; d < outlooks.size(); ++d) {
    if (int(d) == idle || outlooks[d].queued_us.empty()) continue;
    const double finish = projected_finish_us(outlooks[d]);
    if (donor < 0 || finish > latest) {
      donor = int(d);
      latest = finish;
    }
  }
  if (donor < 0) return std::nullopt;
  const DeviceOutlook& self = outlooks[std::size_t(idle)];
  const double item = outlooks[std::size_t(donor)].queued_us.back();
  if (projected_finish_us(self) + self.speed * item >= latest) return std::nullopt;
  return Migration{donor, outlooks[std::size_t(donor)].queued_us.size() - 1};
}

}  // namespace multi
}  // namespace autogemm
