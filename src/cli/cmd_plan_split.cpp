// `autogemm plan --gpus G`: the split of one GEMM over G GPUs, its predicted time and speedup
// over one GPU, and every candidate with its reason (cmd_plan_split.hpp).
#include "cli/cmd_plan_split.hpp"

#include <fmt/format.h>

#include <iostream>

#include "autogemm/errors.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_plan_tp.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli/topology_report.hpp"

namespace autogemm::cli {

namespace {

InputPlacement parse_inputs(const std::string& text) {
  if (text == "replicated") return InputPlacement::replicated;
  if (text == "root") return InputPlacement::root;
  throw InvalidArgument("--inputs", text,
                        "expected replicated (A and B already on every GPU) or root (only on GPU "
                        "0: each GPU's slices are sent first)");
}

OutputPlacement parse_output(const std::string& text) {
  if (text == "root") return OutputPlacement::root;
  if (text == "sharded") return OutputPlacement::sharded;
  throw InvalidArgument("--output", text,
                        "expected root (all of D on GPU 0) or sharded (each GPU keeps its part)");
}

std::string kind_text(SplitKind kind) {
  switch (kind) {
    case SplitKind::none: return "one GPU";
    case SplitKind::m: return "split M";
    case SplitKind::n: return "split N";
    case SplitKind::k: return "split K";
  }
  return "?";
}

std::string placement_text(const SplitOptions& o) {
  return fmt::format(
      "inputs {} (--inputs {}); D {} (--output {})",
      o.inputs == InputPlacement::replicated ? "replicated on every GPU already"
                                             : "only on GPU 0: slices sent first",
      o.inputs == InputPlacement::replicated ? "root: only on GPU 0" : "replicated: on every GPU",
      o.output == OutputPlacement::root ? "gathered on GPU 0" : "left sharded, each GPU its part",
      o.output == OutputPlacement::root ? "sharded: each GPU keeps its part" : "root: all on GPU 0");
}

}  // namespace

void print_split_plan(const SplitPlan& plan, const std::string& topology_note) {
  const GemmProblem& p = plan.problem;
  const GpuInfo& d = plan.device;
  fmt::print("problem    M={} N={} K={} {} -> {}, layout {}\n", p.m, p.n, p.k, dtype_name(p),
             to_string(p.d_type), to_string(p.layout));
  fmt::print("device     {} x {} ({}), each GPU's GEMMs predicted by the one-GPU planner\n",
             plan.gpus(), d.preset.empty() ? fmt::format("GPU {}", d.ordinal) : d.preset, d.name);
  fmt::print("links      {}", format_topology(plan.topology));
  if (!topology_note.empty()) fmt::print("           ({})\n", topology_note);
  fmt::print("operands   {}\n", placement_text(plan.options));
  fmt::print("one GPU    {:.1f} us\n", plan.single_gpu_us);
  fmt::print("chosen     {}: {:.1f} us predicted = {:.2f}x one GPU\n", kind_text(plan.chosen.kind),
             plan.chosen.total_us, plan.speedup());
  fmt::print("           {}\n", plan.chosen.explanation);
  fmt::print("\ncandidates (fastest first; times in us, speedup over one GPU)\n");
  fmt::print("  {:<9} {:>10} {:>7} {:>10} {:>9} {:>9} {:>9} {:>6}\n", "kind", "total", "speedup",
             "GEMMs", "inputs", "output", "exposed", "chunks");
  for (const SplitCandidate& c : plan.candidates) {
    if (!c.rejected.empty()) {
      fmt::print("  {:<9} rejected: {}\n", kind_text(c.kind), c.rejected);
      continue;
    }
    fmt::print("  {:<9} {:>10.1f} {:>6.2f}x {:>10.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>6}\n",
               kind_text(c.kind), c.total_us, plan.single_gpu_us / c.total_us, c.compute_us,
               c.input_us, c.output_us, c.exposed_comm_us, c.chunks);
    fmt::print("            {}\n", c.explanation);
  }
}

namespace {

nlohmann::json piece_json(const SplitPiece& piece) {
  nlohmann::json j = {{"rows", {piece.row_begin, piece.row_end}},
                      {"cols", {piece.col_begin, piece.col_end}},
                      {"k", {piece.k_begin, piece.k_end}},
                      {"predicted_us", piece.predicted_us}};
  if (piece.config) j["config"] = piece.config->describe();
  return j;
}

nlohmann::json candidate_json(const SplitCandidate& c, double single_gpu_us) {
  nlohmann::json j = {{"kind", std::string(to_string(c.kind))}, {"rejected", c.rejected}};
  if (!c.rejected.empty()) return j;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& pieces : c.pieces) {
    nlohmann::json list = nlohmann::json::array();
    for (const SplitPiece& piece : pieces) list.push_back(piece_json(piece));
    ranks.push_back(list);
  }
  j.update({{"chunks", c.chunks},
            {"partial_type", std::string(to_string(c.partial_type))},
            {"compute_us", c.compute_us},
            {"input_us", c.input_us},
            {"output_us", c.output_us},
            {"exposed_comm_us", c.exposed_comm_us},
            {"total_us", c.total_us},
            {"speedup", single_gpu_us / c.total_us},
            {"explanation", c.explanation},
            {"pieces", ranks}});
  return j;
}

}  // namespace

