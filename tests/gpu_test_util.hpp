#pragma once
// Helpers for tests that need a GPU. Without one they skip with the reason, which CTest shows.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

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
namespace autogemm::testing {

// Runs call(t, stream) on `threads` host threads at once, each with its own non-blocking stream
// (created and destroyed around it); returns what each thread threw ("" when nothing).
inline std::vector<std::string> run_on_own_streams(
    int threads, const std::function<void(int, cudaStream_t)>& call) {
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([t, &call, &errors] {
      cudaStream_t stream = nullptr;
      try {
        if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
          throw std::runtime_error("cudaStreamCreateWithFlags failed");
        call(t, stream);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
      if (stream != nullptr) (void)cudaStreamDestroy(stream);
    });
  for (auto& worker : workers) worker.join();
  return errors;
}

}  // namespace autogemm::testing

#define AUTOGEMM_REQUIRE_GPU()                                                     \
  do {                                                                              \
    std::string agm_reason_;                                                        \
    if (::autogemm::testing::sm90_gpu(&agm_reason_) == nullptr)                     \
      GTEST_SKIP() << "GPU test skipped: " << agm_reason_;                          \
  } while (0)
