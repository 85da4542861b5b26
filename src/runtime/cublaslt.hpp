#pragma once
// cuBLASLt: the vendor path for GPUs or problems our kernel does not serve, and the baseline
// the bench compares against in the same process on the same inputs.
#include <cuda_runtime_api.h>

#include <string>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// D = alpha * op(A) op(B) + beta * C with our row-major conventions (problem.hpp), mapped onto
// column-major cuBLASLt by computing D^T = op(B)^T op(A)^T. FP8 block scaling maps to
// VEC128_32F (A) / BLK128x128_32F (B). Throws CudaError when cuBLASLt has no algorithm.
// When `per_tensor_fp8` is set for an FP8 problem, runs the per-tensor-scaled variant instead.
void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   bool per_tensor_fp8 = false);

}  // namespace autogemm::runtime
