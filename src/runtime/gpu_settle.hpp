#pragma once
// How long the GPU runs a timing's own calls before any is timed: after an idle gap (a compile,
// the host's set-up) its first launches run slow. bench/timing.cpp's warm-up and the autotuner's
// candidates (runtime/autotune.cpp) both wait it out; bench/timing.cpp has the measurement (H200:
// the first of two equal cuBLASLt seats 1.4-11% behind after 5 rounds alone, 0.93-1.05 with it).
#include <chrono>

namespace autogemm::runtime {

inline constexpr std::chrono::milliseconds kGpuSettle{25};

}  // namespace autogemm::runtime
