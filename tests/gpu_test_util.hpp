#pragma once
// Helpers for tests that need a GPU. Without one they skip with the reason, which CTest shows.
#include <gtest/gtest.h>

#include "autogemm/device.hpp"

namespace autogemm::testing {

// The first GPU, or nullptr with *reason set when none is usable for sm_90a kernels.
inline const GpuInfo* sm90_gpu(std::string* reason) {
  static const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty()) {
    *reason = profile.unavailable_reason;
    return nullptr;
  }
  const GpuInfo& g = profile.gpus.front();
  if (g.cc.major != 9 || g.cc.minor != 0) {
    *reason = "GPU " + g.name + " is not sm_90 (Hopper); the sm_90a kernels need one";
    return nullptr;
  }
  return &g;
}

}  // namespace autogemm::testing

// Skips the current test with the reason when there is no usable Hopper GPU.
#define AUTOGEMM_REQUIRE_GPU()                                                     \
  do {                                                                              \
    std::string agm_reason_;                                                        \
    if (::autogemm::testing::sm90_gpu(&agm_reason_) == nullptr)                     \
      GTEST_SKIP() << "GPU test skipped: " << agm_reason_;                          \
  } while (0)
