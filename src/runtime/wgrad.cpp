#include "autogemm/wgrad.hpp"

#include <fmt/format.h>

#include <string>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "runtime/call_spec.hpp"

namespace autogemm {

namespace {

// dY as A, X as B, dW as D and, accumulating, as C (beta 1).
GemmOperands wgrad_operands(const GemmProblem& problem, const void* dy, const void* x, void* dw) {
  GemmOperands o;
  o.a = dy;
  o.b = x;
  o.d = dw;
  o.c = problem.reads_c ? dw : nullptr;
  o.beta = problem.reads_c ? 1.0f : 0.0f;
  return o;
}

}  // namespace

// FP8 operands are dY^T and X^T, [features, tokens] e4m3: TMA needs their rows in 16-byte units.
constexpr int64_t kFp8TokenMultiple = 16;

GemmProblem weight_gradient_problem(int64_t tokens, int64_t out_features, int64_t in_features,
                                    DType type, bool accumulate, DType dw_type) {
  if (type != DType::bf16 && type != DType::fp16 && type != DType::e4m3)
    throw InvalidArgument("type", std::string(to_string(type)),
                          "weight gradients take bf16 or fp16 dY and X, or e4m3 with 1x128 "
                          "scales along the tokens on both operands");
  if (type == DType::e4m3 && tokens % kFp8TokenMultiple != 0)
    throw InvalidArgument("tokens", std::to_string(tokens),
                          fmt::format("FP8 weight gradients read dY^T and X^T, rows of tokens "
                                      "e4m3 bytes, which TMA needs to be a multiple of {} "
                                      "(quantize_fp8_1x128_transposed's rule too)",
                                      kFp8TokenMultiple));
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
  // 16-bit: A = dY^T stored as dY [T, N]; B = X stored as X [T, K]. FP8: A = dY^T stored as dY^T
  // [N, T] and B = X stored as X^T [K, T], both scaled per 128 tokens.
  p.layout = type == DType::e4m3 ? Layout::nt : Layout::tn;
  if (type == DType::e4m3) p.scaling = Scaling::block_1x128_1x128;
  p.reads_c = accumulate;
  validate(p);
  return p;
}

GemmProblem grouped_weight_gradient_problem(int64_t tokens, int64_t out_features,
                                            int64_t in_features, int64_t num_groups, DType type,
                                            bool accumulate, DType dw_type,
                                            int64_t expected_tokens) {
  if (type == DType::e4m3)
    throw InvalidArgument("type", "e4m3",
                          "groups along the tokens take bf16 or fp16 dY and X (experts' FP8 "
                          "weight gradients are not built)");
  GemmProblem p = weight_gradient_problem(tokens, out_features, in_features, type, accumulate,
                                          dw_type);
  p.grouping = Grouping::k_contiguous;
  p.num_groups = num_groups;
  p.expected_m = expected_tokens;
  validate(p);
  return p;
}

GemmReport grouped_weight_gradient(const GemmProblem& problem, const void* dy, const void* x,
                                   void* dw, const int32_t* group_ends, cudaStream_t stream,
                                   const GemmOptions& options) {
  if (problem.grouping != Grouping::k_contiguous)
    throw InvalidArgument("problem.grouping", std::string(to_string(problem.grouping)),
                          "grouped_weight_gradient() takes groups along the tokens "
                          "(grouped_weight_gradient_problem)");
  validate(problem);
  for (auto [name, pointer] : {std::pair{"dy", dy}, {"x", x}, {"dw", static_cast<const void*>(dw)},
                               {"group_ends", static_cast<const void*>(group_ends)}})
    if (!pointer)
      throw InvalidArgument(name, "nullptr", "must point to device memory");
  runtime::GroupArrays groups;
  groups.group_ends = group_ends;
  return runtime::launch_grouped(problem, wgrad_operands(problem, dy, x, dw), groups, stream,
                                 options, "grouped_weight_gradient()");
}

void check_group_ends(const GemmProblem& problem, std::span<const int64_t> group_ends) {
  if (int64_t(group_ends.size()) != problem.num_groups)
    throw InvalidArgument("group_ends", fmt::format("{} entries", group_ends.size()),
                          fmt::format("must have one entry per group ({})", problem.num_groups));
  int64_t start = 0;
  for (size_t g = 0; g < group_ends.size(); ++g) {
    if (group_ends[g] < start)
      throw InvalidArgument(fmt::format("group_ends[{}]", g), std::to_string(group_ends[g]),
                            fmt::format("group {} would end before it starts (token {}): ends "
                                        "must not decrease",
                                        g, start));
    if (group_ends[g] > problem.k)
      throw InvalidArgument(fmt::format("group_ends[{}]", g), std::to_string(group_ends[g]),
                            fmt::format("group {} ends past the {} tokens of dY and X", g,
                                        problem.k));
    start = group_ends[g];
  }
}

GemmReport weight_gradient(const GemmProblem& problem, const void* dy, const void* x, void* dw,
                           cudaStream_t stream, const GemmOptions& options) {
  if (problem.scaling == Scaling::block_1x128_1x128)
    throw InvalidArgument("problem.scaling", "block_1x128_1x128",
                          "an FP8 weight gradient takes the transposed FP8 copies and their "
                          "scales: weight_gradient(problem, Fp8WeightGradientOperands, ...)");
  if (problem.layout != Layout::tn)
    throw InvalidArgument("problem.layout", std::string(to_string(problem.layout)),
                          "a weight gradient's dY and X are token-major: layout tn "
                          "(weight_gradient_problem)");
  const GemmOperands o = wgrad_operands(problem, dy, x, dw);
  return gemm(problem, o, stream, options);
}

GemmReport weight_gradient(const GemmProblem& problem, const Fp8WeightGradientOperands& operands,
                           void* dw, cudaStream_t stream, const GemmOptions& options) {
  for (auto [name, value, ok] :
       {std::tuple{"problem.scaling", to_string(problem.scaling),
                   problem.scaling == Scaling::block_1x128_1x128},
        {"problem.layout", to_string(problem.layout), problem.layout == Layout::nt}})
    if (!ok)
      throw InvalidArgument(name, std::string(value),
                            "FP8 weight-gradient operands need the problem of "
                            "weight_gradient_problem(..., DType::e4m3): block_1x128_1x128, "
                            "layout nt");
  for (auto [name, pointer] :
       {std::pair{"operands.dy_t", operands.dy_t},
        {"operands.dy_t_scales", static_cast<const void*>(operands.dy_t_scales)},
        {"operands.x_t", operands.x_t},
        {"operands.x_t_scales", static_cast<const void*>(operands.x_t_scales)},
        {"dw", static_cast<const void*>(dw)}})
    if (!pointer) throw InvalidArgument(name, "nullptr", "must point to device memory");
  GemmOperands o = wgrad_operands(problem, operands.dy_t, operands.x_t, dw);
  o.scale_a = operands.dy_t_scales;
  o.scale_b = operands.x_t_scales;
  return gemm(problem, o, stream, options);
}

}  // namespace autogemm
