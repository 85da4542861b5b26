#pragma once
// What the copy probes share (copy_engine_probe.cu, copy_beside_gemm_probe.cu): a CUDA error
// check that exits, a kernel that holds every SM without touching memory, and event timing.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                            \
  do {                                                                                      \
    cudaError_t err_ = (x);                                                                 \
    if (err_ != cudaSuccess) {                                                              \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));             \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Holds its SM for `cycles` (one CTA an SM: all the shared memory), no L2 or DRAM traffic.
__global__ void hold_sms(long long cycles) {
  extern __shared__ unsigned char smem[];
  const long long c0 = clock64();
  while (clock64() - c0 < cycles) {}
  if (cycles < 0) smem[threadIdx.x] = 1;
}

// Milliseconds from event a to event b, once b has completed.
inline float ms_between(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  CHECK(cudaEventSynchronize(b));
  CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}
