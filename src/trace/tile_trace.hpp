#pragma once
// Tile trace: AUTOGEMM_TRACE_TILES=<file> compiles every GEMM kernel with per-tile timing
// (sm90/tile_trace.cuh) and appends each call's records to <file> as CSV, one row per work item
// a CTA computed; scripts/tile_trace_summary.py summarises them (wave imbalance, tail). For
// understanding a schedule, not for timing it: a traced call synchronises its stream.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "autogemm/problem.hpp"

namespace autogemm::trace {

// The file named by AUTOGEMM_TRACE_TILES, read once; empty: tracing is off.
const std::string& tile_trace_path();

struct TileTraceBuffer {
  unsigned long long* records = nullptr;   // device, ctas x capacity records
  int capacity = 0;                        // records per CTA
  int64_t ctas = 0;
};

// Zeroed records for a grid of `ctas` CTAs in `clusters` clusters that share `work_items`.
TileTraceBuffer allocate_tile_trace(int64_t ctas, int64_t clusters, int64_t work_items,
                                    cudaStream_t stream);

// Waits for the kernel, appends its records to tile_trace_path() and frees the buffer.
// `kernel_text`: the kernel's configuration text (KernelLaunch::text).
void write_tile_trace(const TileTraceBuffer& buffer, const GemmProblem& problem,
                      const std::string& kernel_text, cudaStream_t stream);

}  // namespace autogemm::trace
