// `autogemm bench --gpus N`: a suite's GEMMs scheduled over N GPUs by each strategy asked for;
// per GPU its busy time and span, the makespan against the ideal (total predicted work / N),
// and every result checked against the single-GPU result (cmd_bench_multi.hpp).
#include "cli/cmd_bench_multi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <numeric>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "bench/tensors.hpp"
#include "cli/cli_common.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/result_match.hpp"

namespace autogemm::cli {

namespace {

const std::vector<std::string> kMultiOptionNames = {"--gpus",       "--schedule", "--repeat",
                                                    "--count",      "--no-migrate", "--split",
                                                    "--inputs",     "--output",
                                                    "--tp",         "--transport", "--bands",
                                                    "--panels"};

struct Item {
  bench::BenchCase row;
  GemmProblem problem;
  std::size_t distinct = 0;   // index of its problem among the distinct ones
  int priority = 0;
  double predicted_us = 0;
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

// Predicted time of each distinct problem on the device.
void predict(std::vector<Item>& items, const std::vector<GemmProblem>& distinct, const GpuInfo& device) {
  std::vector<double> times;
  for (const GemmProblem& p : distinct) times.push_back(plan_gemm(p, device).best().prediction.time_us);
  for (Item& item : items) item.predicted_us = times[item.distinct];
}

std::vector<double> predicted_list(const std::vector<Item>& items) {
  std::vector<double> t;
  for (const Item& item : items) t.push_back(item.predicted_us);
  return t;
}

std::vector<int> priority_list(const std::vector<Item>& items) {
  std::vector<int> p;
  for (const Item& item : items) p.push_back(item.priority);
  return p;
}

// ---- without a GPU: each strategy's predicted assignment -------------------------------------

void show_plans(const std::vector<Item>& items, const std::vector<ScheduleStrategy>& strategies,
                int gpus, const GpuInfo& device, const std::string& note, bool json) {
  nlohmann::json out = {{"note", note}, {"gpus", gpus}, {"device", device.preset}, {"gemms", items.size()},
                        {"measured", false}, {"strategies", nlohmann::json::array()}};
  if (!json) fmt::print("{}\n{} GEMMs over {} x {}\n", note, items.size(), gpus, device.preset);
  for (ScheduleStrategy s : strategies) {
    const GemmAssignment a = assign_gemms(predicted_list(items), priority_list(items), gpus, s);
    nlohmann::json per_gpu = nlohmann::json::array();
    if (!json) fmt::print("\n{}: predicted makespan {:.1f} us, ideal {:.1f} us (ratio {:.3f}), lower "
                          "bound {:.1f} us (ratio {:.3f})\n",
                          to_string(s), a.predicted_makespan_us, a.ideal_us,
                          a.predicted_makespan_us / a.ideal_us, a.lower_bound_us,
                          a.predicted_makespan_us / a.lower_bound_us);
    for (int g = 0; g < gpus; ++g) {
      per_gpu.push_back({{"gpu", g}, {"gemms", a.queues[g].size()}, {"predicted_busy_us", a.predicted_busy_us[g]}});
      if (!json) fmt::print("  GPU {}: {} GEMMs, predicted busy {:.1f} us\n", g, a.queues[g].size(),
                            a.predicted_busy_us[g]);
    }
    out["strategies"].push_back({{"strategy", std::string(to_string(s))},
                                 {"predicted_makespan_us", a.predicted_makespan_us},
                                 {"ideal_us", a.ideal_us},
                                 {"lower_bound_us", a.lower_bound_us},
                                 {"per_gpu", per_gpu}});
  }
  if (json) std::cout << out.dump(2) << "\n";
}

// ---- on the GPUs ------------------------------------------------------------------------------

// The distinct problems' inputs on every GPU (the same values: the same seed), and one D per
// GEMM per GPU, since any GEMM may run (or be migrated) anywhere.
struct DeviceData {
  std::vector<std::vector<bench::GemmInputs>> inputs;   // [gpu][distinct]
  std::vector<std::vector<bench::DeviceBuffer>> d;      // [gpu][item]
};

DeviceData allocate(const std::vector<Item>& items, const std::vector<GemmProblem>& distinct,
                    int gpus, uint64_t seed) {
  DeviceData data;
  data.inputs.resize(std::size_t(gpus));
  data.d.resize(std::size_t(gpus));
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench --gpus)");
    for (std::size_t i = 0; i < distinct.size(); ++i)
      data.inputs[g].push_back(bench::make_gemm_inputs(distinct[i], seed + 10 * i));
    for (const Item& item : items)
      data.d[g].emplace_back(bench::operand_elements(item.problem, 'D') * dtype_bytes(item.problem.d_type));
  }
  return data;
}

std::size_t d_bytes(const GemmProblem& p) {
  return bench::operand_elements(p, 'D') * std::size_t(dtype_bytes(p.d_type));
}

// Each distinct problem once on every GPU (loads its kernel there; the first compiles it), and
// GPU 0's result kept as the single-GPU reference.
std::vector<std::vector<unsigned char>> warm_up(const std::vector<GemmProblem>& distinct,
                                                DeviceData& data, int gpus) {
  std::vector<std::vector<unsigned char>> reference;
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench --gpus)");
    GemmOptions options;
    options.device = g;
    for (std::size_t i = 0; i < distinct.size(); ++i)
      gemm(distinct[i], data.inputs[g][i].operands(), nullptr, options);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(bench --gpus warm-up)");
  }
  for (std::size_t i = 0; i < distinct.size(); ++i)
    reference.push_back(multi::download_bytes(data.inputs[0][i].d.get(), d_bytes(distinct[i])));
  return reference;
}

