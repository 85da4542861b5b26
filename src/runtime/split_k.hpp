#pragma once
// Split-K's second kernel: D = alpha * (sum of the fp32 partial planes) + beta * C.
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

void split_k_reduce(const GemmProblem& problem, const GemmOperands& operands,
                    const float* workspace, int split_k, cudaStream_t stream);

}  // namespace autogemm::runtime
