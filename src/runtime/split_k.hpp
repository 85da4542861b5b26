#pragma once
// Split-K's second kernel: D = alpha * (sum of the fp32 partial planes) + beta * C.
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// Row length of a workspace plane in floats: N rounded up to 16 bytes (TMA's stride rule; the
// store may also fill the rounding, which stays inside the row).
inline int64_t split_k_workspace_ld(const GemmProblem& p) { return (p.n + 3) / 4 * 4; }

void split_k_reduce(const GemmProblem& problem, const GemmOperands& operands,
                    const float* workspace, int split_k, cudaStream_t stream);

}  // namespace autogemm::runtime
