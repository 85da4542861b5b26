#pragma once
// A simple, obviously-correct GEMM on the GPU (one thread per output, FP32 or FP64
// accumulation), JIT-compiled like everything else: the reference the GPU tests and the bench
// compare our kernels and cuBLASLt against. Honours every layout, leading dimension, alpha,
// beta and C of the problem.
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::bench {

// Writes D_ref (M x N, row-major, ld = N, float64) for the problem's operands, and, when
// `magnitude` is given, the sum of the absolute terms of each output (M x N, float64): what a
// correct result's rounding scales with.
void reference_gemm(const GemmProblem& problem, const GemmOperands& operands, double* d_ref,
                    cudaStream_t stream, double* magnitude = nullptr);

}  // namespace autogemm::bench
