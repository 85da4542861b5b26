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

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

struct SplitKWorkspaceSize {
  int64_t counters = 0;         // one per (CTA tile of the cluster-padded grid, consumer)
  int64_t flags = 0;            // split_k per counter
  int64_t partial_floats = 0;   // split_k slots of (block_m / num_consumers) x block_n per counter
};

// What `config` (split_k > 1) needs for `problem`; the kernel indexes both with the same numbers.
SplitKWorkspaceSize split_k_workspace_size(const GemmProblem& problem, const GemmConfig& config);

struct SplitKWorkspace {
  unsigned* counters = nullptr;
  unsigned* flags = nullptr;
  float* partials = nullptr;
};

// The stream's workspace, grown (on the stream, the counters zeroed) when this call needs more.
// Growing is refused while the stream is being captured into a graph (the buffers must outlive
// the graph): make one split-K call of that size on the stream before capturing.
SplitKWorkspace split_k_workspace(const GemmProblem& problem, const GemmConfig& config,
                                  cudaStream_t stream);

}  // namespace autogemm::runtime
