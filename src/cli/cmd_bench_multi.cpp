// `autogemm bench --gpus N`: a suite's GEMMs scheduled over N GPUs by each strategy asked for;
// per GPU its busy time and span, the makespan against the ideal (total predicted work / N),
// and every result checked against the single-GPU result (cmd_bench_multi.hpp).
#include "cli/cmd_bench_multi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <utility>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "bench/plot_svg.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/result_match.hpp"
#include "multi/scheduler.hpp"

namespace autogemm::cli {

namespace {

const std::vector<std::string> kMultiOptionNames = {"--gpus",       "--schedule", "--repeat",
                                                    "--count",      "--no-migrate", "--split",
                                                    "--inputs",     "--output",
                                                    "--tp",         "--transport", "--bands",
                                                    "--rounds",      "--tail-rows",     "--merge-c-steps",
                                                    "--process-per-rank", "--memory-limit"};

struct Item {
  bench::BenchCase row;
  GemmProblem problem;
  std::size_t distinct = 0;   // index of its problem among the distinct ones
  int priority = 0;
  double predicted_us = 0;
  double measured_us = 0;     // the warm-up's time on GPU 0 (0: not measured)
  multi::GemmBytes bytes;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::vector<Item> make_items(const CLI::App& bench, const MultiBenchOptions& o,
                             std::vector<GemmProblem>* distinct) {
  const std::string suite = option_text(bench, "--suite");
  if (suite.empty())
    throw InvalidArgument("--suite", "missing",
                          "--gpus schedules the GEMMs of suite files: --suite FILE[,FILE...]");
  std::vector<bench::BenchCase> rows;
  for (const std::string& file : split_commas(suite))
    for (const bench::BenchCase& c : bench::load_suite(file)) rows.push_back(c);
  const bool repeat_given = bench.get_option("--repeat")->count() > 0;
  const bool count_given = bench.get_option("--count")->count() > 0;
  if (repeat_given && count_given)
    throw InvalidArgument("--count", std::to_string(o.count), "give --repeat or --count, not both");
  if (count_given && o.count < 1)
    throw InvalidArgument("--count", std::to_string(o.count), "must be >= 1");
  const int repeat = repeat_given ? o.repeat : 1;
  const int count = count_given ? o.count : 0;
  const std::string dtype = option_text(bench, "--dtype", "bf16");
  std::vector<Item> items;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::size_t> index;
  for (const bench::BenchCase& row : multi_bench_list(rows, repeat, count)) {
    Item item;
    item.row = row;
    item.problem = make_problem(row.m, row.n, row.k, dtype, "nt", 0, 0, 0);
    const auto key = std::make_tuple(row.m, row.n, row.k);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, distinct->size()).first;
      distinct->push_back(item.problem);
    }
    item.distinct = it->second;
    item.priority = multi_bench_priority(row);
    items.push_back(item);
  }
  return items;
}

// Predicted time and bytes of each distinct problem on the device.
void predict(std::vector<Item>& items, const std::vector<GemmProblem>& distinct, const GpuInfo& device) {
  std::vector<std::pair<double, multi::GemmBytes>> planned;
  for (const GemmProblem& p : distinct) {
    const Plan plan = plan_gemm(p, device);
    planned.emplace_back(plan.best().prediction.time_us, multi::gemm_bytes(p, plan.spec));
  }
  for (Item& item : items) std::tie(item.predicted_us, item.bytes) = planned[item.distinct];
}

std::string row_text(const Item& item) {
  return fmt::format("{} x {} x {}{}", item.row.m, item.row.n, item.row.k,
                     item.row.tag.empty() ? "" : " " + item.row.tag);
}

// A placement refused by assign_gemms names "gemms[i]": the command names the suite's row.
template <class F>
auto naming_rows(const std::vector<Item>& items, F&& f) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    std::size_t i = 0;
    if (std::sscanf(e.argument().c_str(), "gemms[%zu]", &i) == 1 && i < items.size())
      throw InvalidArgument(fmt::format("GEMM {} ({})", i, row_text(items[i])), e.value(), e.rule());
    throw;
  }
}

