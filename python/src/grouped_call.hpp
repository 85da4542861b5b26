#pragma once
// autogemm._core.grouped_gemm: Python arrays -> autogemm::grouped_gemm (grouped_call.cpp):
// bfloat16 / float16 inputs, block-scaled FP8 (e4m3) with a_scales and b_scales, or bfloat16
// activations with every expert's weight packed (masked layout).
#include <cstdint>
#include <optional>
#include <string>

#include "autogemm/gemm.hpp"
#include "binding.hpp"

namespace autogemm::python {

struct GroupedRequest {
  nb::handle a, b, out, group_index, masked_m, alloc;
  nb::handle a_scales, b_scales;                   // FP8 only; None otherwise
  // The fused epilogue per group: bias and col_scale (groups, N), row_scale one per stored row
  // ((M,) contiguous, (groups, max_m) masked); None when not fused.
  nb::handle bias, row_scale, col_scale;
  std::optional<std::string> activation;
  bool gated = false;   // D = act(gate) * up per group, N / 2 columns (autogemm/epilogue.hpp)
  std::optional<std::string> a_bytes, b_bytes;     // what torch FP8 tensors' uint8 views hold
  // A packed weight per expert (weight_arrays.hpp): b its values, these its scales and zeros.
  std::optional<std::string> weight_format;
  nb::handle weight_scales = nb::none(), weight_zeros = nb::none();
  std::optional<std::string> out_dtype, config;
  float alpha = 1.0f;
  int64_t expected_m = 0;
  uintptr_t stream = 0;
};

struct GroupedResult {
  nb::object out;       // the output array (the caller's, or the allocator's 2-D one)
  GemmReport report;
};

GroupedResult grouped_gemm_call(const GroupedRequest& request);

}  // namespace autogemm::python
