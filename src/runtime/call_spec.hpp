#pragma once
// The spec a call launches, shared by the entry points gemm() and grouped_gemm(): forced by
// the caller (options.config, made by the same function as the planner's choices and refused by
// the same rules), or planned (from the tuning record, the planner, or autotuned), once per
// process per (device, problem) and kept (runtime/gemm.cpp).
#include <cuda_runtime_api.h>

#include <memory>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

// options.device, or the current device.
int call_device(const GemmOptions& options);

std::shared_ptr<const KernelSpec> call_spec(int device, const GemmProblem& problem,
                                            const GemmOperands& operands, cudaStream_t stream,
                                            const GemmOptions& options);

}  // namespace autogemm::runtime
