#pragma once
// The fused epilogue's per-call vectors against the problem's epilogue (autogemm/epilogue.hpp):
// each declared vector given, each undeclared one null (a vector passed for nothing is a
// mistake, not a no-op), and aligned for the kernels' paired loads (sm90/fused_epilogue.cuh).
#include "autogemm/gemm.hpp"

namespace autogemm::runtime {

// Throws InvalidArgument naming the operand ("bias", "row_scale", "col_scale", "d_scale"), its
// value and the rule. d_scale is read when problem.d_type is e4m3.
void check_epilogue_operands(const GemmProblem& problem, const GemmOperands& operands);

}  // namespace autogemm::runtime
