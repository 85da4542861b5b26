// `autogemm bench --gpus N --tp PATTERN --m M --n N --k K [--dtype fp8]`: a tensor-parallel
// GEMM over GPUs 0..N-1 of this process (one rank each, tp_gemm), against the whole GEMM on
// GPU 0 alone, with the plan's predicted time beside the measured one, and every rank's block
// checked against the matching block of the one-GPU result (cmd_bench_multi.hpp).
//
// The operands are made once on GPU 0 (FP8: quantised there, 1x128 / 128x128) and each rank's
// shard is cut from them, so the one-GPU result is the reference every block must match (diff
// < 1e-5; the ring's reductions round partial sums in D's type). Timing: SpanTimer.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <iostream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/tensor_parallel.hpp"
#include "bench/tensors.hpp"
#include "bench/tp_shards.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_bench_multi.hpp"
#include "cli/cmd_plan_split.hpp"
#include "cli/cmd_plan_tp.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli/multi_bench_common.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/result_match.hpp"

namespace autogemm::cli {

void run_tp_bench(const CLI::App& bench, const MultiBenchOptions& o) {
  refuse_options_except(bench,
                        {"--gpus", "--tp", "--transport", "--bands", "--rounds", "--tail-rows",
                         "--merge-c-steps", "--process-per-rank", "--m", "--n", "--k", "--dtype", "--device",
                         "--json", "--seed", "--warmup", "--iters"},
                        "--gpus and --tp");
  const TpProblem problem = tp_problem(one_bench_problem(bench), o.tp, o.gpus);
  const TpOptions options =
      tp_options(o.transport, o.bands, o.rounds, o.tail_rows, !o.process_per_rank, o.merge_c_steps);
  const bool fp8 = problem.scaling == Scaling::block_1x128_128x128;
  if (fp8 && problem.pattern == TpPattern::all_gather && (problem.n / problem.world) % 128 != 0)
    throw InvalidArgument("--n", std::to_string(problem.n),
                          fmt::format("the FP8 bench cuts each rank's weight and its 128 x 128 "
                                      "scales from one quantised weight: N / {} must be a "
                                      "multiple of 128", problem.world));
  const MultiBenchArgs args = multi_bench_args(bench);
  const bool json = args.json;
  const int warmup = args.warmup, iters = args.iters;
  const MultiBenchMachine machine = multi_bench_machine(bench, o.gpus);
  const TpPlan plan = plan_tp_for_cli(problem, machine.device, machine.topology, options);
  if (!machine.measured)  // nothing to measure: the plan, as `plan --tp` shows it
    return show_unmeasured(machine, json, tp_plan_json(plan),
                           [&] { print_tp_plan(plan, machine.note); });
  const std::vector<int>& devices = machine.devices;
  const uint64_t seed = args.seed;

  // The whole GEMM on GPU 0: the inputs every shard is cut from, the reference and its time.
  const GemmProblem whole = tp_whole_problem(problem);
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench tp)");
  const bench::GemmInputs inputs = bench::make_gemm_inputs(whole, seed);
  SpanTimer timer(o.gpus);
  GemmOptions on_gpu0;
  on_gpu0.device = 0;
  const GemmOperands single_ops = inputs.operands();
  // The first call compiles and may wait on its stream: not gated (multi_bench_common.hpp).
  timer.time([&] { gemm(whole, single_ops, timer.streams()[0], on_gpu0); }, false);
  const double single_us = median_of(
      [&] { return timer.time([&] { gemm(whole, single_ops, timer.streams()[0], on_gpu0); }); },
      warmup, iters);
  const std::size_t d_bytes = std::size_t(whole.m * whole.n * dtype_bytes(whole.d_type));
  const std::vector<unsigned char> reference = multi::download_bytes(inputs.d.get(), d_bytes);

  std::vector<bench::TpRankBuffers> ranks;
  std::vector<TpShards> shards;
  for (int g = 0; g < o.gpus; ++g) {
    ranks.push_back(bench::cut_tp_rank(problem, inputs, g));
    shards.push_back(ranks.back().shards());
  }
  MultiGpuComm comm = MultiGpuComm::local(devices);
  TpWorkspace workspace(plan, comm);
  // One checked call on poisoned outputs, then the timed ones.
  for (int g = 0; g < o.gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench tp)");
    const TpShardShapes s = tp_shard_shapes(problem, g);
    bench::fill_poison(ranks[g].d.get(), std::size_t(s.d_rows * s.d_cols), problem.d_type);
  }
  timer.time([&] { tp_gemm(plan, shards, workspace, comm, timer.streams()); }, false);
  std::vector<multi::ResultMatch> matches;
  bool all_ok = true;
  for (int g = 0; g < o.gpus; ++g) {
    const TpShardShapes s = tp_shard_shapes(problem, g);
    matches.push_back(multi::match_results(
        multi::download_bytes(ranks[g].d.get(), std::size_t(s.d_rows * s.d_cols * dtype_bytes(problem.d_type))),
        bench::expected_tp_block(problem, reference, g), problem.d_type));
    all_ok = all_ok && matches.back().ok();
  }
  const double tp_us = median_of(
      [&] { return timer.time([&] { tp_gemm(plan, shards, workspace, comm, timer.streams()); }); },
      warmup, iters);
  const double measured = single_us / tp_us;
  const double error = plan.total_us / tp_us - 1;
  if (json) {
    nlohmann::json out = tp_plan_json(plan);
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& m : matches)
      checks.push_back({{"bitwise", m.bitwise}, {"diff", m.diff}, {"finite", m.finite}, {"ok", m.ok()}});
    out.update({{"measured", true},
                {"single_gpu_measured_us", single_us},
                {"tp_measured_us", tp_us},
                {"measured_speedup", measured},
                {"prediction_error", error},
                {"ranks_checked", checks},
                {"all_ranks_ok", all_ok}});
    std::cout << out.dump(2) << "\n";
  } else {
    print_tp_plan(plan, machine.note);
    fmt::print("\nmeasured   one GPU {:.1f} us; {} over {} GPUs {:.1f} us (median of {}): speedup "
               "{:.2f}x measured, {:.2f}x predicted (time {:+.1f}%)\n",
               single_us, to_string(problem.pattern), o.gpus, tp_us, iters, measured,
               plan.speedup(), 100 * error);
    for (int g = 0; g < o.gpus; ++g)
      fmt::print("rank {}     against the one-GPU result: {}\n", g,
                 tp_shard_shapes(problem, g).d_rows == 0 ? "no D here (gather: rank 0 holds it)"
                 : matches[g].bitwise                    ? "bitwise equal"
                                    : fmt::format("diff {:.3g}{} ({})", matches[g].diff,
                                                  matches[g].finite ? "" : ", unwritten entries",
                                                  matches[g].ok() ? "within 1e-5" : "FAILED"));
  }
  if (!all_ok) {
    fmt::print(stderr, "autogemm: a rank's block differs from the one-GPU result\n");
    throw CLI::RuntimeError(1);
  }
}

}  // namespace autogemm::cli
