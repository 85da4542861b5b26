#pragma once
// A compiled kernel loaded into the current context, cached per (device, cache key).
#include <cuda.h>

#include <memory>

#include "jit/jit.hpp"

namespace autogemm::jit {

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  int configured_smem = -1;   // dynamic smem attribute last set
  double load_ms = 0;
};

// Loads (once per device and key) and returns the function; thread-safe.
std::shared_ptr<LoadedKernel> load_kernel(const jit::CompiledKernel& compiled);

}  // namespace autogemm::jit
