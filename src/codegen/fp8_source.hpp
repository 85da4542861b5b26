#pragma once
// The input-type-dependent part of the generated kernel Config (kernel_source.cpp): element
// size, FP8 scaling kind and the wgmma wrapper. The FP8 kernel is the BF16 family with
// promotion (src/kernels/sm90/fp8_promotion.cuh); its rules are in plan/rules.cpp.
#include <string>

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::codegen {

bool is_fp8(DType t);

// Generated Config members: "in_bytes", "scaling" (fp8_scales.cuh kScaling*) and `mma`
// (k16 for 16-bit inputs, k32 with a scale-d argument for FP8).
std::string input_type_members(const GemmProblem& problem, const GemmConfig& config);

// Appended to the kernel name so FP8 kernels differing only in B's type or the scaling get
// their own names; empty for 16-bit inputs.
std::string input_type_name_suffix(const GemmProblem& problem, const GemmConfig& config);

}  // namespace autogemm::codegen
