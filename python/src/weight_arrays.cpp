#include "weight_arrays.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"

namespace autogemm::python {

WeightFormat parse_weight_format_arg(const std::string& format) {
  const std::optional<WeightFormat> f = parse_weight_format(format);
  if (!f) throw InvalidArgument("format", format, "expected int4-g128, int4-g128-zp, int8 or mxfp4");
  return *f;
}

void check_weight_values(const ArrayView& b) {
  const bool bytes = b.dtype.bits == 8 && (b.dtype.code == uint8_t(nb::dlpack::dtype_code::UInt) ||
                                           b.dtype.code == uint8_t(nb::dlpack::dtype_code::Int));
  if (!bytes)
    throw InvalidArgument("b", b.dtype_text(),
                          "a packed weight's values are uint8 or int8 bytes (quantize_weight)");
}

WeightArrays import_weight_scales(WeightFormat f, nb::handle scales, nb::handle zeros,
                                  const std::vector<int64_t>& groups, int64_t n, int64_t k) {
  const std::string sizes = groups.empty() ? fmt::format("N = {}, K = {}", n, k)
                                           : fmt::format("groups = {}, N = {}, K = {}", groups[0], n, k);
  const std::string lead = groups.empty() ? "" : "groups, ";
  WeightArrays w;
  w.scales = import_array("scales", scales, false);
  const ArrayView& s = *w.scales;
  const bool int8 = f == WeightFormat::int8_channel, mx = f == WeightFormat::mxfp4;
  std::vector<int64_t> want = groups;
  want.push_back(n);
  if (!int8) want.push_back(k / weight_group_size(f));
  const std::string words = int8 && groups.empty() ? "(N,)"
                            : "(" + lead + (int8 ? "N)" : mx ? "N, K/32)" : "N, K/128)");
  const bool unsigned_bits = s.dtype.code == uint8_t(nb::dlpack::dtype_code::UInt);
  const bool right_type = int8 ? element_type(s) == DType::fp32
                          : mx ? unsigned_bits && s.dtype.bits == 8
                               : element_type(s) == DType::bf16 || (unsigned_bits && s.dtype.bits == 16);
  if (!right_type)
    throw InvalidArgument("scales", s.dtype_text(),
                          int8 ? "int8 weights have float32 scales, one per row"
                          : mx ? "mxfp4 weights have e8m0 scales as uint8, one per 32 of K"
                               : "int4 weights have bfloat16 scales, one per 128 of K");
  if (s.shape != want)
    throw InvalidArgument("scales", fmt::format("an array of shape {}", s.shape_text()),
                          fmt::format("must be {} for {} ({})", shape_text(want), to_string(f), sizes));
  require_packed_dims(s, want.size(), words.c_str());
  const bool has_zeros = f == WeightFormat::int4_g128_zp;
  if (has_zeros != !zeros.is_none())
    throw InvalidArgument("zeros", has_zeros ? "None" : "an array",
                          has_zeros ? "int4-g128-zp weights need their zeros"
                                    : fmt::format("{} weights have no zeros", to_string(f)));
  if (has_zeros) {
    w.zeros = import_array("zeros", zeros, false);
    const ArrayView& z = *w.zeros;
    if (!(z.dtype.code == uint8_t(nb::dlpack::dtype_code::UInt) && z.dtype.bits == 8))
      throw InvalidArgument("zeros", z.dtype_text(), "zeros are uint8, one per scale");
    if (z.shape != want)
      throw InvalidArgument("zeros", fmt::format("an array of shape {}", z.shape_text()),
                            fmt::format("must be {} ({})", shape_text(want), sizes));
    require_packed_dims(z, want.size(), words.c_str());
  }
  return w;
}

}  // namespace autogemm::python
