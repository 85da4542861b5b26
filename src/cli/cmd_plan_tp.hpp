#pragma once
// `autogemm plan --gpus G --tp all-gather|reduce-scatter|all-reduce`: a tensor-parallel GEMM on
// the ranks' shards (plan_tp, tensor_parallel.hpp), shared with `bench --gpus N --tp`.
// `--tp gather` is the one-process split with D gathered on GPU 0 (cmd_plan_split.cpp).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autogemm/problem.hpp"
#include "autogemm/tensor_parallel.hpp"

namespace autogemm::cli {

struct SplitPlanCliOptions;

// The whole GEMM of `p` (from --m/--n/--k/--dtype) as a pattern over `gpus` ranks. Throws
// InvalidArgument naming --tp for an unknown pattern, --layout for another layout than nt, the
// sizes for what validate(TpProblem) refuses.
TpProblem tp_problem(const GemmProblem& p, const std::string& pattern, int gpus);

// --transport (empty: the planner's choice), --bands and --rounds (0: the planner's choice),
// --tail-rows and --merge-c-steps (-1: the planner's choice; their ranges are checked by
// plan_tp, whose errors plan_tp_for_cli renames).
// one_process: every rank driven by this process (bench --tp; plan --tp unless
// --process-per-rank), so finished bands go straight into the receivers' D.
TpOptions tp_options(const std::string& transport, int bands, int rounds, int64_t tail_rows = -1,
                     bool one_process = true, int merge_c_steps = -1);
// plan_tp, its errors naming the options as the command line spells them (--rounds, ...).
TpPlan plan_tp_for_cli(const TpProblem& problem, const GpuInfo& device, const Topology& topology,
                       const TpOptions& options);

void print_tp_plan(const TpPlan& plan, const std::string& topology_note);
nlohmann::json tp_plan_json(const TpPlan& plan);

// Plans and prints each problem (text, or --json a list).
void run_tp_plan(const CLI::App& plan, const SplitPlanCliOptions& options,
                 const std::vector<GemmProblem>& problems);

}  // namespace autogemm::cli