nlohmann::json split_plan_json(const SplitPlan& plan) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const SplitCandidate& c : plan.candidates)
    candidates.push_back(candidate_json(c, plan.single_gpu_us));
  return {{"problem", problem_json(plan.problem)},
          {"gpus", plan.gpus()},
          {"device", plan.device.preset.empty() ? plan.device.name : plan.device.preset},
          {"topology", topology_json(plan.topology)},
          {"inputs", std::string(to_string(plan.options.inputs))},
          {"output", std::string(to_string(plan.options.output))},
          {"single_gpu_us", plan.single_gpu_us},
          {"predicted_us", plan.chosen.total_us},
          {"speedup", plan.speedup()},
          {"chosen", candidate_json(plan.chosen, plan.single_gpu_us)},
          {"candidates", candidates}};
}

SplitOptions parse_split_options(const std::string& inputs, const std::string& output,
                                 const std::string& split, int max_chunks) {
  SplitOptions s;
  s.inputs = parse_inputs(inputs);
  s.output = parse_output(output);
  if (!split.empty()) {
    s.kind = parse_split_kind(split);
    if (!s.kind) throw InvalidArgument("--split", split, "expected none, m, n or k");
  }
  s.max_chunks = max_chunks;
  return s;
}

std::shared_ptr<SplitPlanCliOptions> add_split_plan_options(CLI::App& plan) {
  auto o = std::make_shared<SplitPlanCliOptions>();
  plan.add_option("--gpus", o->gpus,
                  "split the GEMM over this many GPUs: the split (M, N or K), its communication "
                  "and predicted speedup (presets work without a GPU)");
  plan.add_option("--link", o->link,
                  "with --gpus: the links between the GPUs, a preset (nvlink, nvlink3, pcie, "
                  "pcie4); default: measured when that many GPUs are present, else the "
                  "device's (nvlink for h100-sxm and h200)");
  plan.add_option("--inputs", o->inputs,
                  "with --gpus: where A and B are: replicated (every GPU) or root (GPU 0 only)")
      ->capture_default_str();
  plan.add_option("--output", o->output,
                  "with --gpus: where D goes: root (gathered on GPU 0) or sharded (each GPU its "
                  "part)")
      ->capture_default_str();
  plan.add_option("--split", o->split, "with --gpus: use this split (none, m, n, k)");
  plan.add_option("--max-chunks", o->max_chunks,
                  "with --gpus: most pieces per GPU that overlap communication (1, 2, 4, 8)")
      ->capture_default_str();
  plan.add_option("--tp", o->tp,
                  "with --gpus: a tensor-parallel pattern on each rank's shards: all-gather (A "
                  "[M/G, K], W [N/G, K] -> D [M, N/G]), reduce-scatter (A [M, K/G], W [N, K/G] "
                  "-> D [M/G, N]), all-reduce (-> D [M, N] on every rank), or gather (A "
                  "[M/G, K], W [N, K] -> D [M, N] on GPU 0)");
  plan.add_option("--transport", o->transport,
                  "with --tp: copy-engine (peer copies beside the GEMMs) or nccl; default: "
                  "copy engines where every pair of GPUs has peer access");
  plan.add_option("--bands", o->bands, "with --tp: row bands per chunk (1..8; 0: planned)");
  plan.add_option("--tail-rows", o->tail_rows,
                  "with --tp: rows of a thin last band, a multiple of 128 (0: even bands; -1: "
                  "planned)");
  plan.add_option("--merge-c-steps", o->merge_c_steps,
                  "with --tp: the ring's steps that add partials (reduce-scatter, all-reduce) as one "
                  "launch of their bands, each band's partial waited for inside the kernel (1), "
                  "or a launch per band (0); -1: planned");
  plan.add_option("--rounds", o->rounds,
                  "with --tp all-reduce: rounds of the ring, a divisor of the bands (0: planned)");
  plan.add_flag("--process-per-rank", o->process_per_rank,
                "with --tp: plan as torchrun runs it, a process per rank, where the others' D is "
                "not mapped: all-reduce's and gather's finished bands staged through the "
                "receivers' workspaces (default: as `bench --tp` runs it, one process writing "
                "them straight into the receivers' D)");
  return o;
}

