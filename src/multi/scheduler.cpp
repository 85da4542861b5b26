// The scheduler's strategies and its migration rule (scheduler.hpp, multi_gpu.hpp).
#include "multi/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/quantize.hpp"
#include "bench/tensors.hpp"
#include "runtime/cublaslt.hpp"

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

std::string_view to_string(OperandHome home) {
  switch (home) {
    case OperandHome::replicated: return "replicated";
    case OperandHome::device: return "device";
    case OperandHome::host: return "host";
  }
  return "?";
}

std::optional<OperandHome> parse_operand_home(std::string_view text) {
  if (text == "replicated") return OperandHome::replicated;
  if (text == "device") return OperandHome::device;
  if (text == "host") return OperandHome::host;
  return std::nullopt;
}

namespace {

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20)); }

void check_inputs(const std::vector<GemmDemand>& gemms, int gpus, const PlacementLimits& limits,
                  const Topology& topology) {
  if (gpus < 1) throw InvalidArgument("gpus", std::to_string(gpus), "must be >= 1");
  if (!limits.speed.empty() && limits.speed.size() != std::size_t(gpus))
    throw InvalidArgument("speed", fmt::format("{} entries", limits.speed.size()),
                          fmt::format("none, or one per GPU ({})", gpus));
  for (std::size_t g = 0; g < limits.speed.size(); ++g)
    if (!std::isfinite(limits.speed[g]) || limits.speed[g] <= 0)
      throw InvalidArgument(fmt::format("speed[{}]", g), fmt::format("{}", limits.speed[g]),
                            "a speed factor is finite and > 0 (1 = as predicted)");
  if (!limits.memory_bytes.empty() && limits.memory_bytes.size() != std::size_t(gpus))
    throw InvalidArgument("memory_bytes", fmt::format("{} entries", limits.memory_bytes.size()),
                          fmt::format("none, or one per GPU ({})", gpus));
  for (std::size_t g = 0; g < limits.memory_bytes.size(); ++g)
    if (limits.memory_bytes[g] < 0)
      throw InvalidArgument(fmt::format("memory_bytes[{}]", g), std::to_string(limits.memory_bytes[g]),
                            "a memory limit is >= 0 bytes");
  if (topology.gpus() != gpus || topology.host_links.size() != std::size_t(gpus))
    throw InvalidArgument("topology", fmt::format("{} GPUs, {} host links", topology.gpus(),
                                                  topology.host_links.size()),
                          fmt::format("links between the schedule's {} GPUs and from the host", gpus));
  if (!std::isfinite(limits.pool_share) || limits.pool_share < 0 || limits.pool_share >= 1)
    throw InvalidArgument("pool_share", fmt::format("{}", limits.pool_share),
                          "a share of the total time in [0, 1)");
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const GemmDemand& d = gemms[i];
    if (!std::isfinite(d.time_us) || d.time_us < 0)
      throw InvalidArgument(fmt::format("predicted_us[{}]", i), fmt::format("{}", d.time_us),
                            "a predicted time is finite and >= 0");
    if (d.input_bytes < 0 || d.output_bytes < 0 || d.workspace_bytes < 0)
      throw InvalidArgument(fmt::format("gemms[{}]", i),
                            fmt::format("{} / {} / {} bytes", d.input_bytes, d.output_bytes, d.workspace_bytes),
                            "input, output and workspace bytes are >= 0");
    if (d.placement.home == OperandHome::device &&
        (d.placement.device < 0 || d.placement.device >= gpus))
      throw InvalidArgument(fmt::format("gemms[{}].placement.device", i), std::to_string(d.placement.device),
                            fmt::format("an index into the schedule's {} GPUs", gpus));
  }
}

}  // namespace

