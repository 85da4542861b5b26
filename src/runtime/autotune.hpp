#pragma once
// Autotuning (GemmOptions::autotune, AUTOGEMM_AUTOTUNE, `autogemm tune`): the first call of a
// problem times the plan's best distinct configurations and cuBLASLt's heuristic's first
// algorithms for the call, on the call's buffers, and keeps the fastest. cuBLASLt is a candidate
// so that a tuned problem cannot run slower than the vendor library shipped beside it (issue 49).
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "runtime/tuning_entry.hpp"

namespace autogemm::runtime {

// How many of cuBLASLt's algorithms are timed beside ours (cublaslt_algorithms caps at 8).
inline constexpr int kVendorCandidates = 8;

// Up to `count` of the plan's candidates, best first, that differ in more than raster order or
// persistence (autotune.cpp says why).
std::vector<GemmConfig> distinct_candidates(const Plan& plan, int count);

struct AutotuneResult {
  std::shared_ptr<const KernelSpec> spec;       // the winner (a vendor spec when cuBLASLt won)
  std::shared_ptr<const KernelSpec> ours_best;  // our fastest configuration
  TuningEntry entry;                            // for the tuning record (key and date unset)
};

// Times `configs` (made into specs for the plan's problem) and cuBLASLt's algorithms on the call's
// operands, each as plain launches or (`graph`) as one CUDA graph replay of the same launches,
// and returns the fastest. Blocks on the stream; the winner's reason says what it beat.
AutotuneResult autotune(const Plan& plan, const std::vector<GemmConfig>& configs,
                        const GemmOperands& operands, cudaStream_t stream, bool graph);

// What runs on the stream before each timed launch of a candidate. None by default: gemm()'s
// callers get candidates timed back to back, operands warm in L2 as their own repeated calls
// would leave them. `autogemm tune` and `autogemm bench` install their L2 flush (AutotuneFlush),
// so candidates are ranked as those commands time them, cold: a decode GEMM's B fits the 50 MB L2,
// and hot and cold can rank cuBLASLt's algorithm and ours differently. Each launch is then timed
// between its own events and the median kept.
using AutotuneFlushFn = std::function<void(cudaStream_t)>;
// Installs `flush` for this process while the object lives (the previous one after).
class AutotuneFlush {
 public:
  explicit AutotuneFlush(AutotuneFlushFn flush);
  ~AutotuneFlush();
  AutotuneFlush(const AutotuneFlush&) = delete;
  AutotuneFlush& operator=(const AutotuneFlush&) = delete;

 private:
  AutotuneFlushFn previous_;
};

// Runs a spec: ours through the launcher, a vendor spec through cuBLASLt with its algorithm.
void run_spec(const KernelSpec& spec, const GemmOperands& operands, cudaStream_t stream);

}  // namespace autogemm::runtime
