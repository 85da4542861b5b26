#pragma once
// Timing one call that runs on several GPUs (bench_split.cpp, bench_tp.cpp): CUDA events on
// GPU 0's stream. The other GPUs' streams wait for the start event and GPU 0's stream waits for
// each of theirs before the end event, so the span covers every GPU's work. GPU 0's stream
// first waits on a gate in device memory that the host opens only once the whole call is
// enqueued: one host thread enqueues the GPUs one after the other (hundreds of microseconds for
// a call of many launches), and without the gate the last GPU would start that much later than
// the first, a skew that processes of their own (torchrun) do not have.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

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

}  // namespace autogemm::cli