struct Checked {
  std::size_t bitwise = 0, within = 0, failed = 0;
  double worst_diff = 0;
  std::string first_failure;
};

Checked check_results(const std::vector<Item>& items, const ScheduleResult& r, const DeviceData& data,
                      const std::vector<std::vector<unsigned char>>& reference) {
  Checked c;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const int g = r.runs[i].gpu;
    const multi::ResultMatch m = multi::match_results(
        multi::download_bytes(data.d[g][i].get(), d_bytes(items[i].problem)),
        reference[items[i].distinct], items[i].problem.d_type);
    c.worst_diff = std::max(c.worst_diff, m.diff);
    if (m.bitwise) ++c.bitwise;
    else if (m.ok()) ++c.within;
    else {
      ++c.failed;
      if (c.first_failure.empty())
        c.first_failure = fmt::format("GEMM {} ({}x{}x{}) on GPU {}: diff {:.3g}{}", i, items[i].row.m,
                                      items[i].row.n, items[i].row.k, g, m.diff,
                                      m.finite ? "" : ", unwritten (NaN) elements");
    }
  }
  return c;
}

nlohmann::json report(ScheduleStrategy s, const ScheduleResult& r, const Checked& c, int gpus, bool json) {
  const double busy_total = std::accumulate(r.busy_us.begin(), r.busy_us.end(), 0.0);
  const double ideal_measured = busy_total / gpus;
  nlohmann::json per_gpu = nlohmann::json::array();
  for (int g = 0; g < gpus; ++g) {
    int runs = 0, migrated_in = 0;
    for (const ScheduledRun& run : r.runs)
      if (run.gpu == g) {
        ++runs;
        migrated_in += run.migrated ? 1 : 0;
      }
    per_gpu.push_back({{"gpu", g}, {"gemms", runs}, {"migrated_in", migrated_in},
                       {"predicted_busy_us", r.assignment.predicted_busy_us[g]},
                       {"busy_us", r.busy_us[g]}, {"span_us", r.span_us[g]}});
  }
  if (!json) {
    fmt::print("\n{}: makespan {:.1f} us; ideal {:.1f} us predicted (ratio {:.3f}), {:.1f} us measured "
               "(ratio {:.3f}); lower bound {:.1f} us predicted (the longest GEMM when it exceeds the "
               "ideal); {} migration{}\n",
               to_string(s), r.makespan_us, r.assignment.ideal_us, r.makespan_us / r.assignment.ideal_us,
               ideal_measured, r.makespan_us / ideal_measured, r.assignment.lower_bound_us,
               r.migrations, r.migrations == 1 ? "" : "s");
    fmt::print("  {:>4} {:>6} {:>9} {:>15} {:>12} {:>12}\n", "GPU", "GEMMs", "migrated", "predicted_busy",
               "busy_us", "span_us");
    for (const auto& row : per_gpu)
      fmt::print("  {:>4} {:>6} {:>9} {:>15.1f} {:>12.1f} {:>12.1f}\n", row["gpu"].get<int>(),
                 row["gemms"].get<int>(), row["migrated_in"].get<int>(),
                 row["predicted_busy_us"].get<double>(), row["busy_us"].get<double>(),
                 row["span_us"].get<double>());
    fmt::print("  results against the single-GPU result (GPU 0): {} bitwise equal, {} within diff 1e-5, "
               "{} FAILED{}\n",
               c.bitwise, c.within, c.failed,
               c.first_failure.empty() ? std::string() : fmt::format(" (first: {})", c.first_failure));
  }
  return {{"strategy", std::string(to_string(s))},
          {"makespan_us", r.makespan_us},
          {"ideal_predicted_us", r.assignment.ideal_us},
          {"ideal_measured_us", ideal_measured},
          {"ratio_to_ideal_predicted", r.makespan_us / r.assignment.ideal_us},
          {"ratio_to_ideal_measured", r.makespan_us / ideal_measured},
          {"lower_bound_predicted_us", r.assignment.lower_bound_us},
          {"migrations", r.migrations},
          {"per_gpu", per_gpu},
          {"check", {{"bitwise", c.bitwise}, {"within_diff", c.within}, {"failed", c.failed},
                     {"worst_diff", c.worst_diff}, {"first_failure", c.first_failure}}}};
}