std::vector<GemmDemand> demands(const std::vector<Item>& items, OperandPlacement placement) {
  std::vector<GemmDemand> out;
  for (const Item& item : items) {
    GemmDemand d;
    d.time_us = item.measured_us > 0 ? item.measured_us : item.predicted_us;
    d.priority = item.priority;
    d.placement = placement;
    d.input_bytes = item.bytes.input;
    d.output_bytes = item.bytes.output;
    d.workspace_bytes = item.bytes.workspace;
    out.push_back(d);
  }
  return out;
}

// --inputs for the schedule: replicated (every GPU), root (GPU 0) or host.
OperandPlacement parse_placement(const std::string& text) {
  if (text == "replicated") return {OperandHome::replicated, 0};
  if (text == "root") return {OperandHome::device, 0};
  if (text == "host") return {OperandHome::host, 0};
  throw InvalidArgument("--inputs", text,
                        "with --gpus and --suite: replicated (on every GPU), root (on GPU 0: "
                        "copied to the GPU that runs it, D copied back) or host (pinned host "
                        "memory, copied in and out)");
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20)); }

// ---- without a GPU: each strategy's predicted assignment -------------------------------------

void show_plans(const std::vector<Item>& items, const std::vector<ScheduleStrategy>& strategies,
                const MultiBenchOptions& o, const GpuInfo& device, const std::vector<int64_t>& limits,
                const std::string& note, bool json) {
  const int gpus = o.gpus;
  const OperandPlacement placement = parse_placement(o.inputs);
  nlohmann::json out = {{"note", note}, {"gpus", gpus}, {"device", device.preset}, {"gemms", items.size()},
                        {"measured", false}, {"inputs", o.inputs}, {"strategies", nlohmann::json::array()}};
  if (!limits.empty()) out["memory_limit_bytes"] = limits;
  if (!json) fmt::print("{}\n{} GEMMs over {} x {}, operands {}\n", note, items.size(), gpus, device.preset,
                        o.inputs);
  PlacementLimits pl;
  pl.memory_bytes = limits;
  pl.topology = topology_preset(default_link_preset(device), gpus);
  for (ScheduleStrategy s : strategies) {
    const GemmAssignment a =
        naming_rows(items, [&] { return assign_gemms(demands(items, placement), gpus, s, pl); });
    nlohmann::json per_gpu = nlohmann::json::array();
    if (!json) fmt::print("\n{}: predicted makespan {:.1f} us, ideal {:.1f} us (ratio {:.3f}), lower "
                          "bound {:.1f} us (ratio {:.3f}); {} GEMMs pooled for the end\n",
                          to_string(s), a.predicted_makespan_us, a.ideal_us,
                          a.predicted_makespan_us / a.ideal_us, a.lower_bound_us,
                          a.predicted_makespan_us / a.lower_bound_us, a.pool.size());
    for (int g = 0; g < gpus; ++g) {
      per_gpu.push_back({{"gpu", g}, {"gemms", a.queues[g].size()}, {"predicted_busy_us", a.predicted_busy_us[g]},
                         {"memory_bytes", a.memory_bytes[g]}, {"bytes_moved", a.bytes_moved[g]}});
      if (!json)
        fmt::print("  GPU {}: {} GEMMs, predicted busy {:.1f} us, allocates {}{}, moves {}\n", g,
                   a.queues[g].size(), a.predicted_busy_us[g], mib(a.memory_bytes[g]),
                   limits.empty() ? "" : fmt::format(" of {}", mib(limits[g])), mib(a.bytes_moved[g]));
    }
    out["strategies"].push_back({{"strategy", std::string(to_string(s))},
                                 {"predicted_makespan_us", a.predicted_makespan_us},
                                 {"ideal_us", a.ideal_us},
                                 {"lower_bound_us", a.lower_bound_us},
                                 {"pooled", a.pool.size()},
                                 {"per_gpu", per_gpu}});
  }
  if (json) std::cout << out.dump(2) << "\n";
}

// ---- on the GPUs ------------------------------------------------------------------------------

std::size_t d_bytes(const GemmProblem& p) {
  return bench::operand_elements(p, 'D') * std::size_t(dtype_bytes(p.d_type));
}

// Pinned host memory (the copies to and from it are asynchronous).
struct HostBuffer {
  void* p = nullptr;
  explicit HostBuffer(std::size_t bytes) { cuda_check(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1)), "cudaMallocHost(bench --gpus)"); }
  HostBuffer(HostBuffer&& o) noexcept : p(std::exchange(o.p, nullptr)) {}
  ~HostBuffer() { if (p) (void)cudaFreeHost(p); }
};

