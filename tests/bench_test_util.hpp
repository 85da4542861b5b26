#pragma once
// Helpers for the bench runners' GPU tests.
#include "autogemm/device.hpp"
#include "bench/bench_runner.hpp"

namespace autogemm::testing {

// Short timing runs on `gpu`: the tests check rows, not speed.
inline bench::BenchOptions bench_options_for(const GpuInfo& gpu, int warmup, int iters) {
  bench::BenchOptions options;
  options.device = gpu.ordinal;
  options.warmup = warmup;
  options.iters = iters;
  return options;
}

}  // namespace autogemm::testing
