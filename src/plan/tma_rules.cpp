// cuTensorMapEncodeTiled's parameter rules, taken from its documentation in CUDA 13.0 cuda.h
// (summarised in hopper-facts.md 3.1), so that a bad tensor map is reported with the field
// that broke a rule instead of the driver's bare CUDA_ERROR_INVALID_VALUE.
#include "plan/tma_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "autogemm/errors.hpp"

namespace autogemm::plan {
namespace {

constexpr int kMaxRank = 5;                          // "maximum supported dimensionality of 5"
constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;  // "less than or equal to 2^32"
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;   // "less than 2^40"
constexpr uint32_t kMaxBoxDim = 256;                 // "less than or equal to 256"
constexpr uint32_t kMaxElementStride = 8;            // "less than or equal to 8"
constexpr int kGlobalAlignment = 16;                 // address and strides: 16-byte multiples
constexpr int kInnerBoxGranule = 16;                 // boxDim[0] * elemsize: multiple of 16 B

std::string indexed(std::string_view field, size_t i) { return fmt::format("{}[{}]", field, i); }

std::string rule_broken(const std::string& field, const std::string& value, std::string_view rule) {
  return fmt::format("{} = {}: {}", field, value, rule);
}

bool valid_elem_bytes(int b) { return b == 1 || b == 2 || b == 4 || b == 8; }

}  // namespace

int tma_swizzle_code(Swizzle s) {
  switch (s) {
    case Swizzle::none: return 0;  // CU_TENSOR_MAP_SWIZZLE_NONE
    case Swizzle::b32: return 1;   // CU_TENSOR_MAP_SWIZZLE_32B
    case Swizzle::b64: return 2;   // CU_TENSOR_MAP_SWIZZLE_64B
    case Swizzle::b128: return 3;  // CU_TENSOR_MAP_SWIZZLE_128B
  }
  return 0;
}

std::string tma_address_violation(std::string_view name, uint64_t address) {
  if (address % kGlobalAlignment == 0) return {};
  return fmt::format("{} = {:#x}: TMA needs a 16-byte aligned global address", name, address);
}

int tma_l2_promotion_bytes(uint64_t address, uint64_t row_pitch_bytes) {
  constexpr uint64_t kWide = kTmaWidePromotionBytes;
  return address % kWide == 0 && row_pitch_bytes % kWide == 0 ? kTmaWidePromotionBytes : 128;
}

std::string tma_violation(const TmaDescription& d) {
  if (d.rank < 1 || d.rank > kMaxRank)
    return rule_broken("rank", std::to_string(d.rank), "tensor maps have rank 1..5");
  if (d.interleaved && d.rank < 3)
    return rule_broken("rank", std::to_string(d.rank), "interleaved tensor maps need rank >= 3");
  if (!valid_elem_bytes(d.elem_bytes))
    return rule_broken("elem_bytes", std::to_string(d.elem_bytes),
                       "TMA element types are 1, 2, 4 or 8 bytes");

  const size_t rank = size_t(d.rank);
  auto count_rule = [&](std::string_view field, size_t have, size_t want) {
    return rule_broken(std::string(field), fmt::format("{} entries", have),
                       fmt::format("rank {} needs {} entries", d.rank, want));
  };
  if (d.global_dims.size() != rank) return count_rule("global_dims", d.global_dims.size(), rank);
  if (d.global_strides.size() != rank - 1)
    return count_rule("global_strides", d.global_strides.size(), rank - 1);
  if (d.box_dims.size() != rank) return count_rule("box_dims", d.box_dims.size(), rank);
  if (!d.element_strides.empty() && d.element_strides.size() != rank)
    return count_rule("element_strides", d.element_strides.size(), rank);

  if (auto why = tma_address_violation("global_address", d.global_address); !why.empty())
    return why;

  for (size_t i = 0; i < rank; ++i) {
    const uint64_t dim = d.global_dims[i];
    if (dim == 0 || dim > kMaxGlobalDim)
      return rule_broken(indexed("global_dims", i), std::to_string(dim), "must be in 1..2^32");
  }

  // Stride i (bytes) steps dimension i+1. cuda.h defines each stride as the previous extent
  // plus non-negative padding: strides[0] >= dims[0] * elem, strides[i] >= strides[i-1] * dims[i].
  uint64_t extent_below = d.global_dims[0] * uint64_t(d.elem_bytes);
  for (size_t i = 0; i + 1 < rank; ++i) {
    const uint64_t stride = d.global_strides[i];
    const std::string field = indexed("global_strides", i);
    const std::string value = fmt::format("{} bytes", stride);
    if (stride % kGlobalAlignment != 0) return rule_broken(field, value, "must be a multiple of 16");
    if (stride >= kStrideLimit) return rule_broken(field, value, "must be below 2^40 bytes");
    if (!d.interleaved && stride < extent_below)
      return rule_broken(field, value,
                         fmt::format("must be at least the {} bytes of the dimension below it "
                                     "(global_dims[{}] = {})",
                                     extent_below, i, d.global_dims[i]));
    // Saturate: a product past 2^64 can never be matched by a stride below 2^40 anyway.
    const uint64_t next_dim = d.global_dims[i + 1];
    extent_below = (stride != 0 && next_dim > UINT64_MAX / stride) ? UINT64_MAX : stride * next_dim;
  }

  for (size_t i = 0; i < rank; ++i) {
    const uint32_t box = d.box_dims[i];
    if (box == 0 || box > kMaxBoxDim)
      return rule_broken(indexed("box_dims", i), std::to_string(box), "must be in 1..256");
  }
  const uint64_t inner_box_bytes = uint64_t(d.box_dims[0]) * uint64_t(d.elem_bytes);
  const std::string inner_value = fmt::format("{} ({} bytes)", d.box_dims[0], inner_box_bytes);
  if (!d.interleaved && inner_box_bytes % kInnerBoxGranule != 0)
    return rule_broken("box_dims[0]", inner_value, "the inner box must be a multiple of 16 bytes");

  for (size_t i = 0; i < d.element_strides.size(); ++i) {
    const uint32_t stride = d.element_strides[i];
    if (stride == 0 || stride > kMaxElementStride)
      return rule_broken(indexed("element_strides", i), std::to_string(stride), "must be in 1..8");
  }

  // With INTERLEAVE_NONE and a swizzle, the inner box may not exceed the swizzle span.
  if (!d.interleaved && d.swizzle != Swizzle::none) {
    const int span = swizzle_bytes(d.swizzle);
    if (inner_box_bytes > uint64_t(span))
      return rule_broken("box_dims[0]", inner_value,
                         fmt::format("inner box must be <= {} bytes with {} swizzle", span,
                                     to_string(d.swizzle)));
  }
  return {};
}

SwizzleChoice recommend_swizzle(int contiguous_elems, int elem_bytes) {
  if (contiguous_elems < 1)
    throw InvalidArgument("contiguous_elems", std::to_string(contiguous_elems),
                          "a tile has at least one contiguous element");
  if (!valid_elem_bytes(elem_bytes))
    throw InvalidArgument("elem_bytes", std::to_string(elem_bytes),
                          "TMA element types are 1, 2, 4 or 8 bytes");
  const int64_t contiguous_bytes = int64_t(contiguous_elems) * elem_bytes;
  // Widest first: a wider span spreads each row's 16-byte chunks over more banks.
  for (Swizzle s : {Swizzle::b128, Swizzle::b64, Swizzle::b32}) {
    const int span = swizzle_bytes(s);
    if (contiguous_bytes >= span) return {s, uint32_t(span / elem_bytes)};
  }
  // Narrower than 32 bytes: no swizzle; round the box up to whole 16-byte units (the rest is
  // zero-filled out of bounds), at most 256 elements (a multiple of 16 bytes for every size).
  const int64_t granule_elems = kInnerBoxGranule / elem_bytes;
  int64_t inner = (contiguous_elems + granule_elems - 1) / granule_elems * granule_elems;
  inner = std::min<int64_t>(inner, kMaxBoxDim);
  return {Swizzle::none, uint32_t(inner)};
}

}  // namespace autogemm::plan
