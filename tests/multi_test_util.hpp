#pragma once
// Helpers for the multi-GPU tests (tests/test_multi_*.cpp).
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/cuda_check.hpp"
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

// Waits for everything on GPUs 0..gpus-1, then makes GPU 0 current again.
inline void synchronize_gpus(int gpus) {
  for (int g = 0; g < gpus; ++g) {
    cuda_check(cudaSetDevice(g), "cudaSetDevice(test)");
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(test)");
  }
  cuda_check(cudaSetDevice(0), "cudaSetDevice(test)");
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace autogemm::testing
