#pragma once
// Tile trace (AUTOGEMM_TRACE_TILES, src/trace/tile_trace.hpp): when the generated source defines
// AUTOGEMM_TILE_TRACE 1, consumer 0's first thread of every CTA records each work item it
// computed: start and end (%globaltimer, ns) and what the item was. The launcher reads the
// records back after the kernel; untraced kernels compile none of this.
#include "ptx/common.cuh"
#include "sm90/gemm_params.cuh"

#ifndef AUTOGEMM_TILE_TRACE
#define AUTOGEMM_TILE_TRACE 0
#endif

namespace autogemm::sm90 {

inline constexpr bool kTileTrace = AUTOGEMM_TILE_TRACE != 0;

// Record i of CTA b: tile_trace[(b * tile_trace_capacity + i) * kTileTraceWords + ...]
//   [0] start ns, [1] end ns, [2] m_tile << 32 | n_tile,
//   [3] sm id << 48 | partial << 40 | k_first << 20 | k_last   (k-blocks, < 2^20; partial: the
//       item stored no D: a split-K split or stream-K piece that was not the last to arrive)
//   [4] SM clock cycles (clock64) from start to the first k-block's data ready (full barrier)
//       << 32 | cycles from start to the main loop's end (last wgmma retired and promoted)
//   [5] cycles from start to end (the epilogue issued)
// The cycle counts split a work item into its phases; their ratio to the ns span is the SM
// clock while it ran.
// (kTileTraceWords is in gemm_params.cuh, which the host's reader includes.)

struct TileTraceRecorder {
  unsigned long long start = 0;
  long long start_cycles = 0, first_data_cycles = 0, main_loop_cycles = 0;
  bool waiting_for_data = false;
  int count = 0;

  __device__ __forceinline__ void begin(bool recorder) {
    if (!recorder) return;
    start = ptx::global_timer_ns();
    start_cycles = clock64();
    waiting_for_data = true;
  }
  // After a full-barrier wait: the first of the work item marks when its data was ready.
  __device__ __forceinline__ void data_ready(bool recorder) {
    if (!recorder || !waiting_for_data) return;
    first_data_cycles = clock64() - start_cycles;
    waiting_for_data = false;
  }
  __device__ __forceinline__ void main_loop_done(bool recorder) {
    if (recorder) main_loop_cycles = clock64() - start_cycles;
  }
  __device__ __forceinline__ void end(bool recorder, const GemmParams& params, int m_tile,
                                      int n_tile, int k_first, int k_last, bool partial) {
    if (!recorder || count >= params.tile_trace_capacity) return;
    unsigned long long* record =
        params.tile_trace +
        (static_cast<long long>(blockIdx.x) * params.tile_trace_capacity + count) * kTileTraceWords;
    record[0] = start;
    record[1] = ptx::global_timer_ns();
    record[2] = static_cast<unsigned long long>(m_tile) << 32 | static_cast<unsigned>(n_tile);
    record[3] = static_cast<unsigned long long>(ptx::sm_id()) << 48 |
                static_cast<unsigned long long>(partial) << 40 |
                static_cast<unsigned long long>(k_first) << 20 | static_cast<unsigned>(k_last);
    record[4] = static_cast<unsigned long long>(first_data_cycles) << 32 |
                static_cast<unsigned>(main_loop_cycles);
    record[5] = static_cast<unsigned long long>(clock64() - start_cycles);
    ++count;
  }
};

}  // namespace autogemm::sm90
