#include "cli/row_problem.hpp"

#include "autogemm/errors.hpp"
#include "autogemm/wgrad.hpp"
#include "cli/cli_common.hpp"

namespace autogemm::cli {

void check_wgrad_types(const std::string& dtype, const std::string& out_dtype) {
  if (dtype != "bf16" && dtype != "fp16" && dtype != "fp8")
    throw InvalidArgument("--dtype", dtype,
                          "weight gradients run on bf16, fp16 or fp8 (e4m3 with 1x128 scales "
                          "along the tokens on both operands)");
  if (!out_dtype.empty() && out_dtype != "fp32")
    throw InvalidArgument("--out-dtype", out_dtype,
                          "a weight gradient accumulates into fp32 (a 16-bit C would round every "
                          "micro-batch's sum)");
}

GemmProblem row_problem(int64_t m, int64_t n, int64_t k, const RowOptions& o) {
  // --wgrad: the problem weight_gradient_problem makes of the row (FP8: the transposed copies,
  // layout nt, 1x128 scales on both, quantised by the caller from bf16 like every FP8 row).
  GemmProblem p = o.wgrad ? weight_gradient_problem(k, m, n, parse_dtype(o.dtype).value_or(DType::bf16))
                          : make_problem(m, n, k, o.dtype, o.layout, 0, 0, 0);
  if (!o.out_dtype.empty()) {
    const auto out = parse_dtype(o.out_dtype);
    if (!out || *out == DType::e4m3)
      throw InvalidArgument("--out-dtype", o.out_dtype,
                            "expected bf16, fp16 or fp32 (FP8 output is timed by "
                            "bench/mlp_block.py)");
    p.d_type = *out;
  }
  p.reads_c = o.accumulate || o.wgrad;
  return p;
}

}  // namespace autogemm::cli
