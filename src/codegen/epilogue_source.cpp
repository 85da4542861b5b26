#include "codegen/epilogue_source.hpp"

#include <fmt/format.h>

#include "autogemm/problem.hpp"

namespace autogemm::codegen {

std::string epilogue_member(const Epilogue& e) {
  if (e.empty()) return {};
  // fused_epilogue.cuh's codes: bias 1 bf16, 2 fp32; activations in autogemm::Activation order.
  const int bias = !e.bias ? 0 : *e.bias == DType::bf16 ? 1 : 2;
  // The gated flag only where set: other fused kernels keep their sources (and cache keys).
  return fmt::format("  using epilogue = EpilogueFields<{}, {}, {}, {}{}>;   // {}\n", bias,
                     int(e.activation), e.row_scale, e.col_scale, e.gated ? ", true" : "",
                     e.describe());
}

std::string epilogue_name_suffix(const Epilogue& e) {
  return e.empty() ? std::string() : "_epi_" + e.token();
}

}  // namespace autogemm::codegen
