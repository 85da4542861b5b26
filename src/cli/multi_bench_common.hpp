#pragma once
// What the benches of one GEMM over several GPUs share (bench_split.cpp, bench_tp.cpp): the
// machine they measure on (or the preset they plan for), and the timer.
//
// SpanTimer times one call that runs on several GPUs: CUDA events on
// GPU 0's stream. The other GPUs' streams wait for the start event and GPU 0's stream waits for
// each of theirs before the end event, so the span covers every GPU's work. GPU 0's stream
// first waits on a gate in device memory that the host opens only once the whole call is
// enqueued: one host thread enqueues the GPUs one after the other (hundreds of microseconds for
// a call of many launches), and without the gate the last GPU would start that much later than
// the first, a skew that processes of their own (torchrun) do not have.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::cli {

class SpanTimer {
 public:
  explicit SpanTimer(int gpus);  // one non-blocking stream and event per GPU 0..gpus-1
  ~SpanTimer();
  SpanTimer(const SpanTimer&) = delete;
  SpanTimer& operator=(const SpanTimer&) = delete;
  const std::vector<cudaStream_t>& streams() const { return streams_; }
  // Microseconds from before `call` (enqueued on every stream) to when all of it is done.
  // gated: the work waits until the host has enqueued all of it; a call that blocks the host
  // on its own work (a first call that compiles and allocates may) must not be gated.
  double time(const std::function<void()>& call, bool gated = true);

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> done_;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  unsigned* gate_ = nullptr;             // on GPU 0: 1 opens it
  cudaStream_t opener_ = nullptr;        // GPU 0, writes the gate
};

// The median of `iters` timings after `warmup` untimed ones.
double median_of(const std::function<double()>& once, int warmup, int iters);

// The one GEMM of --m/--n/--k/--dtype (each a single size). InvalidArgument naming the option.
GemmProblem one_bench_problem(const CLI::App& bench);

// --json, --warmup (>= 0, default 3), --iters (>= 1, default 10) and --seed (default 2026);
// InvalidArgument naming the option for a bad count.
struct MultiBenchArgs {
  bool json = false;
  int warmup = 3, iters = 10;
  uint64_t seed = 2026;
};
MultiBenchArgs multi_bench_args(const CLI::App& bench);

// Where `bench --gpus N --m ...` runs: GPUs 0..N-1 of this machine with their measured links,
// or, without a GPU or with a preset --device, that preset and its default links (measured =
// false, `why` says which). InvalidArgument: more GPUs than this machine has (the range of
// --gpus is check_gpus_option's).
struct MultiBenchMachine {
  bool measured = false;
  GpuInfo device;              // GPU 0's profile, or the preset
  Topology topology;
  std::vector<int> devices;    // 0..N-1 when measured
  std::string why;             // when not measured: "no GPU (...)" or "<preset> is a preset"
  std::string note;            // where the links come from
};
MultiBenchMachine multi_bench_machine(const CLI::App& bench, int gpus);

// What such a bench shows when it cannot measure: the plan, as JSON (`plan_json` with
// measured = false and the reason) or as text (the reason, then print_plan()).
void show_unmeasured(const MultiBenchMachine& machine, bool json, nlohmann::json plan_json,
                     const std::function<void()>& print_plan);

}  // namespace autogemm::cli
