#pragma once
// The dense twin of a grouped bench row: one plain GEMM of the row's valid rows (summed over its
// groups) x N x K, of the same input and output types (block-scaled FP8 included), run by our
// dense kernel (gemm(), without the cuBLASLt fallback) and timed in the row's loop. Our grouped
// TFLOP/s over the twin's says how close the grouped call comes to one dense GEMM of the same
// rows: issue 23's target is FP8 contiguous prefill rows within 10% of it.
#include <cuda_runtime_api.h>

#include "autogemm/gemm.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/grouped_inputs.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

// The twin's problem: m = item.valid_rows(), the row's n, k and types (FP8: the same block
// scaling), layout nt, packed, not grouped. Its flops are the row's useful flops.
GemmProblem dense_twin_problem(const GroupedItem& item);

class DenseTwin {
 public:
  // Reads the row's own inputs, the same values in the same layouts: the first valid_rows() rows
  // of A (and of its A scales: one row of scales per stored row), group 0's B (and its scales).
  // Its D is its own, allocated here (valid rows x N) and freed with the twin.
  DenseTwin(const GroupedItem& item, const GroupedInputs& inputs, const GemmOptions& options);
  // gemm() on `stream`; keeps the report of the last call.
  void operator()(cudaStream_t stream);
  const GemmReport& report() const { return report_; }

 private:
  GemmProblem problem_;
  GemmOptions options_;
  DeviceBuffer d_;
  GemmOperands operands_;
  GemmReport report_;
};

}  // namespace autogemm::bench
