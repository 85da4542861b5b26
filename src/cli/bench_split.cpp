// `autogemm bench --gpus N --m M --n N --k K`: one GEMM split over GPUs 0..N-1 by split_gemm,
// timed against the same GEMM on GPU 0 alone, with the cost model's predicted speedup beside
// the measured one and the result checked against the single-GPU result (cmd_bench_multi.hpp).
// Timing: SpanTimer (multi_bench_common.hpp), the same for the split and for the one GPU.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <iostream>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_bench_multi.hpp"
#include "cli/cmd_plan_split.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli/multi_bench_common.hpp"
#include "cli/topology_report.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/result_match.hpp"

namespace autogemm::cli {

namespace {

std::size_t d_bytes(const GemmProblem& p) {
  return bench::operand_elements(p, 'D') * std::size_t(dtype_bytes(p.d_type));
}

}  // namespace

void run_split_bench(const CLI::App& bench, const MultiBenchOptions& o) {
  refuse_options_except(bench,
                        {"--gpus", "--split", "--inputs", "--output", "--tp", "--m", "--n", "--k", "--dtype",
                         "--device", "--json", "--seed", "--warmup", "--iters"},
                        "--gpus and --m/--n/--k");
  const GemmProblem problem = one_bench_problem(bench);
  const SplitOptions split = parse_split_options(o.inputs, o.output, o.split, 8);
  const MultiBenchArgs args = multi_bench_args(bench);
  const bool json = args.json;
  const int warmup = args.warmup, iters = args.iters;
  const MultiBenchMachine machine = multi_bench_machine(bench, o.gpus);
  const SplitPlan plan = plan_split(problem, machine.device, machine.topology, split);
  if (!machine.measured)  // nothing to measure: the plan, as `plan --gpus` shows it
    return show_unmeasured(machine, json, split_plan_json(plan),
                           [&] { print_split_plan(plan, machine.note); });
  const std::vector<int>& devices = machine.devices;
  const uint64_t seed = args.seed;

  // The same inputs on every GPU (the same seed); with inputs on the root the others' are unused.
  std::vector<bench::GemmInputs> inputs;
  for (int g = 0; g < o.gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench split)");
    inputs.push_back(bench::make_gemm_inputs(problem, seed));
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench split)");
  bench::DeviceBuffer single_d(d_bytes(problem));
  SpanTimer timer(o.gpus);
  GemmOperands single_ops = inputs[0].operands();
  single_ops.d = single_d.get();
  GemmOptions on_gpu0;
  on_gpu0.device = 0;
  const double single_us = median_of(
      [&] { return timer.time([&] { gemm(problem, single_ops, timer.streams()[0], on_gpu0); }, false); }, warmup, iters);
  const auto want = multi::download_bytes(single_d.get(), d_bytes(problem));

  MultiGpuComm comm = MultiGpuComm::local(devices);
  std::vector<GemmOperands> ops;
  for (int g = 0; g < o.gpus; ++g) {
    ops.push_back(inputs[g].operands());
    if (split.inputs == InputPlacement::root && g > 0) ops.back().a = ops.back().b = nullptr;
  }
  const double split_us = median_of(
      [&] { return timer.time([&] { split_gemm(problem, ops, plan, comm, timer.streams()); }, false); }, warmup, iters);
  // The check: all of D on GPU 0, or (sharded) GPU 0's D holds at least its own part; the
  // whole comparison then needs the root output.
  const multi::ResultMatch match =
      multi::match_results(multi::download_bytes(inputs[0].d.get(), d_bytes(problem)), want, problem.d_type);
  const bool checked = split.output == OutputPlacement::root || plan.chosen.kind == SplitKind::none;
  const double measured = single_us / split_us, predicted = plan.speedup();
  if (json) {
    nlohmann::json out = split_plan_json(plan);
    out.update({{"measured", true},
                {"single_gpu_measured_us", single_us},
                {"split_measured_us", split_us},
                {"measured_speedup", measured},
                {"predicted_speedup", predicted},
                {"prediction_error", predicted / measured - 1},
                {"checked_against_single_gpu", checked},
                {"bitwise", match.bitwise},
                {"diff", match.diff}});
    std::cout << out.dump(2) << "\n";
  } else {
    print_split_plan(plan, "measured on this machine");
    fmt::print("\nmeasured   one GPU {:.1f} us, {} split over {} GPUs {:.1f} us (median of {}): speedup "
               "{:.2f}x measured, {:.2f}x predicted ({:+.1f}%)\n",
               single_us, to_string(plan.chosen.kind), o.gpus, split_us, iters, measured, predicted,
               100 * (predicted / measured - 1));
    if (checked)
      fmt::print("result     against the one-GPU result: {}\n",
                 match.bitwise ? "bitwise equal" : fmt::format("diff {:.3g} ({})", match.diff, match.ok() ? "within 1e-5" : "FAILED"));
    else
      fmt::print("result     sharded output: not compared here (tests/test_multi_gpu.cpp checks each part)\n");
  }
  if (checked && !match.ok()) {
    fmt::print(stderr, "autogemm: the split result differs from the one-GPU result (diff {:.3g})\n", match.diff);
    throw CLI::RuntimeError(1);
  }
}

}  // namespace autogemm::cli
