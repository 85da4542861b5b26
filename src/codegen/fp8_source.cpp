#include "codegen/fp8_source.hpp"

#include <fmt/format.h>

#include "codegen/wgmma_asm.hpp"
#include "plan/rules.hpp"

namespace autogemm::codegen {

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

std::string input_type_members(const GemmProblem& p, const GemmConfig& c) {
  const bool fp8 = is_fp8(p.a_type);
  std::string members =
      fmt::format("  static constexpr int in_bytes = {}, scaling = {}, promotion_buffers = {};\n"
                  "  static constexpr bool ordered_issue = {};\n",
                  dtype_bytes(p.a_type), plan::kernel_scaling(p),
                  c.promotion_buffers, c.ordered_issue);
  if (fp8) return members + wgmma_fp8_mma_function(c.block_n, p.a_type, p.b_type);
  return members + wgmma_mma_function(c.block_n, p.a_type, !a_is_k_major(p.layout),
                                      !b_is_k_major(p.layout));
}

std::string input_type_name_suffix(const GemmProblem& p, const GemmConfig& c) {
  if (!is_fp8(p.a_type)) return {};
  return fmt::format("_{}_{}{}{}", to_string(p.b_type),
                     p.scaling == Scaling::per_tensor ? "pt"
                     : p.scaling == Scaling::rowwise  ? "rw"
                     : p.scaling == Scaling::block_1x128_1x128 ? "b1d"
                                                      : "blk",
                     c.promotion_buffers > 1 ? fmt::format("_pb{}", c.promotion_buffers) : "",
                     c.ordered_issue ? "_oi" : "");
}

}  // namespace autogemm::codegen
