#pragma once
// The spec a call launches, shared by the entry points gemm() and grouped_gemm(): forced by
// the caller (options.config, made by the same function as the planner's choices and refused by
// the same rules), or planned (from the tuning record, the planner, or autotuned), once per
// process per (device, problem) and kept (runtime/gemm.cpp).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "runtime/launch.hpp"

namespace autogemm::runtime {

// options.device, or the current device.
int call_device(const GemmOptions& options);

std::shared_ptr<const KernelSpec> call_spec(int device, const GemmProblem& problem,
                                            const GemmOperands& operands, cudaStream_t stream,
                                            const GemmOptions& options);

// What gemm() decides for a call before it launches anything: the problem as it runs (reads_c
// from beta), checked with its operands, the spec, and why our kernel cannot serve these
// operands (empty: it can, and gemm() launches the spec; else cuBLASLt where allowed). Throws
// what gemm() throws for a bad call. run_gemm_schedule resolves its launches from it.
struct CallPlan {
  GemmProblem problem;
  std::shared_ptr<const KernelSpec> spec;
  std::string why_not_ours;
};
CallPlan plan_call(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   const GemmOptions& options);

// The grouped entry points' call (grouped_gemm, grouped_weight_gradient), after their own
// checks: the planner's choice or options.config (autotuning refused: its timings would need the
// groups' sizes, which live on the device), our kernel or an error saying why none serves it
// (cuBLASLt has no grouped form here), the operands checked against the spec, and the launch
// with the groups' device arrays. `what` names the call in the errors ("grouped_gemm()").
GemmReport launch_grouped(const GemmProblem& problem, const GemmOperands& operands,
                          const GroupArrays& groups, cudaStream_t stream,
                          const GemmOptions& options, const char* what);

}  // namespace autogemm::runtime