GemmAssignment assign_gemms(const std::vector<GemmDemand>& gemms, int gpus,
                            ScheduleStrategy strategy, const PlacementLimits& limits) {
  const Topology topology =
      limits.topology ? *limits.topology : topology_preset("nvlink", std::max(gpus, 1));
  check_inputs(gemms, gpus, limits, topology);
  const std::size_t n = gemms.size(), G = std::size_t(gpus);
  const std::vector<double> speed = limits.speed.empty() ? std::vector<double>(G, 1.0) : limits.speed;
  GemmAssignment a;
  a.queues.assign(G, {});
  a.gpu.assign(n, -1);
  a.copy_us.assign(n, 0.0);
  a.predicted_busy_us.assign(G, 0.0);
  a.memory_bytes.assign(G, 0);
  a.bytes_moved.assign(G, 0);
  std::vector<int64_t> workspace(G, 0);  // the largest workspace of each GPU's GEMMs
  // Memory the scheduler holds on a GPU: the copies of every GEMM placed there whose operands
  // live elsewhere (inputs and D, made when its share is enqueued, up front, and held until D
  // is home), plus the largest workspace of its GEMMs (one call at a time per stream; the
  // runtime's workspaces are stream-ordered or kept per stream).
  auto extra = [&](std::size_t i, std::size_t g) {
    return multi::copy_bytes(gemms[i], int(g)) +
           std::max<int64_t>(0, gemms[i].workspace_bytes - workspace[g]);
  };
  auto fits = [&](std::size_t i, std::size_t g) {
    return limits.memory_bytes.empty() || a.memory_bytes[g] + extra(i, g) <= limits.memory_bytes[g];
  };
  auto cost = [&](std::size_t i, std::size_t g) {
    return (gemms[i].time_us + multi::copy_time_us(gemms[i], int(g), topology)) * speed[g];
  };
  auto place = [&](std::size_t i, std::size_t g) {
    a.memory_bytes[g] += extra(i, g);
    workspace[g] = std::max(workspace[g], gemms[i].workspace_bytes);
    a.queues[g].push_back(int(i));
    a.gpu[i] = int(g);
    a.copy_us[i] = multi::copy_time_us(gemms[i], int(g), topology);
    a.predicted_busy_us[g] += cost(i, g);
    a.bytes_moved[g] += multi::copy_bytes(gemms[i], int(g));
  };
  auto refuse = [&](std::size_t i) {
    const GemmDemand& d = gemms[i];
    std::string room;
    for (std::size_t g = 0; g < G; ++g)
      room += fmt::format("{}GPU {} needs {} more and has {} of {} left", g ? "; " : "", g,
                          mib(extra(i, g)), mib(limits.memory_bytes[g] - a.memory_bytes[g]),
                          mib(limits.memory_bytes[g]));
    throw InvalidArgument(
        fmt::format("gemms[{}]", i),
        fmt::format("{} bytes ({} of operands and D, {} workspace; operands {})",
                    d.input_bytes + d.output_bytes + d.workspace_bytes, mib(d.input_bytes + d.output_bytes),
                    mib(d.workspace_bytes),
                    d.placement.home == OperandHome::device
                        ? fmt::format("on GPU {}", d.placement.device)
                        : std::string(to_string(d.placement.home))),
        fmt::format("fits on no GPU within its memory limit, after the GEMMs placed before it "
                    "(longest first): {}", room));
  };

  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  if (strategy == ScheduleStrategy::load_balanced)
    // Longest first (LPT, within 4/3 of the best makespan: Graham 1969).
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return gemms[x].time_us > gemms[y].time_us; });
  else if (strategy == ScheduleStrategy::priority)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return gemms[x].priority > gemms[y].priority; });
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    std::optional<std::size_t> best;
    if (strategy == ScheduleStrategy::round_robin) {
      for (std::size_t step = 0; step < G && !best; ++step)
        if (fits(i, (k + step) % G)) best = (k + step) % G;
    } else {
      for (std::size_t g = 0; g < G; ++g)
        if (fits(i, g) && (!best || a.predicted_busy_us[g] + cost(i, g) <
                                        a.predicted_busy_us[*best] + cost(i, *best)))
          best = g;
    }
    if (!best) refuse(i);
    place(i, *best);
  }

  if (strategy != ScheduleStrategy::round_robin) {
    // A pooled GEMM may end up on any GPU: only those whose workspace every GPU has room for.
    for (int i : multi::pool_members(gemms, limits.pool_share)) {
      bool anywhere = true;
      for (std::size_t g = 0; g < G && !limits.memory_bytes.empty(); ++g)
        anywhere = anywhere && a.memory_bytes[g] + std::max<int64_t>(0, gemms[std::size_t(i)].workspace_bytes -
                                                                            workspace[g]) <=
                                   limits.memory_bytes[g];
      if (anywhere) a.pool.push_back(i);
    }
    // Pooled GEMMs run last on their planned GPU.
    std::vector<char> pooled(n, 0);
    for (int i : a.pool) pooled[std::size_t(i)] = 1;
    for (auto& q : a.queues)
      std::stable_partition(q.begin(), q.end(), [&](int i) { return !pooled[std::size_t(i)]; });
  }

  a.predicted_makespan_us = *std::max_element(a.predicted_busy_us.begin(), a.predicted_busy_us.end());
  // The ideal: all work spread so every GPU ends at once, each at its own speed.
  double rate = 0, total = 0, longest = 0;
  for (double s : speed) rate += 1.0 / s;
  for (const GemmDemand& d : gemms) {
    total += d.time_us;
    longest = std::max(longest, d.time_us);
  }
  a.ideal_us = total / rate;
  a.lower_bound_us = std::max(a.ideal_us, longest * *std::min_element(speed.begin(), speed.end()));
  return a;
}

