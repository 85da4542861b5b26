#pragma once
// The alpha, beta, C and D that the tail split's second kernel finishes with.
#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"
#include "kernels/sm90/finish_params.cuh"

namespace autogemm::runtime {

inline FinishOutputParams finish_output_params(const GemmProblem& p, const GemmOperands& o) {
  FinishOutputParams out{};
  out.alpha = o.alpha;
  out.beta = o.beta;
  out.c = o.c;
  out.ldc = p.ldc_or_packed();
  out.d = o.d;
  out.ldd = p.ldd_or_packed();
  out.d_kind = p.d_type == DType::fp32 ? 2 : p.d_type == DType::fp16 ? 1 : 0;
  return out;
}

}  // namespace autogemm::runtime
