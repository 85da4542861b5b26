#pragma once
// Restores the caller's current CUDA device however a scope ends: code that walks several GPUs
// (profiling, multi-GPU execution) must not leave the caller on another device.
#include <cuda_runtime_api.h>

namespace autogemm {

struct CurrentDeviceGuard {
  int saved = -1;
  CurrentDeviceGuard() {
    if (cudaGetDevice(&saved) != cudaSuccess) saved = -1;
  }
  ~CurrentDeviceGuard() {
    if (saved >= 0) cudaSetDevice(saved);
  }
  CurrentDeviceGuard(const CurrentDeviceGuard&) = delete;
  CurrentDeviceGuard& operator=(const CurrentDeviceGuard&) = delete;
};

}  // namespace autogemm