void measure(const std::vector<Item>& items, const std::vector<GemmProblem>& distinct,
             const std::vector<ScheduleStrategy>& strategies, const MultiBenchOptions& o,
             uint64_t seed, bool json) {
  DeviceData data = allocate(items, distinct, o.gpus, seed);
  const auto reference = warm_up(distinct, data, o.gpus);
  nlohmann::json out = {{"gpus", o.gpus}, {"gemms", items.size()}, {"measured", true},
                        {"strategies", nlohmann::json::array()}};
  if (!json) fmt::print("{} GEMMs ({} distinct) over {} GPUs; every result checked against GPU 0's "
                        "single-GPU result\n", items.size(), distinct.size(), o.gpus);
  std::size_t failed = 0;
  std::map<ScheduleStrategy, double> makespans;
  for (ScheduleStrategy s : strategies) {
    std::vector<ScheduledGemm> gemms;
    for (std::size_t i = 0; i < items.size(); ++i) {
      ScheduledGemm g;
      g.problem = items[i].problem;
      g.priority = items[i].priority;
      g.predicted_us = items[i].predicted_us;
      for (int dev = 0; dev < o.gpus; ++dev) {
        GemmOperands ops = data.inputs[dev][items[i].distinct].operands();
        ops.d = data.d[dev][i].get();
        cuda_check(cudaSetDevice(dev), "cudaSetDevice(bench --gpus)");
        bench::fill_poison(ops.d, bench::operand_elements(g.problem, 'D'), g.problem.d_type);
        g.operands.push_back(ops);
      }
      gemms.push_back(std::move(g));
    }
    ScheduleOptions options;
    options.strategy = s;
    for (int dev = 0; dev < o.gpus; ++dev) options.devices.push_back(dev);
    if (o.no_migrate) options.migrate = false;
    const ScheduleResult r = run_gemm_schedule(gemms, options);
    const Checked c = check_results(items, r, data, reference);
    failed += c.failed;
    makespans[s] = r.makespan_us;
    out["strategies"].push_back(report(s, r, c, o.gpus, json));
  }
  if (makespans.count(ScheduleStrategy::load_balanced) && makespans.count(ScheduleStrategy::round_robin)) {
    const double ratio = makespans[ScheduleStrategy::round_robin] / makespans[ScheduleStrategy::load_balanced];
    out["rr_over_load"] = ratio;
    if (!json) fmt::print("\nload-balanced against round-robin: {:.3f}x ({})\n", ratio,
                          ratio > 1 ? "load-balanced finishes first" : "round-robin finishes first");
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
                   "with --gpus and --m/--n/--k: replicated (A, B on every GPU) or root (GPU 0 only)")
      ->capture_default_str();
  bench.add_option("--output", o->output,
                   "with --gpus and --m/--n/--k: root (D gathered on GPU 0) or sharded")
      ->capture_default_str();
  bench.add_option("--tp", o->tp,
                   "with --gpus and --m/--n/--k: a tensor-parallel pattern on each GPU's shards "
                   "(all-gather, reduce-scatter, all-reduce; gather: the split), timed against "
                   "one GPU and checked rank by rank against the one-GPU result");
  bench.add_option("--transport", o->transport, "with --tp: copy-engine or nccl");
  bench.add_option("--bands", o->bands, "with --tp: row bands per chunk (0: planned)");
  bench.add_option("--panels", o->panels, "with --tp: column panels of N (0: planned)");
  return o;
}

bool wants_multi_bench(const CLI::App& bench) { return any_option_given(bench, kMultiOptionNames); }

void run_multi_bench(const CLI::App& bench, const MultiBenchOptions& o) {
  if (!option_text(bench, "--m").empty() || !option_text(bench, "--n").empty() ||
      !option_text(bench, "--k").empty()) {
    if (!o.tp.empty() && o.tp != "gather") return run_tp_bench(bench, o);
    return run_split_bench(bench, o);
  }
  std::vector<std::string> taken = {"--gpus", "--schedule", "--repeat", "--count", "--no-migrate",
                                    "--suite", "--dtype", "--device", "--json", "--seed"};
  refuse_options_except(bench, taken, "--gpus");
  if (bench.get_option("--gpus")->count() == 0)
    throw InvalidArgument("--gpus", "missing",
                          "--schedule, --repeat, --count, --no-migrate, --split, --inputs and "
                          "--output go with --gpus N");
  if (o.gpus < 1) throw InvalidArgument("--gpus", std::to_string(o.gpus), "must be >= 1");
  const std::vector<ScheduleStrategy> strategies = parse_strategies(o.schedule);
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
    predict(items, distinct, device);
    return show_plans(items, strategies, o.gpus, device, note, json);
  }
  if (int(profile.gpus.size()) < o.gpus)
    throw InvalidArgument("--gpus", std::to_string(o.gpus),
                          fmt::format("this machine has {} CUDA device(s)", profile.gpus.size()));
  if (!device_spec.empty() && device_spec != "0")
    throw InvalidArgument("--device", device_spec,
                          "with --gpus N the GEMMs run on GPUs 0..N-1; give no --device (or a preset)");
  predict(items, distinct, profile.gpus.front());
  measure(items, distinct, strategies, o, seed, json);
}

}  // namespace autogemm::cli