// The distinct problems' inputs where --inputs puts them (every GPU: the same values, the same
// seed; root: GPU 0; host: GPU 0's copied to pinned host memory), and one D per GEMM where its
// operands live (replicated: on every GPU, since any GEMM may run anywhere).
struct DeviceData {
  std::vector<std::vector<bench::GemmInputs>> inputs;   // [gpu][distinct]
  std::vector<std::vector<bench::DeviceBuffer>> d;      // [gpu][item]
  std::vector<std::vector<HostBuffer>> host_inputs;     // [distinct]: a, b (host placement)
  std::vector<HostBuffer> host_d;                       // [item]
};

DeviceData allocate(const std::vector<Item>& items, const std::vector<GemmProblem>& distinct,
                    int gpus, uint64_t seed, OperandHome home) {
  DeviceData data;
  const int holders = home == OperandHome::replicated ? gpus : 1;
  data.inputs.resize(std::size_t(gpus));
  data.d.resize(std::size_t(gpus));
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench --gpus)");
    // Every GPU gets the inputs for the warm-up (kernels loaded, GPU 0's result the reference).
    for (std::size_t i = 0; i < distinct.size(); ++i)
      data.inputs[g].push_back(bench::make_gemm_inputs(distinct[i], seed + 10 * i));
    if (g < holders && home != OperandHome::host)
      for (const Item& item : items) data.d[g].emplace_back(d_bytes(item.problem));
  }
  if (home == OperandHome::host) {
    for (std::size_t i = 0; i < distinct.size(); ++i) {
      const GemmProblem& p = distinct[i];
      std::vector<HostBuffer> ab;
      for (const auto& [operand, buffer] : {std::pair{'A', &data.inputs[0][i].a}, {'B', &data.inputs[0][i].b}}) {
        const std::size_t n = bench::operand_elements(p, operand) * dtype_bytes(operand == 'A' ? p.a_type : p.b_type);
        ab.emplace_back(n);
        cuda_check(cudaMemcpy(ab.back().p, buffer->get(), n, cudaMemcpyDefault), "cudaMemcpy(bench --gpus host inputs)");
      }
      data.host_inputs.push_back(std::move(ab));
    }
    for (const Item& item : items) data.host_d.emplace_back(d_bytes(item.problem));
  }
  return data;
}

// Each distinct problem on every GPU (loads its kernel there; the first compiles it), then timed
// once more on GPU 0 (the scheduler balances on these), and GPU 0's result kept as the single-GPU
// reference.
std::vector<std::vector<unsigned char>> warm_up(const std::vector<GemmProblem>& distinct,
                                                DeviceData& data, int gpus, std::vector<double>* times) {
  std::vector<std::vector<unsigned char>> reference;
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench --gpus)");
    GemmOptions options;
    options.device = g;
    for (std::size_t i = 0; i < distinct.size(); ++i)
      gemm(distinct[i], data.inputs[g][i].operands(), nullptr, options);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(bench --gpus warm-up)");
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench --gpus)");
  bench::Stream stream;
  // L2 flushed before each: in the schedule a GEMM follows others' data, not its own.
  bench::L2Flusher flusher;
  GemmOptions options;
  options.device = 0;
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    const auto timed = bench::time_calls(
        [&](cudaStream_t s) { gemm(distinct[i], data.inputs[0][i].operands(), s, options); }, 1, 3,
        stream.get(), &flusher);
    times->push_back(bench::summarize(timed).median_us);
  }
  for (std::size_t i = 0; i < distinct.size(); ++i)
    reference.push_back(multi::download_bytes(data.inputs[0][i].d.get(), d_bytes(distinct[i])));
  return reference;
}

void* d_of(const DeviceData& data, std::size_t item, int gpu, OperandHome home) {
  if (home == OperandHome::host) return data.host_d[item].p;
  return data.d[home == OperandHome::replicated ? std::size_t(gpu) : 0][item].get();
}

struct Checked {
  std::size_t bitwise = 0, within = 0, failed = 0;
  double worst_diff = 0;
  std::string first_failure;
};