namespace {
const std::vector<std::string> kSplitOptionNames = {"--gpus", "--link", "--inputs", "--output",
                                                    "--split", "--max-chunks", "--tp",
                                                    "--transport", "--bands", "--rounds", "--tail-rows",
                                                    "--merge-c-steps", "--process-per-rank"};
}  // namespace

bool wants_split_plan(const CLI::App& plan) { return any_option_given(plan, kSplitOptionNames); }

Topology split_topology(const std::string& link, int gpus, const GpuInfo& device,
                        std::string* note) {
  if (!link.empty()) {
    *note = "";
    return topology_preset(link, gpus);
  }
  if (device.ordinal >= 0 && gpus >= 2) {
    const GpuProfile profile = profile_gpus();
    if (int(profile.gpus.size()) >= gpus) {
      std::vector<int> devices;
      for (int i = 0; i < gpus; ++i) devices.push_back(i);
      *note = "measured on this machine; --link PRESET plans for a preset instead";
      return measure_topology(devices);
    }
  }
  std::string why;
  const std::string preset = default_link_preset(device, &why);
  *note = fmt::format("--link {} assumed: {}{}", preset, why,
                      device.ordinal >= 0 && gpus >= 2 ? "; this machine has fewer GPUs than --gpus"
                                                       : "");
  return topology_preset(preset, gpus);
}

void run_split_plan(const CLI::App& plan, const SplitPlanCliOptions& options,
                    const std::vector<GemmProblem>& problems) {
  if (!options.tp.empty()) {
    if (plan.get_option("--gpus")->count() == 0)
      throw InvalidArgument("--gpus", "missing", "--tp goes with --gpus G");
    return run_tp_plan(plan, options, problems);
  }
  refuse_options_except(plan,
                        {"--m", "--n", "--k", "--dtype", "--layout", "--lda", "--ldb", "--ldd",
                         "--device", "--json", "--gpus", "--link", "--inputs", "--output",
                         "--split", "--max-chunks", "--tp"},
                        "--gpus");
  if (plan.get_option("--gpus")->count() == 0)
    throw InvalidArgument("--gpus", "missing",
                          "--link, --inputs, --output, --split and --max-chunks go with --gpus G");
  const SplitOptions split =
      parse_split_options(options.inputs, options.output, options.split, options.max_chunks);
  const GpuInfo device = resolve_cli_device(option_text(plan, "--device"));
  std::string note;
  const Topology topology = split_topology(options.link, options.gpus, device, &note);
  std::vector<SplitPlan> plans;
  for (const GemmProblem& problem : problems)
    plans.push_back(plan_split(problem, device, topology, split));
  if (plan.get_option("--json")->count() > 0) {
    nlohmann::json out = nlohmann::json::array();
    for (const SplitPlan& p : plans) out.push_back(split_plan_json(p));
    if (!note.empty()) fmt::print(stderr, "autogemm: note: links: {}\n", note);
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (i > 0) fmt::print("\n");
    print_split_plan(plans[i], note);
  }
}

}  // namespace autogemm::cli
