// The grouped bench's dense twin (grouped_dense.hpp).
#include "bench/grouped_dense.hpp"

namespace autogemm::bench {

GemmProblem dense_twin_problem(const GroupedItem& item) {
  const GemmProblem p = dense_problem(item.problem, item.valid_rows());
  validate(p);
  return p;
}

DenseTwin::DenseTwin(const GroupedItem& item, const GroupedInputs& inputs,
                     const GemmOptions& options)
    : problem_(dense_twin_problem(item)),
      options_(options),
      d_(std::size_t(problem_.m * problem_.n) * dtype_bytes(problem_.d_type)) {
  // "Our dense kernel": a shape it does not serve is n/a, not cuBLASLt's time.
  options_.allow_vendor_fallback = false;
  const GroupedOperands grouped = inputs.operands();
  operands_.a = grouped.a;           // rows 0 .. m-1 of the stored rows (m <= stored rows)
  operands_.b = grouped.b;           // group 0's N x K
  operands_.d = d_.get();
  operands_.scale_a = grouped.scale_a;   // FP8: rows 0 .. m-1 of [stored rows, ceil(K/128)]
  operands_.scale_b = grouped.scale_b;   // FP8: group 0's [ceil(N/128), ceil(K/128)]
}

void DenseTwin::operator()(cudaStream_t stream) {
  report_ = gemm(problem_, operands_, stream, options_);
}

}  // namespace autogemm::bench