Checked check_results(const std::vector<Item>& items, const ScheduleResult& r, const DeviceData& data,
                      const std::vector<std::vector<unsigned char>>& reference, OperandHome home) {
  Checked c;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int g = r.runs[i].gpu;
    const multi::ResultMatch m = multi::match_results(
        multi::download_bytes(d_of(data, i, g, home), d_bytes(items[i].problem)),
        reference[items[i].distinct], items[i].problem.d_type);
    c.worst_diff = std::max(c.worst_diff, m.diff);
    if (m.bitwise) ++c.bitwise;
    else if (m.ok()) ++c.within;
    else {
      ++c.failed;
      if (c.first_failure.empty())
        c.first_failure = fmt::format("GEMM {} ({}) on GPU {}: diff {:.3g}{}", i, row_text(items[i]), g,
                                      m.diff, m.finite ? "" : ", unwritten (NaN) elements");
    }
  }
  return c;
}

nlohmann::json report(ScheduleStrategy s, const ScheduleResult& r, const Checked& c, int gpus, bool json) {
  nlohmann::json per_gpu = nlohmann::json::array();
  double worst_idle = 0;
  for (int g = 0; g < gpus; ++g) {
    const GpuActivity& a = r.gpus[std::size_t(g)];
    double gap_total = 0, gap_longest = 0;
    for (const auto& [start, length] : a.gaps) {
      gap_total += length;
      gap_longest = std::max(gap_longest, length);
    }
    const double idle_share = r.makespan_us > 0 ? a.idle_us / r.makespan_us : 0;
    worst_idle = std::max(worst_idle, idle_share);
    nlohmann::json gaps = nlohmann::json::array();
    for (const auto& [start, length] : a.gaps) gaps.push_back({{"start_us", start}, {"us", length}});
    per_gpu.push_back({{"gpu", g}, {"gemms", a.gemms}, {"migrated_in", a.migrated_in},
                       {"predicted_busy_us", r.assignment.predicted_busy_us[std::size_t(g)]},
                       {"busy_us", a.busy_us}, {"span_us", a.span_us}, {"idle_us", a.idle_us},
                       {"idle_share", idle_share}, {"gaps_over_20us", a.gaps.size()},
                       {"gap_us", gap_total}, {"longest_gap_us", gap_longest}, {"gaps", gaps},
                       {"bytes_moved", a.bytes_moved}});
  }
  const double ratio = r.ideal_us > 0 ? r.makespan_us / r.ideal_us : 0;
  int resolved = 0;
  for (const ScheduledRun& run : r.runs) resolved += run.resolved ? 1 : 0;
  const std::string gate = r.start_gated ? "on" : "off";
  if (!json) {
    fmt::print("\n{}: makespan {:.1f} us = {:.3f}x the ideal {:.1f} us (measured busy / {}); bound "
               "{:.1f} us (ideal or the longest GEMM: {:.3f}x); predicted ideal {:.1f} us; {} "
               "migration{}; host {:.2f} us per GEMM\n",
               to_string(s), r.makespan_us, ratio, r.ideal_us, gpus, r.bound_us,
               r.bound_us > 0 ? r.makespan_us / r.bound_us : 0, r.assignment.ideal_us, r.migrations,
               r.migrations == 1 ? "" : "s", r.host_us_per_gemm);
    fmt::print("  start gate {}{}; {} of {} GEMMs launched as resolved before the run ({:.0f} us "
               "of host time, outside the makespan)\n",
               gate, r.start_gate_note.empty() ? "" : " (" + r.start_gate_note + ")", resolved,
               r.runs.size(), r.resolve_us);
    fmt::print("  {:>4} {:>6} {:>9} {:>15} {:>11} {:>11} {:>7} {:>12} {:>11} {:>12}\n", "GPU", "GEMMs",
               "migrated", "predicted_busy", "busy_us", "idle_us", "idle%", "gaps>20us", "gap_us", "moved_MiB");
    for (const auto& row : per_gpu)
      fmt::print("  {:>4} {:>6} {:>9} {:>15.1f} {:>11.1f} {:>11.1f} {:>6.2f}% {:>12} {:>11.1f} {:>12.1f}\n",
                 row["gpu"].get<int>(), row["gemms"].get<int>(), row["migrated_in"].get<int>(),
                 row["predicted_busy_us"].get<double>(), row["busy_us"].get<double>(),
                 row["idle_us"].get<double>(), 100 * row["idle_share"].get<double>(),
                 row["gaps_over_20us"].get<std::size_t>(), row["gap_us"].get<double>(),
                 double(row["bytes_moved"].get<int64_t>()) / double(1 << 20));
    fmt::print("  results against the single-GPU result (GPU 0): {} bitwise equal, {} within diff 1e-5, "
               "{} FAILED{}\n",
               c.bitwise, c.within, c.failed,
               c.first_failure.empty() ? std::string() : fmt::format(" (first: {})", c.first_failure));
  }
  return {{"strategy", std::string(to_string(s))},
          {"makespan_us", r.makespan_us},
          {"ideal_us", r.ideal_us},
          {"ratio_to_ideal", ratio},
          {"bound_us", r.bound_us},
          {"ratio_to_bound", r.bound_us > 0 ? r.makespan_us / r.bound_us : 0},
          {"ideal_predicted_us", r.assignment.ideal_us},
          {"worst_idle_share", worst_idle},
          {"migrations", r.migrations},
          {"pooled", r.assignment.pool.size()},
          {"host_us_per_gemm", r.host_us_per_gemm},
          {"start_gated", r.start_gated},
          {"start_gate_note", r.start_gate_note},
          {"resolved", resolved},
          {"resolve_us", r.resolve_us},
          {"per_gpu", per_gpu},
          {"check", {{"bitwise", c.bitwise}, {"within_diff", c.within}, {"failed", c.failed},
                     {"worst_diff", c.worst_diff}, {"first_failure", c.first_failure}}}};
}

