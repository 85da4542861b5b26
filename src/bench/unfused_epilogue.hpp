#pragma once
// The fused epilogue run as a second kernel over D (kernels/bench/unfused_epilogue.cuh): the
// baseline `bench --epilogue` times our fused GEMM against. The GEMM before it computed
// D = alpha * A B (the problem without its epilogue).
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"

namespace autogemm::bench {

// D = act(D * row_scale * col_scale + bias) in place, with the problem's epilogue and the
// operands' vectors; asynchronous on `stream`.
void unfused_epilogue(const GemmProblem& problem, const GemmOperands& operands,
                      cudaStream_t stream);

}  // namespace autogemm::bench
