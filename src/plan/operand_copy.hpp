#pragma once
// A and B whose rows TMA cannot describe (lda or ldb not a multiple of 16 bytes: K odd in the
// nt layout, M odd with A stored K x M). cuBLASLt's kernels for such rows run at 55-130
// TFLOP/s on an H200 (2049^3 bf16: 214 us); copying the operand into rows padded to whole
// 256-byte units and running our kernel on the copy costs the copy's bytes twice (read and
// write) plus a launch. The planner weighs both (the cost model prices the copy and
// cuBLASLt's unaligned kernels); make_spec puts the copies in the spec (KernelSpec::copy_a,
// copy_b) and the launcher makes them (runtime/operand_copy.cpp).
#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// The problem the kernels see: lda and ldb raised to the next multiple of 256 bytes where
// the caller's break TMA's stride rule (16 bytes) and a padded row can be described (below
// the size limit); `p` unchanged otherwise, and for grouped problems (their kernels read A's
// rows by group).
GemmProblem kernel_problem(const GemmProblem& p);

// True when kernel_problem(p) copies A or B.
bool copies_operands(const GemmProblem& p);

// The copies of A and B from the caller's problem to kernel_problem(call) (inactive where the
// operand is read in place).
OperandCopy operand_copy_a(const GemmProblem& call);
OperandCopy operand_copy_b(const GemmProblem& call);

// The cost model's price of those copies (src/plan/cost_model.cpp), added to a prediction of
// the kernels on kernel_problem(call): Prediction::operand_copy_us, time_us and tflops.
void add_operand_copies(Prediction& p, const GemmProblem& call, const GpuInfo& device);

}  // namespace autogemm::plan
