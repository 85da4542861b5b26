#pragma once
// `autogemm plan --gpus G ...`: one GEMM split over G GPUs (plan_split, multi_gpu.hpp),
// registered on the plan command by cmd_plan.cpp and run instead of the one-GPU plan.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "autogemm/multi_gpu.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::cli {

struct SplitPlanCliOptions {
  int gpus = 0;              // 0: not given (the one-GPU plan)
  std::string link;          // a preset; empty: measured when G GPUs are present, else the
                             // device's default preset
  std::string inputs = "replicated";
  std::string output = "root";
  std::string split;         // force a kind: none, m, n, k
  int max_chunks = 8;
  // Tensor-parallel patterns on the ranks' shards (cmd_plan_tp.cpp): all-gather,
  // reduce-scatter, all-reduce; "gather" (or empty) is the split above.
  std::string tp;
  std::string transport;     // --transport copy-engine | nccl; empty: the planner's choice
  int bands = 0;             // --bands: row bands per chunk; 0: the planner's choice
  int64_t tail_rows = -1;   // --tail-rows: a thin last band's rows; 0: even; -1: planned
  int merge_c_steps = -1;   // --merge-c-steps: 1 one launch per step, 0 per band; -1: planned
  int rounds = 0;            // --rounds: all-reduce's rounds of the ring; 0: the planner's
  bool process_per_rank = false;   // --process-per-rank: as torchrun runs it (TpOptions::one_process off)
};

// Adds --gpus, --link, --inputs, --output, --split, --max-chunks, --tp, --transport, --bands,
// --rounds, --tail-rows, --process-per-rank.
std::shared_ptr<SplitPlanCliOptions> add_split_plan_options(CLI::App& plan);

// True when --gpus or one of the options that go with it was given.
bool wants_split_plan(const CLI::App& plan);

// Plans each problem over the GPUs and prints it (text, or with --json a list of plans). Reads
// --device and --json from `plan`; refuses --top (every candidate is always shown).
void run_split_plan(const CLI::App& plan, const SplitPlanCliOptions& options,
                    const std::vector<GemmProblem>& problems);

// SplitOptions from the command line's words (--inputs, --output, --split, --max-chunks);
// InvalidArgument naming the option for a bad word.
SplitOptions parse_split_options(const std::string& inputs, const std::string& output,
                                 const std::string& split, int max_chunks);

// The plan as `plan --gpus` prints it (note: where the links come from), and its JSON.
void print_split_plan(const SplitPlan& plan, const std::string& topology_note);
nlohmann::json split_plan_json(const SplitPlan& plan);

// The topology `plan --gpus` uses: --link's preset; else, for a GPU of this machine with at
// least G GPUs present, the measured links of GPUs 0..G-1; else the device's default preset.
// *note says which and why.
Topology split_topology(const std::string& link, int gpus, const GpuInfo& device,
                        std::string* note);

}  // namespace autogemm::cli
