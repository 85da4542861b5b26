#pragma once
// The fused epilogue (issue 50): D = act(alpha * acc * row_scale[m] * col_scale[n] + bias[n])
// + beta * C, computed in fp32 registers before D is rounded and stored.
//
// What is fused is a field of the problem (GemmProblem::epilogue): it decides the generated
// kernel (its Config, so its cache key), so it is planned and cached like the types. The vectors
// themselves are per call (GemmOperands::bias, row_scale, col_scale), like A and B. It is a
// problem field rather than a GemmOptions field because options say how to run a problem, never
// what it computes: a problem with a bias is a different GEMM.
#include <optional>
#include <string>
#include <string_view>

namespace autogemm {

enum class DType : int;

enum class Activation { none, relu, gelu_tanh, gelu_erf, silu };
std::string_view to_string(Activation a);
std::optional<Activation> parse_activation(std::string_view s);  // "none", "relu", "gelu_tanh"
                                                                   // ("gelu"), "gelu_erf", "silu"

struct Epilogue {
  // Element type of bias[n] (N elements; bf16 or fp32), or none.
  std::optional<DType> bias;
  Activation activation = Activation::none;
  bool row_scale = false;   // fp32 row_scale[m], M elements (per-token scaling)
  bool col_scale = false;   // fp32 col_scale[n], N elements (per-channel scaling)

  // No fusion: the plain D = alpha * acc + beta * C (the kernels are generated as before).
  bool empty() const {
    return !bias && activation == Activation::none && !row_scale && !col_scale;
  }
  // "none", or e.g. "bias bf16, silu, row_scale, col_scale"
  std::string describe() const;
  // The whole expression, e.g. "silu(alpha * acc * row_scale[m] + bias[n]) + beta * C".
  std::string formula() const;
  // Short token for kernel names and keys: "" when empty, else e.g. "bbf16_silu_rs_cs".
  std::string token() const;
  friend bool operator==(const Epilogue&, const Epilogue&) = default;
};

// Parses the CLI/bench spelling: comma-separated items "bias" (bias in `default_bias_type`),
// "bias=bf16|fp32", an activation name, "row_scale", "col_scale"; "none" for none. Throws
// InvalidArgument(`argument`, the item, the rule) on an unknown item.
Epilogue parse_epilogue(std::string_view spec, DType default_bias_type,
                        const std::string& argument = "epilogue");

}  // namespace autogemm
