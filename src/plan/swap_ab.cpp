#include "plan/swap_ab.hpp"

#include <fmt/format.h>

#include "plan/operand_copy.hpp"

namespace autogemm::plan {

namespace {

// The storage letters of the swapped operands (problem.hpp): the kernel's A is the call's B,
// stored N x K ('t') = the kernel's M x K ('n'); its B is the call's A, stored M x K ('n') =
// the kernel's N x K ('t').
Layout swapped_layout(Layout l) {
  switch (l) {
    case Layout::nt: return Layout::nt;
    case Layout::nn: return Layout::tt;
    case Layout::tt: return Layout::nn;
    case Layout::tn: return Layout::tn;
  }
  return l;
}

}  // namespace

GemmProblem swapped_problem(const GemmProblem& p) {
  GemmProblem s = p;
  s.m = p.n;
  s.n = p.m;
  s.a_type = p.b_type;
  s.b_type = p.a_type;
  s.layout = swapped_layout(p.layout);
  s.lda = p.ldb_or_packed();
  s.ldb = p.lda_or_packed();
  s.ldc = p.ldc_or_packed();
  s.ldd = p.ldd_or_packed();
  return s;
}

GemmProblem kernel_problem(const GemmProblem& call, const GemmConfig& config) {
  const GemmProblem padded = kernel_problem(call);
  return config.swap_ab ? swapped_problem(padded) : padded;
}

std::string swap_ab_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& c = fields.config;
  if (!c.swap_ab) return {};
  if (c.instruction != Instruction::wgmma)
    return fmt::format("swap_ab with instruction = {}: only the tile family (wgmma) swaps "
                       "operands; the decode family already runs few rows of A along mma's N",
                       to_string(c.instruction));
  if (dtype_bytes(problem.a_type) != 2 || dtype_bytes(problem.b_type) != 2)
    return fmt::format("swap_ab with a_type = {}: 16-bit inputs only (block-scaled FP8 scales A "
                       "per row and B per 128 x 128 block, not the other way round)",
                       to_string(problem.b_type));
  if (problem.grouping != Grouping::none)
    return fmt::format("swap_ab with grouping = {}: the groups are rows of A, which a swapped "
                       "kernel runs along N",
                       to_string(problem.grouping));
  if (c.n_tail_kernel)
    return "swap_ab with n_tail_kernel: the n-tail kernel splits the call's N, which a swapped "
           "kernel runs along M";
  if (fields.store_path != StorePath::threads)
    return "swap_ab with store_path = tma: D is written transposed, by the threads";
  return {};
}

bool swap_ab_offered(const GemmProblem& call) {
  return call.m <= kSwapAbMaxM && call.grouping == Grouping::none &&
         dtype_bytes(call.a_type) == 2 && dtype_bytes(call.b_type) == 2;
}

}  // namespace autogemm::plan
