#pragma once
// Tail split's workspace and second kernel (plan/tail_split.hpp says what a tail split is).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/config.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// The GEMM kernel's output for the tail: `cta_tiles` x `splits` fp32 partial tiles, then the
// tiles' coordinates. One stream-ordered allocation.
struct TailWorkspace {
  float* partials = nullptr;
  int* coords = nullptr;
  int64_t cta_tiles = 0;
  int splits = 1;
};

TailWorkspace allocate_tail_workspace(const GemmConfig& config, int64_t cta_tiles, int splits,
                                      cudaStream_t stream);

// D (the tail tiles' part of it) = alpha * sum of the ranges + beta * C, then frees the
// workspace on the stream.
void finish_tail_split(const GemmProblem& problem, const GemmOperands& operands,
                       const GemmConfig& config, const TailWorkspace& workspace,
                       cudaStream_t stream);

}  // namespace autogemm::runtime
