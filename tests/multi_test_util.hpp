#pragma once
// Helpers for the multi-GPU tests (tests/test_multi_*.cpp).
#include <cuda_runtime_api.h>

#include <string>

#include "error_test_util.hpp"  // expect_invalid

namespace autogemm::testing {

// CUDA devices present (0 without a driver).
inline int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace autogemm::testing
