#pragma once
// autogemm._core.grouped_gemm: Python arrays -> autogemm::grouped_gemm (grouped_call.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "autogemm/gemm.hpp"
#include "binding.hpp"

namespace autogemm::python {

struct GroupedRequest {
  nb::handle a, b, out, group_index, masked_m, alloc;
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
