#pragma once
// Keeps the stream busy for a fixed time (bench/timing.cpp): launched ahead of a timed loop
// whose GPU work per iteration is shorter than the host's cost to enqueue it (warm-L2 timing of
// decode rows: ~17 us of GPU per iteration for our call and cuBLASLt's, against 9.0-10.1 us of
// host for ours and 15.6-18.0 for cuBLASLt's), so the host queues every iteration
// before the GPU reaches the first and no event pair measures the host's launch gaps. One
// thread reads the global nanosecond timer and sleeps between reads.
#include "bench/gpu_hold_params.cuh"
#include "ptx/common.cuh"

extern "C" __global__ void __launch_bounds__(32) autogemm_gpu_hold(const GpuHoldParams p) {
  if (threadIdx.x != 0) return;
  const autogemm::ptx::u64 start = autogemm::ptx::global_timer_ns();
  do {
    __nanosleep(1000);
  } while (autogemm::ptx::global_timer_ns() - start < p.nanoseconds);
}
