#pragma once
// Keeps the stream busy for a fixed time (bench/timing.cpp): launched ahead of a timed loop
// whose GPU work per iteration is shorter than the host's cost to enqueue it (warm-L2 timing of
// decode rows: ~9 us of host per call, notes.md section 22), so the host queues every iteration
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
