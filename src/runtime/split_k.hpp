#pragma once
// Split-K's workspace (kernels/sm90/split_k_reduce.cuh sums the splits inside the GEMM kernel):
// the splits' fp32 slots, allocated on the stream for each call, and the arrival counters, one
// zeroed buffer per (device, stream) that every call leaves zero again.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

struct SplitKWorkspaceSize {
  int64_t counters = 0;         // one per (CTA tile of the cluster-padded grid, consumer)
  int64_t partial_floats = 0;   // split_k slots of (block_m / num_consumers) x block_n per counter
};

// What `config` (split_k > 1) needs for `problem`; the kernel indexes both with the same numbers.
SplitKWorkspaceSize split_k_workspace_size(const GemmProblem& problem, const GemmConfig& config);

struct SplitKWorkspace {
  float* partials = nullptr;     // the call's: free with release_split_k_workspace
  unsigned* counters = nullptr;  // the stream's: kept
};

// Slots from the stream-ordered pool and the stream's counters, grown (and zeroed, on the stream)
// when this call needs more. Growing is refused while the stream is being captured into a graph
// (the buffer must outlive the graph): make one split-K call of that size outside capture first.
SplitKWorkspace acquire_split_k_workspace(const GemmProblem& problem, const GemmConfig& config,
                                          cudaStream_t stream);
void release_split_k_workspace(const SplitKWorkspace& workspace, cudaStream_t stream);

}  // namespace autogemm::runtime
