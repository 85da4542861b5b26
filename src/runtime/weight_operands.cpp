#include "runtime/weight_operands.hpp"

#include <fmt/format.h>

#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/weights.hpp"

namespace autogemm::runtime {

void check_weight_operands(const GemmProblem& p, const GemmOperands& o) {
  if (!p.weight_format) {
    if (o.b_scales || o.b_zeros)
      throw InvalidArgument(o.b_scales ? "b_scales" : "b_zeros", "a pointer",
                            "b_scales and b_zeros are read with problem.weight_format only");
    return;
  }
  const std::string format(to_string(*p.weight_format));
  if (!o.b_scales)
    throw InvalidArgument("b_scales", "nullptr", fmt::format("{} weights need their scales", format));
  const bool zeros = *p.weight_format == WeightFormat::int4_g128_zp;
  if (zeros != (o.b_zeros != nullptr))
    throw InvalidArgument("b_zeros", zeros ? "nullptr" : "a pointer",
                          zeros ? "int4-g128-zp weights need their zeros"
                                : fmt::format("{} weights have no zeros: pass null", format));
  if (p.scaling != Scaling::none || o.scale_a || o.scale_b)
    throw InvalidArgument(o.scale_a ? "scale_a" : "scale_b", "a pointer",
                          "weight-only weights carry their scales in b_scales; scale_a and "
                          "scale_b are FP8's");
}

}  // namespace autogemm::runtime
