#pragma once
// Weight-only B's per-call pointers against the problem's weight_format (autogemm/weights.hpp):
// the scales always, the zeros exactly for int4-g128-zp, and no FP8 scales beside them; without
// a weight format neither is passed. gemm() and grouped_gemm() share it.
#include "autogemm/gemm.hpp"

namespace autogemm::runtime {

// Throws InvalidArgument naming the operand ("b_scales", "b_zeros", "scale_a", "scale_b"), its
// value and the rule.
void check_weight_operands(const GemmProblem& problem, const GemmOperands& operands);

}  // namespace autogemm::runtime
