// What the multi-GPU benches of one GEMM share (multi_bench_common.hpp).
#include "cli/multi_bench_common.hpp"

#include <fmt/format.h>

#include <iostream>

#include "autogemm/errors.hpp"
#include "bench/timing.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_plan_split.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"

namespace autogemm::cli {

GemmProblem one_bench_problem(const CLI::App& bench) {
  ProblemOptions sizes;
  sizes.m = option_text(bench, "--m");
  sizes.n = option_text(bench, "--n");
  sizes.k = option_text(bench, "--k");
  sizes.dtype = option_text(bench, "--dtype", "bf16");
  for (const auto& [name, value] : {std::pair{"--m", &sizes.m}, {"--n", &sizes.n}, {"--k", &sizes.k}})
    if (value->empty()) throw InvalidArgument(name, "missing", "--m, --n and --k go together");
  const std::vector<GemmProblem> problems = sizes.problems();
  if (problems.size() != 1)
    throw InvalidArgument("--m/--n/--k", fmt::format("{} problems", problems.size()),
                          "bench --gpus splits one GEMM: give one size each");
  return problems.front();
}

SpanTimer::SpanTimer(int gpus) {
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(bench span)");
    cudaStream_t s = nullptr;
    cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate(bench span)");
    streams_.push_back(s);
    cudaEvent_t e = nullptr;
    cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate(bench span)");
    done_.push_back(e);
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench span)");
  cuda_check(cudaEventCreate(&start_), "cudaEventCreate(bench span)");
  cuda_check(cudaEventCreate(&end_), "cudaEventCreate(bench span)");
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&gate_), sizeof(unsigned)), "cudaMalloc(bench span gate)");
  cuda_check(cudaMemset(gate_, 0, sizeof(unsigned)), "cudaMemset(bench span gate)");
  cuda_check(cudaStreamCreateWithFlags(&opener_, cudaStreamNonBlocking), "cudaStreamCreate(bench span)");
}

SpanTimer::~SpanTimer() {
  (void)cudaEventDestroy(start_);
  (void)cudaEventDestroy(end_);
  for (cudaEvent_t e : done_) (void)cudaEventDestroy(e);
  for (cudaStream_t s : streams_) (void)cudaStreamDestroy(s);
  (void)cudaStreamDestroy(opener_);
  (void)cudaFree(gate_);
}

double SpanTimer::time(const std::function<void()>& call, bool gated) {
  cuda_check(cudaSetDevice(0), "cudaSetDevice(bench span)");
  const driver::Api& api = driver::api();
  if (gated)
    driver::check(api.cuStreamWaitValue32(streams_[0], CUdeviceptr(gate_), 1, CU_STREAM_WAIT_VALUE_EQ),
                "cuStreamWaitValue32(bench span gate)");
  if (gated)
    driver::check(api.cuStreamWriteValue32(streams_[0], CUdeviceptr(gate_), 0, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(bench span gate)");
  cuda_check(cudaEventRecord(start_, streams_[0]), "cudaEventRecord(span start)");
  for (std::size_t g = 1; g < streams_.size(); ++g)
    cuda_check(cudaStreamWaitEvent(streams_[g], start_, 0), "cudaStreamWaitEvent(span start)");
  call();
  for (std::size_t g = 1; g < streams_.size(); ++g) {
    cuda_check(cudaSetDevice(int(g)), "cudaSetDevice(bench span)");
    cuda_check(cudaEventRecord(done_[g], streams_[g]), "cudaEventRecord(span done)");
    cuda_check(cudaSetDevice(0), "cudaSetDevice(bench span)");
    cuda_check(cudaStreamWaitEvent(streams_[0], done_[g], 0), "cudaStreamWaitEvent(span done)");
  }
  cuda_check(cudaEventRecord(end_, streams_[0]), "cudaEventRecord(span end)");
  if (gated)
    driver::check(api.cuStreamWriteValue32(opener_, CUdeviceptr(gate_), 1, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(bench span gate open)");
  cuda_check(cudaEventSynchronize(end_), "cudaEventSynchronize(span end)");
  float ms = 0;
  cuda_check(cudaEventElapsedTime(&ms, start_, end_), "cudaEventElapsedTime(span)");
  return double(ms) * 1000.0;
}

double median_of(const std::function<double()>& once, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) once();
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) times.push_back(once());
  return bench::summarize(times).median_us;
}

MultiBenchArgs multi_bench_args(const CLI::App& bench) {
  MultiBenchArgs a;
  a.json = bench.get_option("--json")->count() > 0;
  a.warmup = std::stoi(option_text(bench, "--warmup", "3"));
  a.iters = std::stoi(option_text(bench, "--iters", "10"));
  a.seed = std::stoull(option_text(bench, "--seed", "2026"));
  if (a.warmup < 0) throw InvalidArgument("--warmup", std::to_string(a.warmup), "must be >= 0");
  if (a.iters < 1) throw InvalidArgument("--iters", std::to_string(a.iters), "must be >= 1");
  return a;
}

MultiBenchMachine multi_bench_machine(const CLI::App& bench, int gpus) {
  const std::string device_spec = option_text(bench, "--device");
  const GpuProfile profile = profile_gpus();
  const bool preset_asked =
      !device_spec.empty() && device_spec.find_first_not_of("0123456789") != std::string::npos;
  MultiBenchMachine m;
  if (profile.gpus.empty() || preset_asked) {
    m.device = device_preset(preset_asked ? device_spec : kFallbackPreset);
    m.topology = split_topology("", gpus, m.device, &m.note);
    m.why = profile.gpus.empty() ? fmt::format("no GPU ({})", profile.unavailable_reason)
                                 : fmt::format("{} is a preset", device_spec);
    return m;
  }
  if (int(profile.gpus.size()) < gpus)
    throw InvalidArgument("--gpus", std::to_string(gpus),
                          fmt::format("this machine has {} CUDA device(s)", profile.gpus.size()));
  m.measured = true;
  m.device = profile.gpus[0];
  for (int g = 0; g < gpus; ++g) m.devices.push_back(g);
  m.topology = gpus >= 2 ? measure_topology(m.devices)
                         : topology_preset(default_link_preset(profile.gpus[0]), 1);
  m.note = "measured on this machine";
  return m;
}

void show_unmeasured(const MultiBenchMachine& machine, bool json, nlohmann::json plan_json,
                     const std::function<void()>& print_plan) {
  const std::string note = fmt::format("{}: showing the plan instead of measuring", machine.why);
  if (json) {
    plan_json["measured"] = false;
    plan_json["note"] = note;
    std::cout << plan_json.dump(2) << "\n";
  } else {
    fmt::print("{}\n\n", note);
    print_plan();
  }
}

}  // namespace autogemm::cli
