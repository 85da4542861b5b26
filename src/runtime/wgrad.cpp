#include "autogemm/wgrad.hpp"

#include <string>

#include "autogemm/errors.hpp"

namespace autogemm {

GemmProblem weight_gradient_problem(int64_t tokens, int64_t out_features, int64_t in_features,
                                    DType type, bool accumulate, DType dw_type) {
  if (type != DType::bf16 && type != DType::fp16)
    throw InvalidArgument("type", std::string(to_string(type)),
                          "weight gradients take bf16 or fp16 dY and X (FP8 with 1x128 scales "
                          "along the tokens on both operands is not built yet)");
  if (accumulate && dw_type != DType::fp32)
    throw InvalidArgument("dw_type", std::string(to_string(dw_type)),
                          "accumulating (dW += dY^T X) is into fp32: a 16-bit dW would round "
                          "every micro-batch's sum");
  GemmProblem p;
  p.m = out_features;
  p.n = in_features;
  p.k = tokens;
  p.a_type = p.b_type = type;
  p.d_type = dw_type;
  p.layout = Layout::tn;   // A = dY^T stored as dY [T, N]; B = X stored as X [T, K]
  p.reads_c = accumulate;
  validate(p);
  return p;
}

GemmReport weight_gradient(const GemmProblem& problem, const void* dy, const void* x, void* dw,
                           cudaStream_t stream, const GemmOptions& options) {
  if (problem.layout != Layout::tn)
    throw InvalidArgument("problem.layout", std::string(to_string(problem.layout)),
                          "a weight gradient's dY and X are token-major: layout tn "
                          "(weight_gradient_problem)");
  GemmOperands o;
  o.a = dy;
  o.b = x;
  o.d = dw;
  o.c = problem.reads_c ? dw : nullptr;
  o.beta = problem.reads_c ? 1.0f : 0.0f;
  return gemm(problem, o, stream, options);
}

}  // namespace autogemm
