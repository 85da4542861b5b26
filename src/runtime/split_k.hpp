#pragma once
// Split-K's workspace (kernels/sm90/split_k_reduce.cuh sums the splits inside the GEMM kernel):
// per (device, stream), kept for the process and grown on demand, so a call allocates nothing
// on the stream (a cudaMallocAsync/cudaFreeAsync pair per call cost 0.9 us of GPU time between
// the events on the H100):
//   counters and ready flags  zeroed when allocated; every call leaves them zero again
//   partial sums              the splits' fp32 slots, overwritten by each call
// Kernels on one stream run one after the other, so its calls can share them; calls on other
// streams may run at the same time and get their own.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

struct SplitKWorkspace {
  unsigned* counters = nullptr;
  unsigned* flags = nullptr;
  float* partials = nullptr;
};

// The stream's workspace, grown (on the stream, the counters zeroed) when this call needs more.
// Growing is refused while the stream is being captured into a graph (the buffers must outlive
// the graph): make one split-K call of that size on the stream before capturing.
SplitKWorkspace split_k_workspace(const SplitKWorkspaceLayout& layout, cudaStream_t stream);

}  // namespace autogemm::runtime
