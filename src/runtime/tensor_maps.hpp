#pragma once
// The four TMA descriptors of one GEMM call (A, B, C, D), encoded with cuTensorMapEncodeTiled
// after the same rules the planner checks (plan/tma_rules.hpp), so a bad stride or pointer
// fails with the field named instead of CUDA_ERROR_INVALID_VALUE.
#include <cuda.h>

#include <string>

#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

struct GemmTensorMaps {
  CUtensorMap a{}, b{}, c{}, d{};
};

// Empty when every operand pointer satisfies TMA's 16-byte global address rule, else why not.
std::string tma_pointer_incompatibility(const GemmProblem& problem, const GemmOperands& operands);

// Maps matching the smem layouts of src/kernels/sm90 (loads.cuh, epilogue.cuh). Operands that
// the kernel reads with plain loads get a zeroed map the kernel never touches; without
// C (beta == 0) the C map repeats D's. Each calling thread keeps the maps it encoded (keyed by
// every argument that decides their bytes), so a repeated call copies them instead.
GemmTensorMaps make_gemm_tensor_maps(const GemmProblem& problem, const KernelFields& fields,
                                     const GemmOperands& operands);

}  // namespace autogemm::runtime
