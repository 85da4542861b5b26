#pragma once
// A packed weight's arrays from Python (quantize_weight's QuantizedWeight, autogemm/weights.hpp):
// the values as bytes, the scales and zeros with their dtypes and shapes checked against N and
// K, under an optional leading groups dimension (grouped_gemm's experts). gemm() and
// grouped_gemm() share these rules.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/weights.hpp"
#include "binding.hpp"

namespace autogemm::python {

// "int4-g128", ...: InvalidArgument("format", ...) for an unknown name.
WeightFormat parse_weight_format_arg(const std::string& format);

// The packed values are uint8 or int8 bytes: InvalidArgument("b", ...) otherwise.
void check_weight_values(const ArrayView& b);

struct WeightArrays {
  std::optional<ArrayView> scales, zeros;   // zeros for int4-g128-zp only
};

// scales: bfloat16 (or uint16 bits) [groups..., N, K/128] for int4, uint8 e8m0 [..., N, K/32]
// for mxfp4, float32 [..., N] for int8; zeros uint8 [..., N, K/128] for int4-g128-zp and None
// otherwise; all packed. `groups`: {} for one weight, {G} for G experts stacked.
WeightArrays import_weight_scales(WeightFormat f, nb::handle scales, nb::handle zeros,
                                  const std::vector<int64_t>& groups, int64_t n, int64_t k);

}  // namespace autogemm::python
