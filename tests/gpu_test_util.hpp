#pragma once
// Helpers for tests that need a GPU. Without one they skip with the reason, which CTest shows.
#include <gtest/gtest.h>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "plan/tail_split.hpp"

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

// The K ranges per tail tile that `config` gets for `p` on the test GPU (plan/tail_split.hpp,
// as the launcher decides it with a cluster slot per cluster_size SMs), so a tail-split test
// can check its shape really splits a last wave there.
inline int tail_splits_on_gpu(const GemmProblem& p, const GemmConfig& c) {
  std::string reason;
  const GpuInfo* gpu = sm90_gpu(&reason);
  if (gpu == nullptr) return 1;
  return plan::plan_tail_split(p, c, gpu->sm_count / (c.cluster_m * c.cluster_n)).splits;
}

}  // namespace autogemm::testing

// Skips the current test with the reason when there is no usable Hopper GPU.
#define AUTOGEMM_REQUIRE_GPU()                                                     \
  do {                                                                              \
    std::string agm_reason_;                                                        \
    if (::autogemm::testing::sm90_gpu(&agm_reason_) == nullptr)                     \
      GTEST_SKIP() << "GPU test skipped: " << agm_reason_;                          \
  } while (0)