bench::TimelinePanel timeline(ScheduleStrategy s, const ScheduleResult& r, const std::vector<Item>& items,
                              int gpus) {
  bench::TimelinePanel panel;
  panel.heading = fmt::format("{}: makespan {:.0f} us, {:.3f}x the ideal; {} migrations", to_string(s),
                              r.makespan_us, r.ideal_us > 0 ? r.makespan_us / r.ideal_us : 0, r.migrations);
  for (int g = 0; g < gpus; ++g) {
    bench::TimelineLane lane;
    lane.label = fmt::format("GPU {} ({:.1f}% idle)", g,
                             r.makespan_us > 0 ? 100 * r.gpus[std::size_t(g)].idle_us / r.makespan_us : 0);
    lane.gaps = r.gpus[std::size_t(g)].gaps;
    for (std::size_t i = 0; i < r.runs.size(); ++i)
      if (r.runs[i].gpu == g)
        lane.bars.push_back({r.runs[i].start_us, r.runs[i].end_us, r.runs[i].migrated,
                             fmt::format("GEMM {}: {}", i, row_text(items[i]))});
    panel.lanes.push_back(std::move(lane));
  }
  return panel;
}

void measure(std::vector<Item>& items, const std::vector<GemmProblem>& distinct,
             const std::vector<ScheduleStrategy>& strategies, const MultiBenchOptions& o,
             const std::vector<int64_t>& limits, uint64_t seed, bool json, const std::string& plot) {
  const OperandPlacement placement = parse_placement(o.inputs);
  const OperandHome home = placement.home;
  DeviceData data = allocate(items, distinct, o.gpus, seed, home);
  std::vector<double> warm_times;
  const auto reference = warm_up(distinct, data, o.gpus, &warm_times);
  for (Item& item : items) item.measured_us = warm_times[item.distinct];
  nlohmann::json out = {{"gpus", o.gpus}, {"gemms", items.size()}, {"distinct", distinct.size()},
                        {"measured", true}, {"inputs", o.inputs}, {"balanced_on", "warm-up times (GPU 0)"},
                        {"strategies", nlohmann::json::array()}};
  if (!json) fmt::print("{} GEMMs ({} distinct) over {} GPUs, operands {}; balanced on each problem's "
                        "warm-up time on GPU 0; every result checked against GPU 0's single-GPU "
                        "result\n", items.size(), distinct.size(), o.gpus, o.inputs);
  std::size_t failed = 0;
  std::map<ScheduleStrategy, double> makespans;
  std::vector<bench::TimelinePanel> panels;
  for (ScheduleStrategy s : strategies) {
    std::vector<ScheduledGemm> gemms;
    for (std::size_t i = 0; i < items.size(); ++i) {
      ScheduledGemm g;
      g.problem = items[i].problem;
      g.priority = items[i].priority;
      g.predicted_us = items[i].predicted_us;
      g.measured_us = items[i].measured_us;
      g.placement = placement;
      const int holders = home == OperandHome::replicated ? o.gpus : 1;
      for (int dev = 0; dev < holders; ++dev) {
        GemmOperands ops = data.inputs[dev][items[i].distinct].operands();
        if (home == OperandHome::host) {
          ops.a = data.host_inputs[items[i].distinct][0].p;
          ops.b = data.host_inputs[items[i].distinct][1].p;
        }
        ops.d = d_of(data, i, dev, home);
        if (home == OperandHome::host) {
          std::memset(ops.d, 0xff, d_bytes(g.problem));   // NaN in every type: unwritten shows
        } else {
          cuda_check(cudaSetDevice(dev), "cudaSetDevice(bench --gpus)");
          bench::fill_poison(ops.d, bench::operand_elements(g.problem, 'D'), g.problem.d_type);
        }
        g.operands.push_back(ops);
      }
      gemms.push_back(std::move(g));
    }
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(bench --gpus poison)");
    ScheduleOptions options;
    options.strategy = s;
    for (int dev = 0; dev < o.gpus; ++dev) options.devices.push_back(dev);
    if (o.no_migrate) options.migrate = false;
    options.memory_limit_bytes = limits;
    const ScheduleResult r = naming_rows(items, [&] { return run_gemm_schedule(gemms, options); });
    const Checked c = check_results(items, r, data, reference, home);
    failed += c.failed;
    makespans[s] = r.makespan_us;
    out["strategies"].push_back(report(s, r, c, o.gpus, json));
    if (!plot.empty()) panels.push_back(timeline(s, r, items, o.gpus));
  }
  if (makespans.count(ScheduleStrategy::load_balanced) && makespans.count(ScheduleStrategy::round_robin)) {
    const double ratio = makespans[ScheduleStrategy::round_robin] / makespans[ScheduleStrategy::load_balanced];
    out["rr_over_load"] = ratio;
    if (!json) fmt::print("\nload-balanced against round-robin: {:.3f}x ({})\n", ratio,
                          ratio > 1 ? "load-balanced finishes first" : "round-robin finishes first");
  }
  if (!plot.empty()) {
    bench::PlotOptions po;
    po.title = fmt::format("autogemm scheduler: {} GEMMs over {} GPUs", items.size(), o.gpus);
    po.subtitle = fmt::format("operands {}; every result checked against GPU 0 ({} failed)", o.inputs, failed);
    write_file("--plot", plot, bench::timeline_svg(panels, po));
    if (!json) fmt::print("timeline drawn into {}\n", plot);
  }
  if (json) std::cout << out.dump(2) << "\n";
  if (failed > 0) {
    fmt::print(stderr, "autogemm: {} scheduled result{} differ from the single-GPU result\n", failed,
               failed == 1 ? "" : "s");
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

std::vector<bench::BenchCase> multi_bench_list(const std::vector<bench::BenchCase>& rows, int repeat,
                                               int count) {
  if (rows.empty()) throw InvalidArgument("--suite", "no rows", "the suites hold no GEMM");
  if (repeat < 1) throw InvalidArgument("--repeat", std::to_string(repeat), "must be >= 1");
  if (count < 0) throw InvalidArgument("--count", std::to_string(count), "must be >= 0 (0: use --repeat)");
  if (count > 0 && repeat > 1)
    throw InvalidArgument("--count", std::to_string(count), "give --repeat or --count, not both");
  const std::size_t total = count > 0 ? std::size_t(count) : rows.size() * std::size_t(repeat);
  std::vector<bench::BenchCase> list;
  for (std::size_t i = 0; i < total; ++i) list.push_back(rows[i % rows.size()]);
  return list;
}

int multi_bench_priority(const bench::BenchCase& row) { return row.tag.rfind("decode", 0) == 0 ? 1 : 0; }

std::vector<ScheduleStrategy> parse_strategies(const std::string& text) {
  std::vector<ScheduleStrategy> out;
  for (const std::string& name : split_commas(text)) {
    const auto s = parse_schedule_strategy(name);
    if (!s) throw InvalidArgument("--schedule", name, "expected load, rr or priority (or a comma list)");
    out.push_back(*s);
  }
  if (out.empty()) throw InvalidArgument("--schedule", text, "expected load, rr or priority");
  return out;
}

std::vector<int64_t> parse_memory_limits(const std::string& text, int gpus) {
  const std::vector<std::string> parts = split_commas(text);
  std::vector<int64_t> limits;
  for (const std::string& part : parts) {
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const std::string unit = part.substr(used);
    static const std::map<std::string, double> units = {
        {"", 1},     {"B", 1},     {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"KB", 1e3}, {"MB", 1e6},  {"GB", 1e9},     {"TiB", 1099511627776.0}, {"TB", 1e12}};
    const auto it = units.find(unit);
    if (used == 0 || it == units.end() || !std::isfinite(value) || value < 0)
      throw InvalidArgument("--memory-limit", part,
                            "a size per GPU: a number of bytes >= 0 with B, KiB, MiB, GiB, TiB, "
                            "KB, MB, GB or TB (40GiB,20GiB: GPU 0 and GPU 1; one size: every GPU)");
    limits.push_back(int64_t(value * it->second));
  }
  if (parts.size() == 1 && gpus > 1) limits.assign(std::size_t(gpus), limits.front());
  if (limits.size() != std::size_t(gpus))
    throw InvalidArgument("--memory-limit", text,
                          fmt::format("one size, or one per GPU ({} given for {} GPUs)", parts.size(), gpus));
  return limits;
}

std::shared_ptr<MultiBenchOptions> add_multi_bench_options(CLI::App& bench) {
  auto o = std::make_shared<MultiBenchOptions>();
  bench.add_option("--gpus", o->gpus,
                   "schedule the suite's GEMMs over this many GPUs (GPUs 0..N-1; without a GPU: "
                   "each strategy's predicted assignment); --suite takes a comma list of files");
  bench.add_option("--schedule", o->schedule,
                   "with --gpus: load (longest predicted first, to the GPU that frees first; "
                   "migrates), rr (round-robin, never migrates), priority (decode rows first; "
                   "migrates), or a comma list run in turn")
      ->capture_default_str();
  bench.add_option("--repeat", o->repeat, "with --gpus: the suites' rows this many times");
  bench.add_option("--count", o->count,
                   "with --gpus: exactly this many GEMMs, cycling through the suites' rows");
  bench.add_flag("--no-migrate", o->no_migrate,
                 "with --gpus: never move queued GEMMs off a GPU that falls behind");
  bench.add_option("--split", o->split,
                   "with --gpus and --m/--n/--k: split the GEMM this way (none, m, n, k; default: "
                   "the planner's choice)");
  bench.add_option("--inputs", o->inputs,
                   "with --gpus: replicated (A, B on every GPU) or root (GPU 0 only); with "
                   "--suite also host (pinned host memory): operands not on the GPU that runs a "
                   "GEMM are copied there and D copied back")
      ->capture_default_str();
  bench.add_option("--memory-limit", o->memory_limit,
                   "with --gpus and --suite: what the scheduler may allocate per GPU (40GiB,20GiB: "
                   "GPU 0, GPU 1; one size: every GPU; default: each GPU's free memory, or no "
                   "limit on a preset); a list that cannot fit is refused before anything runs");
  bench.add_option("--output", o->output,
                   "with --gpus and --m/--n/--k: root (D gathered on GPU 0) or sharded")
      ->capture_default_str();
  bench.add_option("--tp", o->tp,
                   "with --gpus and --m/--n/--k: a tensor-parallel pattern on each GPU's shards "
                   "(all-gather, reduce-scatter, all-reduce, gather: D on GPU 0), timed against "
                   "one GPU and checked rank by rank against the one-GPU result");
  bench.add_option("--transport", o->transport, "with --tp: copy-engine or nccl");
  bench.add_option("--bands", o->bands, "with --tp: row bands per chunk (0: planned)");
  bench.add_option("--rounds", o->rounds, "with --tp all-reduce: rounds of the ring (0: planned)");
  bench.add_option("--merge-c-steps", o->merge_c_steps,
                   "with --tp: the ring's steps that add partials (reduce-scatter, all-reduce) as one "
                   "launch of their bands, each band's partial waited for inside the kernel (1), "
                   "or a launch per band (0); -1: planned");
  bench.add_option("--tail-rows", o->tail_rows,
                   "with --tp: rows of a thin last band, a multiple of 128 (0: even bands; "
                   "-1: planned)");
  bench.add_flag("--process-per-rank", o->process_per_rank,
                 "with --tp: the plan torchrun's processes run (all-reduce's and gather's "
                 "finished bands staged through the receivers' workspaces, then copied into "
                 "their D), run here in one process: what writing straight into the receivers' "
                 "D saves. Its prediction keeps the 30 us a process takes to its first GEMM");
  return o;
}

bool wants_multi_bench(const CLI::App& bench) { return any_option_given(bench, kMultiOptionNames); }

// --gpus's range is check_gpus_option's (every command's callback); here only that it is given.
void run_multi_bench(const CLI::App& bench, const MultiBenchOptions& o) {
  if (bench.get_option("--gpus")->count() == 0)
    throw InvalidArgument("--gpus", "missing",
                          "--schedule, --repeat, --count, --no-migrate, --split, --inputs, "
                          "--output, --tp, --transport, --bands, --rounds, --tail-rows, "
                          "--merge-c-steps, --process-per-rank and --memory-limit go with --gpus N");
  if (!option_text(bench, "--m").empty() || !option_text(bench, "--n").empty() ||
      !option_text(bench, "--k").empty()) {
    if (!o.tp.empty()) return run_tp_bench(bench, o);
    return run_split_bench(bench, o);
  }
  std::vector<std::string> taken = {"--gpus", "--schedule", "--repeat", "--count", "--no-migrate",
                                    "--suite", "--dtype", "--device", "--json", "--seed",
                                    "--inputs", "--memory-limit", "--plot"};
  refuse_options_except(bench, taken, "--gpus");
  const std::vector<ScheduleStrategy> strategies = parse_strategies(o.schedule);
  parse_placement(o.inputs);
  const std::vector<int64_t> limits =
      o.memory_limit.empty() ? std::vector<int64_t>{} : parse_memory_limits(o.memory_limit, o.gpus);
  const std::string plot = option_text(bench, "--plot");
  if (!plot.empty()) check_writable("--plot", plot);
  std::vector<GemmProblem> distinct;
  std::vector<Item> items = make_items(bench, o, &distinct);
  const bool json = bench.get_option("--json")->count() > 0;
  const uint64_t seed = std::stoull(option_text(bench, "--seed", "2026"));
  const std::string device_spec = option_text(bench, "--device");

  const GpuProfile profile = profile_gpus();
  const bool preset_asked =
      !device_spec.empty() && !std::all_of(device_spec.begin(), device_spec.end(),
                                           [](unsigned char ch) { return std::isdigit(ch); });
  if (profile.gpus.empty() || preset_asked) {
    const std::string preset = preset_asked ? device_spec : kFallbackPreset;
    const GpuInfo device = device_preset(preset);
    const std::string note =
        profile.gpus.empty()
            ? fmt::format("no GPU: {}; showing each strategy's predicted assignment on {} instead "
                          "of measuring",
                          profile.unavailable_reason, preset)
            : fmt::format("{} is a device preset: showing each strategy's predicted assignment "
                          "instead of measuring",
                          preset);
    if (!plot.empty())
      throw InvalidArgument("--plot", plot, "draws a measured run's timeline: it needs the GPUs");
    predict(items, distinct, device);
    return show_plans(items, strategies, o, device, limits, note, json);
  }
  if (int(profile.gpus.size()) < o.gpus)
    throw InvalidArgument("--gpus", std::to_string(o.gpus),
                          fmt::format("this machine has {} CUDA device(s)", profile.gpus.size()));
  if (!device_spec.empty() && device_spec != "0")
    throw InvalidArgument("--device", device_spec,
                          "with --gpus N the GEMMs run on GPUs 0..N-1; give no --device (or a preset)");
  predict(items, distinct, profile.gpus.front());
  measure(items, distinct, strategies, o, limits, seed, json, plot);
}

}  // namespace autogemm::cli
