#pragma once
// The fused epilogue (issue 50): D = act(alpha * acc * row_scale[m] * col_scale[n] + bias[n])
// + beta * C, computed in fp32 registers before D is rounded and stored.
//
// What is fused is a field of the problem (GemmProblem::epilogue): it decides the generated
// kernel (its Config, so its cache key), so it is planned and cached like the types. The vectors
// themselves are per call (GemmOperands::bias, row_scale, col_scale), like A and B. It is a
// problem field rather than a GemmOptions field because options say how to run a problem, never
// what it computes: a problem with a bias is a different GEMM.
#include <cstdint>
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
  // Gated MLP (SwiGLU with silu, GeGLU with gelu_tanh or gelu_erf, ReGLU with relu): the GEMM
  // computes the gate and up projections together and D = act(gate) * up has N / 2 columns.
  // B's N rows (and the bias and col_scale, which apply before the gate) hold them interleaved
  // in runs of kGateRun: rows 16 j .. 16 j + 7 are gate rows 8 j .., the next 8 up rows 8 j ..
  // (interleave_gate_up() arranges two halves that way). Output column c is gate row c times up
  // row c. Needs an activation and N a multiple of 16.
  bool gated = false;

  // No fusion: the plain D = alpha * acc + beta * C (the kernels are generated as before).
  bool empty() const {
    return !bias && activation == Activation::none && !row_scale && !col_scale && !gated;
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
// Rows of gate, then of up, alternate in runs of this many in a gated GEMM's B: one 8-column step
// of the wgmma accumulator (each thread's gate pair and its up pair are the same output pair).
inline constexpr int kGateRun = 8;

// The gated layout from two halves, in host memory: `gate` and `up` are packed [rows,
// row_elements] matrices of `element_bytes`-byte elements (a checkpoint's w1 / w3, or gate_proj /
// up_proj), `out` receives the packed [2 rows, row_elements] B, interleaved in runs of kGateRun
// rows. A bias or col_scale is a matrix of one-element rows. Throws InvalidArgument when rows is
// not a positive multiple of kGateRun. (Python: autogemm.interleave_gate_up, on any device.)
void interleave_gate_up(const void* gate, const void* up, void* out, int64_t rows,
                        int64_t row_elements, int element_bytes);

Epilogue parse_epilogue(std::string_view spec, DType default_bias_type,
                        const std::string& argument = "epilogue");

}  // namespace autogemm
