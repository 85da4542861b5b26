// `autogemm plan --gpus G --tp PATTERN`: a tensor-parallel GEMM on G ranks' shards, the launches
// every rank runs, the transport and the predicted time against one GPU (cmd_plan_tp.hpp).
#include "cli/cmd_plan_tp.hpp"

#include <fmt/format.h>

#include <iostream>

#include "autogemm/errors.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_plan_split.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli/topology_report.hpp"

namespace autogemm::cli {

TpProblem tp_problem(const GemmProblem& p, const std::string& pattern, int gpus) {
  const std::optional<TpPattern> parsed = parse_tp_pattern(pattern);
  if (!parsed)
    throw InvalidArgument("--tp", pattern,
                          "expected all-gather, reduce-scatter, all-reduce, or gather (each "
                          "rank's rows of D gathered on rank 0)");
  if (p.layout != Layout::nt)
    throw InvalidArgument("--layout", std::string(to_string(p.layout)),
                          "tensor-parallel shards are stored as nn.Linear keeps them: A [M, K] "
                          "and the weight [N, K], layout nt");
  if (p.lda || p.ldb || p.ldd)
    throw InvalidArgument(p.lda ? "--lda" : p.ldb ? "--ldb" : "--ldd",
                          std::to_string(p.lda ? p.lda : p.ldb ? p.ldb : p.ldd),
                          "--tp plans packed shards (the C++ and Python calls take any leading "
                          "dimension)");
  TpProblem t;
  t.pattern = *parsed;
  t.world = gpus;
  t.m = p.m, t.n = p.n, t.k = p.k;
  t.a_type = p.a_type, t.b_type = p.b_type, t.d_type = p.d_type;
  t.scaling = p.scaling;
  try {
    validate(t);
  } catch (const InvalidArgument& e) {  // the command's own option names
    const std::string& a = e.argument();
    if (a == "m" || a == "n" || a == "k") throw InvalidArgument("--" + a, e.value(), e.rule());
    if (a == "world") throw InvalidArgument("--gpus", e.value(), e.rule());
    throw;
  }
  return t;
}

TpOptions tp_options(const std::string& transport, int bands, int rounds, int64_t tail_rows,
                     bool one_process, int merge_c_steps) {
  TpOptions o;
  if (!transport.empty()) {
    o.transport = parse_tp_transport(transport);
    if (!o.transport)
      throw InvalidArgument("--transport", transport,
                            "expected copy-engine (peer copies beside the GEMMs) or nccl "
                            "(collectives, any ranks)");
  }
  o.bands = bands;  // their rules are plan_tp's (plan_tp_for_cli names the options)
  o.rounds = rounds;
  o.tail_rows = tail_rows;
  o.merge_c_steps = merge_c_steps;
  o.one_process = one_process;
  return o;
}

TpPlan plan_tp_for_cli(const TpProblem& problem, const GpuInfo& device, const Topology& topology,
                       const TpOptions& options) {
  try {
    return plan_tp(problem, device, topology, options);
  } catch (const InvalidArgument& e) {  // the options as the command line names them
    const std::string& a = e.argument();
    if (a == "rounds" || a == "bands" || a == "transport")
      throw InvalidArgument("--" + a, e.value(), e.rule());
    if (a == "tail_rows") throw InvalidArgument("--tail-rows", e.value(), e.rule());
    if (a == "merge_c_steps") throw InvalidArgument("--merge-c-steps", e.value(), e.rule());
    throw;
  }
}

void print_tp_plan(const TpPlan& plan, const std::string& topology_note) {
  fmt::print("device     {} x {} ({}), each launch predicted by the one-GPU planner\n",
             plan.problem.world, plan.device.preset.empty() ? fmt::format("GPU {}", plan.device.ordinal)
                                                            : plan.device.preset,
             plan.device.name);
  fmt::print("links      {}", format_topology(plan.topology));
  if (!topology_note.empty()) fmt::print("           ({})\n", topology_note);
  fmt::print("{}", plan.describe());
}

nlohmann::json tp_plan_json(const TpPlan& plan) {
  const TpProblem& p = plan.problem;
  const TpShardShapes s = tp_shard_shapes(p, 0);
  nlohmann::json steps = nlohmann::json::array();
  for (const TpStep& step : plan.steps)
    steps.push_back({{"step", step.step},
                     {"band", step.band},
                     {"bands", step.bands},
                     {"rows", step.rows},
                     {"reads_c", step.reads_c},
                     {"config", step.config.describe()},
                     {"predicted_us", step.predicted_us}});
  return {{"pattern", std::string(to_string(p.pattern))},
          {"gpus", p.world},
          {"problem", {{"m", p.m}, {"n", p.n}, {"k", p.k}, {"a_type", to_string(p.a_type)},
                       {"d_type", to_string(p.d_type)}, {"scaling", to_string(p.scaling)}}},
          {"shards", {{"a", {s.a_rows, s.a_cols}}, {"b", {s.b_rows, s.b_cols}},
                      {"d", {s.d_rows, s.d_cols}}}},
          {"device", plan.device.preset.empty() ? plan.device.name : plan.device.preset},
          {"topology", topology_json(plan.topology)},
          {"transport", std::string(to_string(plan.transport))},
          {"bands", plan.bands},
          {"band_rows", plan.band_rows},
          {"rounds", plan.rounds},
          {"tail_rows", plan.tail_rows},
          {"d_direct", plan.d_direct},
          {"link_gbps", plan.link_gbps},
          {"single_gpu_us", plan.single_gpu_us},
          {"compute_us", plan.compute_us},
          {"transfer_us", plan.transfer_us},
          {"exposed_us", plan.exposed_us},
          {"predicted_us", plan.total_us},
          {"speedup", plan.speedup()},
          {"hash", fmt::format("{:016x}", plan.hash())},
          {"explanation", plan.explanation},
          {"steps", steps}};
}

void run_tp_plan(const CLI::App& plan, const SplitPlanCliOptions& options,
                 const std::vector<GemmProblem>& problems) {
  refuse_options_except(plan,
                        {"--m", "--n", "--k", "--dtype", "--device", "--json", "--gpus", "--link",
                         "--tp", "--transport", "--bands", "--rounds", "--tail-rows",
                         "--merge-c-steps", "--process-per-rank"},
                        "--tp");
  const GpuInfo device = resolve_cli_device(option_text(plan, "--device"));
  std::string note;
  const Topology topology = split_topology(options.link, options.gpus, device, &note);
  const TpOptions tp = tp_options(options.transport, options.bands, options.rounds,
                                  options.tail_rows, !options.process_per_rank,
                                  options.merge_c_steps);
  std::vector<TpPlan> plans;
  for (const GemmProblem& problem : problems)
    plans.push_back(plan_tp_for_cli(tp_problem(problem, options.tp, options.gpus), device, topology, tp));
  if (plan.get_option("--json")->count() > 0) {
    nlohmann::json out = nlohmann::json::array();
    for (const TpPlan& p : plans) out.push_back(tp_plan_json(p));
    if (!note.empty()) fmt::print(stderr, "autogemm: note: links: {}\n", note);
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (i > 0) fmt::print("\n");
    print_tp_plan(plans[i], note);
  }
}

}  // namespace autogemm::cli
