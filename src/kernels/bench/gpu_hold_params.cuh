#pragma once
// Parameters of the hold kernel (gpu_hold.cuh), shared by the host (src/bench/timing.cpp) and
// NVRTC: plain C types only.
struct GpuHoldParams {
  unsigned long long nanoseconds;   // how long the one thread keeps the stream busy
};
