#include "runtime/fp8_source.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "kernels/sm90/fp8_scales.cuh"
#include "runtime/wgmma_asm.hpp"

namespace autogemm::runtime {

namespace {

int scaling_kind(Scaling s) {
  switch (s) {
    case Scaling::none: return sm90::kScalingNone;
    case Scaling::per_tensor: return sm90::kScalingPerTensor;
    case Scaling::block_1x128_128x128: return sm90::kScalingBlock;
  }
  return sm90::kScalingNone;
}

}  // namespace

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

void check_input_type_rules(const GemmProblem& p, const GemmConfig& c) {
  const bool sixteen_bit = p.a_type == DType::bf16 || p.a_type == DType::fp16;
  if (!sixteen_bit && !is_fp8(p.a_type))
    throw InvalidArgument("a_type", std::string(to_string(p.a_type)),
                          "the sm90 kernel takes bf16, fp16, e4m3 or e5m2 inputs");
  if (sixteen_bit) {
    if (c.promotion_buffers != 1)
      throw InvalidArgument("config.promotion_buffers", std::to_string(c.promotion_buffers),
                            "16-bit inputs accumulate in place: promotion buffers exist for FP8 "
                            "only (must be 1)");
    if (c.ordered_issue)
      throw InvalidArgument("config.ordered_issue", "true",
                            "16-bit inputs have no promotion for the other consumer to hide: "
                            "ordered issue is an FP8 option");
    return;
  }
  if (c.promotion_buffers != 1 && c.promotion_buffers != 2)
    throw InvalidArgument("config.promotion_buffers", std::to_string(c.promotion_buffers),
                          "FP8 promotes from 1 or 2 temporaries");
  if (c.promotion_buffers == 2 && c.num_stages < 2)
    throw InvalidArgument("config.promotion_buffers", "2",
                          fmt::format("overlapped promotion keeps one wgmma group in flight, "
                                      "which needs >= 2 stages (num_stages = {})",
                                      c.num_stages));
  if (c.ordered_issue && (c.num_consumers != 2 || !c.warp_specialized))
    throw InvalidArgument("config.ordered_issue", "true",
                          fmt::format("the consumers take turns issuing: needs 2 consumer "
                                      "warpgroups and the producer warpgroup (num_consumers = "
                                      "{}, warp_specialized = {})",
                                      c.num_consumers, c.warp_specialized));
  if (!is_fp8(p.b_type))
    throw InvalidArgument("b_type", std::string(to_string(p.b_type)),
                          "must be e4m3 or e5m2 when a_type is FP8");
  if (p.scaling == Scaling::none)
    throw InvalidArgument("scaling", "none", "the FP8 kernel needs per_tensor or block scales");
  if (!a_is_k_major(p.layout) || !b_is_k_major(p.layout))
    throw InvalidArgument("layout", std::string(to_string(p.layout)),
                          "FP8 wgmma reads both operands K-major (layout nt)");
  if (c.load_path != LoadPath::tma)
    throw InvalidArgument("config.load_path", std::string(to_string(c.load_path)),
                          "FP8 tiles arrive by TMA (the threads path copies 16-bit elements)");
  if (p.scaling == Scaling::block_1x128_128x128 && !c.warp_specialized)
    throw InvalidArgument("config.warp_specialized", "false",
                          "block-scaled FP8 needs the producer warpgroup: its second warp copies "
                          "each k-block's scales into shared memory");
  if (p.scaling == Scaling::block_1x128_128x128 &&
      sm90::max_b_scale_blocks_per_tile(c.block_n) > sm90::kMaxBScaleBlocksPerTile)
    throw InvalidArgument(
        "config.block_n", std::to_string(c.block_n),
        fmt::format("block-scaled FP8: a tile may touch at most {} 128-column B scale blocks; "
                    "{}-column tiles can touch {} (block_n <= 128 + gcd(block_n, 128))",
                    sm90::kMaxBScaleBlocksPerTile, c.block_n,
                    sm90::max_b_scale_blocks_per_tile(c.block_n)));
}

std::string input_type_members(const GemmProblem& p, const GemmConfig& c) {
  const bool fp8 = is_fp8(p.a_type);
  std::string members =
      fmt::format("  static constexpr int in_bytes = {}, scaling = {}, promotion_buffers = {};\n"
                  "  static constexpr bool ordered_issue = {};\n",
                  dtype_bytes(p.a_type), fp8 ? scaling_kind(p.scaling) : sm90::kScalingNone,
                  c.promotion_buffers, c.ordered_issue);
  if (fp8) return members + wgmma_fp8_mma_function(c.block_n, p.a_type, p.b_type);
  return members + wgmma_mma_function(c.block_n, p.a_type, !a_is_k_major(p.layout),
                                      !b_is_k_major(p.layout));
}

std::string input_type_name_suffix(const GemmProblem& p, const GemmConfig& c) {
  if (!is_fp8(p.a_type)) return {};
  return fmt::format("_{}_{}{}{}", to_string(p.b_type),
                     p.scaling == Scaling::per_tensor ? "pt" : "blk",
                     c.promotion_buffers > 1 ? fmt::format("_pb{}", c.promotion_buffers) : "",
                     c.ordered_issue ? "_oi" : "");
}

}  // namespace autogemm::runtime