GemmAssignment assign_gemms(const std::vector<double>& predicted_us,
                            const std::vector<int>& priorities, int gpus,
                            ScheduleStrategy strategy, const std::vector<double>& speed) {
  if (!priorities.empty() && priorities.size() != predicted_us.size())
    throw InvalidArgument("priorities", fmt::format("{} entries", priorities.size()),
                          fmt::format("none, or one per GEMM ({})", predicted_us.size()));
  std::vector<GemmDemand> gemms(predicted_us.size());
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    gemms[i].time_us = predicted_us[i];
    gemms[i].priority = priorities.empty() ? 0 : priorities[i];
  }
  PlacementLimits limits;
  limits.speed = speed;
  if (gpus >= 1) limits.topology = topology_preset("nvlink", gpus);
  return assign_gemms(gemms, gpus, strategy, limits);
}

namespace multi {

GemmBytes gemm_bytes(const GemmProblem& p, const KernelSpec& spec) {
  auto bytes = [&](char operand, DType t) {
    return int64_t(bench::operand_elements(p, operand)) * int64_t(dtype_bytes(t));
  };
  GemmBytes b;
  b.input = bytes('A', p.a_type) + bytes('B', p.b_type) + (p.reads_c ? bytes('C', p.d_type) : 0);
  if (p.scaling == Scaling::per_tensor) b.input += 2 * int64_t(sizeof(float));
  if (p.scaling == Scaling::block_1x128_128x128)
    b.input += (fp8_scale_count_1x128(p.stored_rows(), p.k) + fp8_scale_count_128x128(p.n, p.k)) *
               int64_t(sizeof(float));
  b.output = bytes('D', p.d_type);
  b.workspace = spec.vendor ? int64_t(runtime::kCublasLtWorkspaceBytes)
                            : spec.split_k.sync_bytes() + spec.split_k.partial_bytes() +
                                  spec.a_scale_copy_bytes + spec.copy_a.bytes() + spec.copy_b.bytes();
  return b;
}

int64_t copy_bytes(const GemmDemand& gemm, int gpu) {
  const OperandPlacement& p = gemm.placement;
  if (p.home == OperandHome::replicated || (p.home == OperandHome::device && p.device == gpu)) return 0;
  return gemm.input_bytes + gemm.output_bytes;
}

double copy_time_us(const GemmDemand& gemm, int gpu, const Topology& topology) {
  if (copy_bytes(gemm, gpu) == 0) return 0;
  const std::size_t g = std::size_t(gpu);
  const Link& in = gemm.placement.home == OperandHome::host
                       ? topology.host_links.at(g)
                       : topology.links.at(std::size_t(gemm.placement.device)).at(g);
  const Link& out = gemm.placement.home == OperandHome::host
                        ? topology.host_links.at(g)   // D back to the host: the same PCIe link
                        : topology.links.at(g).at(std::size_t(gemm.placement.device));
  auto over = [](const Link& l, int64_t bytes) {
    return l.latency_us + (bytes > 0 ? double(bytes) / (l.bandwidth_gbps * 1e3) : 0.0);
  };
  return over(in, gemm.input_bytes) + over(out, gemm.output_bytes);
}

std::vector<int> pool_members(const std::vector<GemmDemand>& gemms, double share) {
  if (gemms.empty() || share <= 0) return {};
  int lowest = gemms.front().priority;
  double total = 0;
  for (const GemmDemand& d : gemms) {
    lowest = std::min(lowest, d.priority);
    total += d.time_us;
  }
  std::vector<int> candidates;
  for (std::size_t i = 0; i < gemms.size(); ++i)
    if (gemms[i].priority == lowest && gemms[i].placement.home == OperandHome::replicated)
      candidates.push_back(int(i));
  std::stable_sort(candidates.begin(), candidates.end(), [&](int x, int y) {
    return gemms[std::size_t(x)].time_us < gemms[std::size_t(y)].time_us;
  });
  std::vector<int> pool;
  double sum = 0;
  for (int i : candidates) {
    if (sum + gemms[std::size_t(i)].time_us > share * total) break;
    sum += gemms[std::size_t(i)].time_us;
    pool.push_back(i);
  }
  std::reverse(pool.begin(), pool.end());   // longest first
  return pool;
}

std::optional<std::size_t> refill_wait_index(const std::vector<double>& ahead_us, double lead_us) {
  double after = 0;
  for (std::size_t j = ahead_us.size(); j-- > 0;) {
    if (after >= lead_us) return j;
    after += ahead_us[j];
  }
  return std::nullopt;
}

GpuActivity gpu_activity(const std::vector<std::pair<double, double>>& intervals,
                         double makespan_us) {
  GpuActivity a;
  a.gemms = int(intervals.size());
  double previous_end = 0;
  for (const auto& [start, end] : intervals) {
    a.busy_us += end - start;
    if (start - previous_end > kIdleGapUs) a.gaps.emplace_back(previous_end, start - previous_end);
    previous_end = std::max(previous_end, end);
  }
  a.span_us = previous_end;
  a.idle_us = std::max(0.0, makespan_us - a.busy_us);
  return a;
}

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
