#include "autogemm/epilogue.hpp"

#include <fmt/format.h>

#include <cstring>
#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

Epilogue kernel_epilogue(const GemmProblem& p) {
  Epilogue e = p.epilogue;
  if (p.scaling == Scaling::rowwise) e.row_scale = e.col_scale = true;
  return e;
}

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::gelu_erf: return "gelu_erf";
    case Activation::silu: return "silu";
  }
  return "?";
}

std::optional<Activation> parse_activation(std::string_view s) {
  for (Activation a : {Activation::none, Activation::relu, Activation::gelu_tanh,
                       Activation::gelu_erf, Activation::silu})
    if (s == to_string(a)) return a;
  if (s == "gelu") return Activation::gelu_tanh;   // PyTorch's approximate='tanh', cuBLASLt's GELU
  if (s == "swish") return Activation::silu;
  return std::nullopt;
}

std::string Epilogue::describe() const {
  if (empty()) return "none";
  std::string text;
  const auto add = [&](std::string item) { text += (text.empty() ? "" : ", ") + item; };
  if (row_scale) add("row_scale");
  if (col_scale) add("col_scale");
  if (bias) add(fmt::format("bias {}", to_string(*bias)));
  if (activation != Activation::none)
    add(gated ? fmt::format("gated {}", to_string(activation)) : std::string(to_string(activation)));
  else if (gated)
    add("gated");
  return text;
}

std::string Epilogue::formula() const {
  std::string x = "alpha * acc";
  if (row_scale) x += " * row_scale[m]";
  if (col_scale) x += " * col_scale[n]";
  if (bias) x += " + bias[n]";
  if (gated)
    return fmt::format("{}(g) * u + beta * C, g and u = {} at B's gate and up rows n "
                       "(interleaved in runs of 8; N / 2 columns)",
                       to_string(activation), x);
  if (activation != Activation::none) x = fmt::format("{}({})", to_string(activation), x);
  return x + " + beta * C";
}

std::string Epilogue::token() const {
  if (empty()) return "";
  std::string t;
  const auto add = [&](std::string_view item) {
    if (!t.empty()) t += '_';
    t += item;
  };
  if (row_scale) add("rs");
  if (col_scale) add("cs");
  if (bias) add(*bias == DType::bf16 ? "bbf16" : "bfp32");
  if (activation != Activation::none) add(to_string(activation));
  if (gated) add("glu");
  return t;
}

Epilogue parse_epilogue(std::string_view spec, DType default_bias_type,
                        const std::string& argument) {
  Epilogue e;
  if (spec == "none") return e;
  std::size_t begin = 0;
  while (begin <= spec.size()) {
    const std::size_t end = std::min(spec.find(',', begin), spec.size());
    const std::string_view item = spec.substr(begin, end - begin);
    begin = end + 1;
    if (item == "bias") {
      e.bias = default_bias_type;
    } else if (item.substr(0, 5) == "bias=") {
      const std::optional<DType> t = parse_dtype(item.substr(5));
      if (!t || (*t != DType::bf16 && *t != DType::fp32))
        throw InvalidArgument(argument, std::string(item), "the bias is bf16 or fp32");
      e.bias = *t;
    } else if (item == "gated") {
      e.gated = true;
    } else if (item == "row_scale" || item == "row-scale") {
      e.row_scale = true;
    } else if (item == "col_scale" || item == "col-scale") {
      e.col_scale = true;
    } else if (const std::optional<Activation> a = parse_activation(item);
               a && *a != Activation::none) {
      if (e.activation != Activation::none)
        throw InvalidArgument(argument, std::string(item), "one activation per epilogue");
      e.activation = *a;
    } else {
      throw InvalidArgument(argument, std::string(item),
                            "items are bias, bias=bf16|fp32, relu, gelu_tanh (gelu), gelu_erf, "
                            "silu, gated, row_scale, col_scale, comma-separated (or none)");
    }
  }
  return e;
}

void interleave_gate_up(const void* gate, const void* up, void* out, int64_t rows,
                        int64_t row_elements, int element_bytes) {
  if (rows < 1 || rows % kGateRun != 0)
    throw InvalidArgument("rows", std::to_string(rows),
                          fmt::format("gate and up rows interleave in runs of {}: rows must be a "
                                      "positive multiple of {}",
                                      kGateRun, kGateRun));
  const auto* g = static_cast<const unsigned char*>(gate);
  const auto* u = static_cast<const unsigned char*>(up);
  auto* o = static_cast<unsigned char*>(out);
  const std::size_t run = std::size_t(kGateRun) * row_elements * element_bytes;
  for (int64_t j = 0; j < rows / kGateRun; ++j) {
    std::memcpy(o + 2 * j * run, g + j * run, run);
    std::memcpy(o + (2 * j + 1) * run, u + j * run, run);
  }
}

}  // namespace autogemm
