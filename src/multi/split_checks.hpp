#pragma once
// Everything split_gemm checks before it launches anything (multi_gpu.hpp): the plan against
// the problem and the communicator, the operand lists, and each operand pointer against its
// rank's device. Throws InvalidArgument naming the argument, its value and the rule.
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "autogemm/multi_gpu.hpp"

namespace autogemm::multi {

// Which of a rank's operands the plan reads or writes there.
struct RankNeeds {
  bool inputs = false;   // A, B (and FP8 scales): the rank computes and holds them itself
  bool c = false;        // C (beta != 0)
  bool d = false;        // D: the rank writes its part or all of it
};
RankNeeds rank_needs(const SplitPlan& plan, int rank, const GemmOperands& operands);

// Empty when `pointer` is device memory of `device` (or managed memory), else why not
// ("is memory of device 1", "is host memory", "is not a CUDA allocation ...").
std::string pointer_device_violation(const void* pointer, int device);

// The checks that need no GPU: the plan's problem, size and candidate; the list lengths;
// alpha/beta equal on every local rank; beta with inputs on the root.
void check_split_arguments(const GemmProblem& problem, const std::vector<GemmOperands>& operands,
                           const SplitPlan& plan, int comm_size, std::size_t local_ranks,
                           const std::vector<cudaStream_t>& streams);

// Each local rank's operand pointers on its device (cudaPointerGetAttributes), and the plan's
// forced configurations legal on each local rank's GPU.
void check_split_operands(const std::vector<GemmOperands>& operands, const SplitPlan& plan,
                          const std::vector<MultiGpuComm::LocalRank>& ranks,
                          const std::vector<GpuInfo>& devices);

}  // namespace autogemm::multi
